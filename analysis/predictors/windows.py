"""Supervised windows of a series and the baselines every learned model must beat, all in one horizon's terms.

A window at sub-interval t: history = the `lags` rates before t, target = the mean rate of the next `steps`
sub-intervals, both inside one unmasked segment. Inputs are `controllers.forecast.features` (the very function the
controller calls), so training and inference cannot drift apart. Idle windows (fewer than `idle_events` events of
history) are flagged: training leaves them out, the learned predictor answers them with the last value, and the
scores are computed on the others (on idle windows every learned model is the naive one by construction).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.predictors.dataset import Series
from controllers.forecast import Horizon, feature_names, features


@dataclass
class Windows:
    X: pd.DataFrame  # scale-free features
    y: np.ndarray  # target mean rate / scale
    scale: np.ndarray
    history: np.ndarray  # raw rates, shape (n, lags)
    seasonal: np.ndarray  # mean rate of the same span one period earlier / scale (NaN: no period or masked)
    idle: np.ndarray  # bool
    # which contiguous stretch (one unmasked segment of one series) each window comes from; None: not known
    segment: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.y)

    def take(self, mask: np.ndarray) -> "Windows":
        return Windows(self.X[mask].reset_index(drop=True), self.y[mask], self.scale[mask], self.history[mask],
                       self.seasonal[mask], self.idle[mask], None if self.segment is None else self.segment[mask])

    @staticmethod
    def concat(parts: list["Windows"]) -> "Windows":
        segments = None
        if all(p.segment is not None for p in parts):  # renumbered so no two parts share a stretch
            offsets = np.cumsum([0] + [int(p.segment.max()) + 1 if len(p) else 0 for p in parts[:-1]])
            segments = np.concatenate([p.segment + o for p, o in zip(parts, offsets)])
        return Windows(pd.concat([p.X for p in parts], ignore_index=True), *(
            np.concatenate([getattr(p, f) for p in parts]) for f in ("y", "scale", "history", "seasonal", "idle")),
            segments)


def make_windows(series: Series, horizon: Horizon) -> Windows:
    lags, steps = horizon.lags, horizon.steps
    rates = series.rates
    rows, ys, scales, hist, seasonal, idle, segment = [], [], [], [], [], [], []
    for number, (start, stop) in enumerate(series.segments()):
        for t in range(start + lags, stop - steps + 1):
            segment.append(number)
            past = rates[t - lags:t]
            row, scale = features(past, lags, horizon.idle_rate)
            rows.append(row)
            scales.append(scale)
            ys.append(rates[t:t + steps].mean() / scale)
            hist.append(past)
            idle.append(past.sum() * horizon.step_s < horizon.idle_events)
            p = series.period_steps
            if p and t - p >= 0 and np.isfinite(rates[t - p:t - p + steps]).all():
                seasonal.append(rates[t - p:t - p + steps].mean() / scale)
            else:
                seasonal.append(np.nan)
    return Windows(pd.DataFrame(rows, columns=feature_names(lags)), np.array(ys), np.array(scales),
                   np.array(hist).reshape(-1, lags), np.array(seasonal), np.array(idle, dtype=bool),
                   np.array(segment, dtype=int))


# ---------------------------------------------------------------- baselines (scale-free answers, like the models)

def last_value(w: Windows) -> np.ndarray:
    return w.history[:, -1] / w.scale


def as_deployed(model_ratio: np.ndarray, w: Windows) -> np.ndarray:
    """A model's scale-free answers as controllers.forecast.LearnedPredictor gives them: the last value on idle
    windows (the model never saw one in training), the model's own elsewhere."""
    return np.where(w.idle, last_value(w), model_ratio)


def seasonal_naive(w: Windows) -> np.ndarray:
    """The same span one period earlier; where there is none (no period, or it was masked), the last value."""
    return np.where(np.isfinite(w.seasonal), w.seasonal, last_value(w))


def paper_ols(w: Windows, steps: int, reading: str = "extrapolated") -> np.ndarray:
    """AUTOSCALE eq. 2 (EGC 2017, §3.1, p. 61) on the last iteration (`steps` sub-intervals), vectorised; the same
    arithmetic as controllers.forecast.PaperPredictor (checked in tests). Literal reading: the fitted line summed at
    the fitted times, i.e. the last iteration's mean; extrapolated: the line one iteration further on."""
    last = w.history[:, -steps:]
    mean = last.mean(axis=1)
    if reading == "literal" or steps < 2:
        return mean / w.scale
    k = np.arange(steps) - (steps - 1) / 2
    slope = (last * k).sum(axis=1) / (k ** 2).sum()  # per sub-interval
    return np.maximum(0.0, mean + slope * steps) / w.scale


def baselines(w: Windows, horizon: Horizon, with_seasonal: bool) -> dict[str, np.ndarray]:
    out = {"last-value": last_value(w), "paper-ols-extrapolated": paper_ols(w, horizon.steps),
           "paper-ols-literal": paper_ols(w, horizon.steps, "literal")}
    if with_seasonal:
        out["seasonal-naive"] = seasonal_naive(w)
    return out
