"""A runtime guard for learned load predictors: fall back to the naive forecast while the model does worse than it.

A learned model is chosen offline, on held-back windows of the traces it was trained on. On a trace it never saw it
can be worse than the naive last value, and AUTOSCALE would then size operators on bad forecasts for the whole run.
The guard checks the model where it is used: it keeps every forecast it issues, scores it once the arrivals it
predicted have been observed, and compares the model with the naive forecast made at the same moment on the same
history (the baseline every learned model must beat; `controllers.forecast.LastValuePredictor`). Over the last
`window` scored forecasts, if the model's mean absolute error exceeds naive's by more than `margin` (a fraction of
naive's), the guard answers with the naive forecast; it keeps scoring the model in the shadow, and answers with the
model again as soon as it is no longer worse. Nothing is decided before `min_scored` forecasts have been scored: a
single bad period is noise, not evidence.

Realisation. The history given to `forecast` is the retained sub-intervals of one series (end time, count, length),
oldest first. A forecast made when the history ended at T for a period P predicts the arrivals in (T, T+P]; it is
scored once the history reaches T+P. The realised arrivals are the counts of the sub-intervals in (T, T+P]: a
sub-interval (e - length, e] lying wholly inside counts fully, one straddling T or T+P counts in proportion to the
part of it inside (arrivals taken as uniform within one sub-interval). When sub-intervals line up with T and T+P (a
controller forecasting at the end of its iterations, a period that is a whole number of sub-intervals), this is
exactly the sum of the counts of the sub-intervals ending in (T, T+P]. A period is never scored on part of its
arrivals: when the next iteration ends a little before T+P (batch ends jitter), the forecast waits one more call. A
forecast whose period begins before the oldest retained sub-interval can no longer be scored (the history forgot
part of it): it is dropped and counted (`unscorable` in `state()`).

One guard watches one series: a controller forecasting several operators keeps one guard per operator (the wrapped
predictor may be shared; the guard's own state is per series). Pure and cheap: plain lists, no I/O, a scan of the
sub-intervals inside each pending period.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Sequence

from controllers.forecast import WARMUP, Forecast, LastValuePredictor

MODEL, NAIVE = "model", "naive"
# time comparisons on sub-interval ends (seconds as floats): a microsecond is well below any trigger interval
TIME_TOLERANCE_S = 1e-6


def realised_arrivals(times_s: Sequence[float], counts: Sequence[float], intervals_s: Sequence[float],
                      start_s: float, end_s: float) -> float | None:
    """Arrivals observed in (start_s, end_s], or None while the history does not cover that period (it does not
    reach end_s yet, or no longer reaches back to start_s). Sub-intervals straddling a bound count in proportion to
    their part inside it (see the module's doc)."""
    if not times_s:
        return None
    oldest_start = times_s[0] - max(0.0, intervals_s[0])
    if times_s[-1] < end_s - TIME_TOLERANCE_S or oldest_start > start_s + TIME_TOLERANCE_S:
        return None
    total = 0.0
    for i in range(len(times_s) - 1, -1, -1):  # newest first: stop at the first sub-interval ending by start_s
        end, length, count = times_s[i], intervals_s[i], counts[i]
        if end <= start_s + TIME_TOLERANCE_S:
            break
        if length <= 0:  # an instant: counted when it falls inside
            total += count if end <= end_s + TIME_TOLERANCE_S else 0.0
            continue
        begin = end - length
        overlap = min(end, end_s) - max(begin, start_s)
        if overlap > 0:
            total += count * min(1.0, overlap / length)
    return total


class GuardedPredictor:
    """A predictor (same interface) that answers with `model`, or with the naive forecast while the model is worse.

    window: how many of the latest scored forecasts the comparison covers; margin: how much worse than naive, as a
    fraction of naive's mean absolute error, the model may be before it is set aside (0.0: any worse); min_scored:
    scored forecasts needed before the guard may set the model aside. `state()` is what a decision record shows.
    """

    def __init__(self, model: Any, window: int = 5, margin: float = 0.0, min_scored: int = 3,
                 naive: Any = None, max_pending: int = 64):
        if window < 1 or min_scored < 1 or margin < 0 or max_pending < 1:
            raise ValueError(f"guard needs window >= 1, min_scored >= 1, margin >= 0 and max_pending >= 1, got "
                             f"window={window}, min_scored={min_scored}, margin={margin}, max_pending={max_pending}")
        self.model = model
        self.naive = naive or LastValuePredictor()
        self.window = window
        self.margin = margin
        self.min_scored = min_scored
        self.name = f"guarded({model.name})"
        # (made at T, period P, model's arrivals, naive's arrivals), oldest first; bounded so a series whose
        # forecasts never become scorable cannot grow without limit
        self._pending: deque[tuple[float, float, float, float]] = deque(maxlen=max_pending)
        self._errors: deque[tuple[float, float]] = deque(maxlen=window)  # (model's, naive's) absolute errors
        self.using = MODEL
        self.scored = 0
        self.switches = 0
        self.unscorable = 0
        self.switched = False  # whether the last forecast() changed `using`

    def forecast(self, times_s, counts, intervals_s, period_s, last_n) -> Forecast:
        times_s, counts, intervals_s = list(times_s), list(counts), list(intervals_s)
        self._score(times_s, counts, intervals_s)
        previous = self.using
        self.using = NAIVE if self._model_worse() else MODEL
        self.switched = self.using != previous
        if self.switched:
            self.switches += 1
        model = self.model.forecast(times_s, counts, intervals_s, period_s, last_n)
        naive = self.naive.forecast(times_s, counts, intervals_s, period_s, last_n)
        # a learned predictor's warm-up answers (the last value, before it has its history) are not the model's:
        # scoring them would blame the model for them, or credit it
        if times_s and model.predictor != WARMUP:
            self._pending.append((times_s[-1], float(period_s), float(model.arrivals), float(naive.arrivals)))
        return naive if self.using == NAIVE else model

    def _score(self, times_s, counts, intervals_s) -> None:
        """Score every pending forecast whose period the history now covers, oldest first."""
        still = deque(maxlen=self._pending.maxlen)
        for made, period, model, naive in self._pending:
            actual = realised_arrivals(times_s, counts, intervals_s, made, made + period)
            if actual is not None:
                self._errors.append((abs(model - actual), abs(naive - actual)))
                self.scored += 1
            elif times_s and times_s[0] - max(0.0, intervals_s[0]) > made + TIME_TOLERANCE_S:
                self.unscorable += 1  # the history no longer reaches back to the period's start
            else:
                still.append((made, period, model, naive))
        self._pending = still

    def maes(self) -> tuple[float | None, float | None]:
        """The model's and naive's mean absolute errors over the window (None before any forecast is scored)."""
        if not self._errors:
            return None, None
        n = len(self._errors)
        return sum(m for m, _ in self._errors) / n, sum(v for _, v in self._errors) / n

    def _model_worse(self) -> bool:
        model_mae, naive_mae = self.maes()
        if self.scored < self.min_scored or model_mae is None:
            return False
        return model_mae > naive_mae * (1.0 + self.margin)

    def state(self) -> dict[str, Any]:
        """What a decision record shows: which forecast is used, both errors over the window, how many forecasts
        were scored, how often the guard switched, how many could not be scored."""
        model_mae, naive_mae = self.maes()
        return {"using": self.using, "model_mae": model_mae, "naive_mae": naive_mae, "scored": self.scored,
                "switches": self.switches, "unscorable": self.unscorable}

    def explain(self, unit: str = "forecasts") -> str:
        """Why the naive forecast is used, or why the model is used again just after a fallback; '' otherwise."""
        model_mae, naive_mae = self.maes()
        if model_mae is None or (self.using == MODEL and not self.switched):
            return ""
        by = f" by more than {self.margin:.0%}" if self.margin else ""
        span = f"over the last {len(self._errors)} {unit} (MAE {model_mae:.0f} vs {naive_mae:.0f})"
        if self.using == NAIVE:
            return f"model worse than naive{by} {span}: naive used"
        return f"model no longer worse than naive{by} {span}: model used again"
