"""The champion as a controller runs it: its held-out forecasts replayed through the runtime guard
(controllers.forecast_guard.GuardedPredictor, with the controllers' default guard options), which answers with the
naive last value while the model has lately done worse than it.

The leave-one-trace-out table scores the model on every window. A controller forecasts once per iteration (every
`steps` sub-intervals) and its guard sees each forecast realised one iteration later. The replay does exactly that on
a held-out series, once for each of the `steps` phases of the iteration grid, so every window is forecast once, by a
guard that only knew what had been realised by then. It uses the guard class itself, not a copy of its rule: what is
scored is what runs.
"""
from __future__ import annotations

import numpy as np

from analysis.predictors.windows import Windows
from controllers.common_params import LEARNED_PREDICTOR_PARAMS
from controllers.forecast import Forecast, Horizon
from controllers.forecast_guard import GuardedPredictor


class _Replayed:
    """A predictor answering with forecasts already made (the held-out model's), one per call, in order."""

    name = "replayed"

    def __init__(self):
        self.next_rate = 0.0

    def forecast(self, times_s, counts, intervals_s, period_s, last_n) -> Forecast:
        return Forecast(self.next_rate * period_s, 0.0, self.name)


def contiguous_runs(w: Windows) -> list[tuple[int, int]]:
    """[start, stop) index ranges of windows that follow each other one sub-interval apart, within one segment of
    one series (`w.segment`): each window's history is the previous one's shifted by one. A new series or a masked
    gap starts a new run, where a controller would start with a fresh guard."""
    if len(w) == 0:
        return []
    follows = np.all(w.history[1:, :-1] == w.history[:-1, 1:], axis=1)
    if w.segment is not None:
        follows &= w.segment[1:] == w.segment[:-1]
    starts = [0, *(np.flatnonzero(~follows) + 1).tolist()]
    return list(zip(starts, [*starts[1:], len(w)]))


def guarded_predictions(model_ratio: np.ndarray, w: Windows, horizon: Horizon,
                        window: int | None = None, margin: float | None = None,
                        min_scored: int | None = None) -> tuple[np.ndarray, float]:
    """Scale-free forecasts of the guarded model for every window of `w` (in time order), and the share of the
    non-idle windows answered naively (on an idle window the model's answer is the last value anyway).
    `model_ratio` are the model's own scale-free forecasts on the same windows."""
    defaults = {k: LEARNED_PREDICTOR_PARAMS[f"guard_{k}"].default for k in ("window", "margin", "min_scored")}
    options = {"window": window or defaults["window"], "margin": defaults["margin"] if margin is None else margin,
               "min_scored": min_scored or defaults["min_scored"]}
    steps, lags, step_s = horizon.steps, horizon.lags, horizon.step_s
    period_s = steps * step_s
    out = np.empty(len(w))
    naive_used = 0
    for start, stop in contiguous_runs(w):
        # the run's rates: the first window's history, then each later window's newest sub-interval; sub-interval
        # i ends at (i + 1) * step_s, and the window at position j has rates[j: j + lags] as its history
        rates = np.concatenate([w.history[start], w.history[start + 1:stop, -1]])
        for phase in range(steps):
            replayed = _Replayed()
            guard = GuardedPredictor(replayed, **options)
            for t in range(start + phase, stop, steps):
                j = t - start
                # history back to the start of the forecast made one iteration earlier (a controller keeps more),
                # so it can be scored whatever steps and lags are
                first = max(0, j - steps)
                history = rates[first:j + lags]
                times = [(i + 1) * step_s for i in range(first, j + lags)]
                replayed.next_rate = max(0.0, model_ratio[t] * w.scale[t])  # as LearnedPredictor clips it
                f = guard.forecast(times, (history * step_s).tolist(), [step_s] * len(times), period_s, steps)
                out[t] = f.arrivals / period_s / w.scale[t]
                naive_used += guard.using != "model" and not w.idle[t]
    return out, naive_used / max(1, int((~w.idle).sum()))
