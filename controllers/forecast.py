"""Load predictors for the preventive controller: recent arrivals in, expected arrivals over the next period out.

Three kinds share one interface, `forecast(times_s, counts, intervals_s, period_s, last_n)`: the retained history
of one operator's sub-intervals (end time, arrivals, length), oldest first, of which the last `last_n` make up the
iteration that just ended:
- `PaperPredictor`, AUTOSCALE's own (§3.1, eq. 2, p. 61): ordinary least squares of the per-sub-interval counts
  on time, fitted on the last iteration only. Read literally, eq. 2 sums the fitted line at the timestamps it was
  fitted on, which for OLS with an intercept equals the observed sum (the regression then only contributes its slope,
  the trend); the evident intent is to extrapolate to the next iteration's timestamps. Both readings are options.
- `LastValuePredictor`, the naive baseline every learned model must beat: the last sub-interval's rate persists.
- `LearnedPredictor`, any regression model fitted offline on `features()`: it is given as a plain callable so this
  module (and the controllers) never import MLflow or scikit-learn; `jobs.predictors` wraps a registered model.

Learned models see scale-free features (rates divided by the window's mean rate) and predict the next period's mean
rate as a multiple of that scale. The same model then serves a trace of 50 events/s and an operator of 7,000
records/s, and one trained on traces can steer a Spark run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

# The feature layout shared by training (analysis.predictors) and inference (LearnedPredictor): change it and every
# registered model's input schema no longer matches, which loading detects and reports.
FEATURE_LAGS = 10
# A window of history holding fewer events than this is idle: its rates are counting noise, not a level. The
# project's choice (20 events: a Poisson count's relative noise is then about 22 %); training leaves idle windows out
# and the learned predictor answers them with the last value.
IDLE_WINDOW_EVENTS = 20.0
# the predictor name of a learned predictor's answer while its history is shorter than its lags (the last value)
WARMUP = "warm-up (last value)"
# The conservative variant's local spread (`local_spread`): the mean absolute change between the last SPREAD_LAGS + 1
# scale-free rates, never below SPREAD_FLOOR (a flat window still gets a margin). The project's choice, compared on
# the leave-one-trace-out split with a 10- and a 30-lag standard deviation, a 5-lag change and counting noise
# (studies/conformal_spread.py, docs/predictors-goals.md).
SPREAD_LAGS = 10
SPREAD_FLOOR = 0.05


@dataclass(frozen=True)
class Horizon:
    """What a load predictor predicts, shared by training and the controller: from the last `lags` sub-intervals of
    `step_s` seconds (one micro-batch each), the mean rate over the next `steps` sub-intervals (one AUTOSCALE
    iteration, Δ = steps × step_s). A model records it; a run whose trigger or iteration differs refuses the model,
    since a model trained for 10 s ahead at 2 s resolution says nothing reliable about 60 s ahead at 1 s."""
    step_s: float = 2.0
    steps: int = 5
    lags: int = FEATURE_LAGS
    idle_events: float = IDLE_WINDOW_EVENTS

    def __post_init__(self):
        if not (self.step_s > 0 and math.isfinite(self.step_s)):
            raise ValueError(f"horizon step_s must be > 0, got {self.step_s}")
        if self.steps < 1 or self.lags < 5:
            raise ValueError(f"horizon needs steps >= 1 and lags >= 5, got steps={self.steps}, lags={self.lags}")

    @property
    def period_s(self) -> float:
        return self.step_s * self.steps

    @property
    def idle_rate(self) -> float:
        """The mean rate (events/s) below which a window of history is idle."""
        return self.idle_events / (self.lags * self.step_s)

    def metadata(self) -> dict[str, float | int]:
        return {"step_s": self.step_s, "horizon": self.steps, "feature_lags": self.lags,
                "idle_events": self.idle_events}

    @classmethod
    def from_metadata(cls, meta: Mapping[str, object], where: str) -> "Horizon":
        missing = [k for k in ("step_s", "horizon", "feature_lags") if k not in meta]
        if missing:
            raise ValueError(f"{where}: no {', '.join(missing)} recorded with the model (trained before the horizon "
                             f"was recorded); retrain it")
        return cls(float(meta["step_s"]), int(meta["horizon"]), int(meta["feature_lags"]),
                   float(meta.get("idle_events", IDLE_WINDOW_EVENTS)))

    def mismatch(self, other: "Horizon") -> str | None:
        """Why a model trained for `self` cannot serve a run that needs `other` (None: it can). The history length
        (lags) is the model's own need, not the run's: the controller keeps enough for any model."""
        if abs(self.step_s - other.step_s) > 1e-9 or self.steps != other.steps:
            return (f"trained to predict {self.steps} sub-intervals of {self.step_s:g} s ahead, the run needs "
                    f"{other.steps} of {other.step_s:g} s (trigger and iteration)")
        return None


def feature_names(lags: int = FEATURE_LAGS) -> list[str]:
    return ([f"lag_{k}" for k in range(1, lags + 1)]
            + ["diff_1", "diff_3", "mean_3", "mean_5", "mean_10", "median_5", "min_5", "max_5", "std", "slope"])


def local_spread(row: Mapping[str, float]) -> float:
    """How much the recent scale-free rates move, from a feature row: the conservative variant's margin is its
    calibrated offset times this (locally weighted split-conformal, Lei et al., JASA 2018, sec. 5.2), so a calm
    window gets a small margin and a bursty one a large one, in the units of the window's own level."""
    xs = [row[f"lag_{k}"] for k in range(1, SPREAD_LAGS + 2) if f"lag_{k}" in row]
    if len(xs) < 2:
        return 1.0
    return max(SPREAD_FLOOR, sum(abs(a - b) for a, b in zip(xs, xs[1:])) / (len(xs) - 1))


def features(rates: Sequence[float], lags: int = FEATURE_LAGS, floor_rate: float = 0.0
             ) -> tuple[dict[str, float], float]:
    """The scale-free feature row for the last `lags` rates (oldest first), and the scale they were divided by.

    The scale is the window's mean rate, but never below `floor_rate`: on a near-idle window the features then stay
    small instead of being blown up to "a level of 1", so a model cannot learn that a level is followed by a
    fraction of itself (what an unfloored scale taught it on idle stretches). No absolute level enters the features:
    the same model serves a trace of 50 events/s and an operator of 7,000 records/s."""
    if len(rates) < lags:
        raise ValueError(f"need {lags} sub-intervals of history, got {len(rates)}")
    window = [float(r) for r in rates[-lags:]]
    scale = max(sum(window) / lags, floor_rate, 1e-9)
    x = [r / scale for r in window]
    mean = sum(x) / lags
    std = (sum((v - mean) ** 2 for v in x) / lags) ** 0.5
    centre = (lags - 1) / 2
    slope = sum((k - centre) * (v - mean) for k, v in enumerate(x)) / sum((k - centre) ** 2 for k in range(lags))
    row = {f"lag_{k}": x[-k] for k in range(1, lags + 1)}
    # level estimates at several smoothing lengths: a sum over lags is what trees approximate worst, and a noisy
    # sub-interval's best forecast is mostly a smoothed level
    last5 = sorted(x[-5:])
    row.update(diff_1=x[-1] - x[-2], diff_3=x[-1] - x[-4], mean_3=sum(x[-3:]) / 3, mean_5=sum(x[-5:]) / 5,
               mean_10=sum(x[-10:]) / len(x[-10:]), median_5=last5[2], min_5=last5[0], max_5=last5[-1], std=std,
               slope=slope)
    return row, scale


@dataclass(frozen=True)
class Forecast:
    arrivals: float  # expected arrivals over the next period (records), never negative
    trend: float  # > 0: increasing; <= 0: decreasing or constant (the sign is what AUTOSCALE's Table 1 reads)
    predictor: str


def ols(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Intercept and slope of the least-squares line (slope 0 when the xs do not vary)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


class PaperPredictor:
    """AUTOSCALE eq. 2: an affine fit of counts on time over the last iteration, summed over the next one."""

    def __init__(self, reading: str = "extrapolated"):
        if reading not in ("extrapolated", "literal"):
            raise ValueError(f"eq. 2 reading must be 'extrapolated' or 'literal', got {reading!r}")
        self.reading = reading
        self.name = f"paper-ols-{reading}"

    def forecast(self, times_s: Sequence[float], counts: Sequence[float], intervals_s: Sequence[float],
                 period_s: float, last_n: int) -> Forecast:
        times_s, counts = list(times_s)[-last_n:], list(counts)[-last_n:]
        a, b = ols(times_s, counts)
        shift = period_s if self.reading == "extrapolated" else 0.0
        estimate = sum(a + b * (t + shift) for t in times_s)
        return Forecast(max(0.0, estimate), b, self.name)


class LastValuePredictor:
    """The last sub-interval's rate, held for the whole next period; its trend is the last change of rate."""

    name = "last-value"

    def forecast(self, times_s, counts, intervals_s, period_s, last_n) -> Forecast:
        rates = [c / i for c, i in zip(counts, intervals_s) if i > 0]
        if not rates:
            return Forecast(0.0, 0.0, self.name)
        trend = rates[-1] - rates[-2] if len(rates) > 1 else 0.0
        return Forecast(rates[-1] * period_s, trend, self.name)


class LearnedPredictor:
    """A regression model over `features()`; `predict` maps feature rows to next-period mean rates / scale.

    It needs `horizon.lags` sub-intervals of history (60 s with the project's dataset); until the series is that
    long it answers with the last value, labelled `WARMUP` so that a runtime guard does not score these answers as
    the model's. The last value, not the paper's OLS: over the traces the models are evaluated on, the paper's
    extrapolated line errs 1.46x as much as the last value (docs/predictors.md), and in a Spark run it was the warm-up
    answers' errors, blamed on the model, that made the guard set the model aside for most of the run. An idle
    window (fewer than `horizon.idle_events` events) is answered with the last value under the model's name: the
    model was never trained on idle windows, and that answer is the model's as deployed. `offset` is added to the
    model's scale-free answer: the conservative variant's calibrated margin (split-conformal, see
    analysis.predictors), times the window's `local_spread` when `offset_spread` (locally weighted).
    """

    def __init__(self, predict: Callable[[list[Mapping[str, float]]], list[float]], name: str,
                 horizon: Horizon | None = None, offset: float = 0.0, offset_spread: bool = False):
        self._predict = predict
        self.name = name
        self.horizon = horizon or Horizon()
        self.lags = self.horizon.lags
        self.offset = offset
        self.offset_spread = offset_spread
        self._naive = LastValuePredictor()

    def forecast(self, times_s, counts, intervals_s, period_s, last_n) -> Forecast:
        rates = [c / i for c, i in zip(counts, intervals_s) if i > 0]
        if len(rates) < self.lags:
            naive = self._naive.forecast(times_s, counts, intervals_s, period_s, last_n)
            return Forecast(naive.arrivals, naive.trend, WARMUP)
        window_events = sum(list(counts)[-self.lags:])
        if window_events < self.horizon.idle_events:
            naive = self._naive.forecast(times_s, counts, intervals_s, period_s, last_n)
            return Forecast(naive.arrivals, naive.trend, self.name)
        row, scale = features(rates, self.lags, self.horizon.idle_rate)
        margin = self.offset * (local_spread(row) if self.offset_spread else 1.0)
        ratio = float(self._predict([row])[0]) + margin
        rate = max(0.0, ratio * scale)
        recent = sum(list(counts)[-last_n:]) / max(1e-9, sum(list(intervals_s)[-last_n:]))
        return Forecast(rate * period_s, rate - recent, self.name)
