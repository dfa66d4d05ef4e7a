"""The champion replayed through the runtime guard, as a controller runs it (analysis.predictors.guard_replay)."""
import numpy as np
import pytest

from analysis.predictors.dataset import Series
from analysis.predictors import guard_replay
from analysis.predictors.guard_replay import contiguous_runs, guarded_predictions
from analysis.predictors.windows import last_value, make_windows
from controllers.forecast import Horizon

HORIZON = Horizon(step_s=2.0, steps=5, lags=10)


def windows(rates):
    return make_windows(Series("s", "g", np.asarray(rates, dtype=float)), HORIZON)


def test_windows_split_where_a_masked_gap_breaks_the_series():
    rng = np.random.default_rng(1)
    rates = rng.poisson(50, 200).astype(float)
    rates[100:110] = np.nan  # a masked outage: no window crosses it
    w = windows(rates)
    runs = contiguous_runs(w)
    assert len(runs) == 2 and runs[0][0] == 0 and runs[-1][1] == len(w)
    assert runs[0][1] == 100 - HORIZON.lags - HORIZON.steps + 1  # every window of the first segment
    # constant stretches on both sides of the gap: the histories alone would join them, the segments do not
    flat = np.full(200, 30.0)
    flat[100:110] = np.nan
    assert len(contiguous_runs(windows(flat))) == 2


def test_a_model_worse_than_naive_is_set_aside_after_its_first_realised_iterations():
    rng = np.random.default_rng(2)
    w = windows(rng.poisson(50, 4000).astype(float))
    wild = last_value(w) * 3.0  # three times the last value: far worse than naive
    replayed, naive_share = guarded_predictions(wild, w, HORIZON)
    actual = w.y * w.scale
    err = lambda p: np.abs(p * w.scale - actual).mean()  # noqa: E731
    # per phase, min_scored (3) iterations are needed before the guard acts: the model's answers stand until then
    assert naive_share > 0.9
    assert err(replayed) < 1.1 * err(last_value(w)) < err(wild)
    untouched = [t for t in range(len(w)) if replayed[t] == pytest.approx(wild[t])]
    assert 0 < len(untouched) <= HORIZON.steps * 4


@pytest.mark.parametrize("horizon", [HORIZON, Horizon(step_s=2.0, steps=8, lags=5)], ids=["steps<lags", "steps>lags"])
def test_the_guard_scores_each_forecast_on_exactly_the_period_it_predicted(horizon, monkeypatch):
    """A model that knows the future (each window's own target) must show a zero error to the guard: a replay that
    scored a forecast one sub-interval off, or could not score it at all (a history too short to reach back to the
    forecast), would show otherwise."""
    states = []

    class Recording(guard_replay.GuardedPredictor):
        def forecast(self, *args):
            fc = super().forecast(*args)
            states.append(self.state())
            return fc

    monkeypatch.setattr(guard_replay, "GuardedPredictor", Recording)
    rng = np.random.default_rng(3)
    w = make_windows(Series("s", "g", rng.poisson(50, 400).astype(float)), horizon)
    truth = w.y  # the future itself: never worse than naive
    replayed, naive_share = guarded_predictions(truth, w, horizon)
    assert naive_share == 0.0 and np.allclose(replayed, truth)
    scored = [s for s in states if s["scored"]]
    per_phase = len(w) // horizon.steps
    assert len(scored) >= horizon.steps * (per_phase - 2) and not any(s["unscorable"] for s in states)
    assert all(s["model_mae"] == pytest.approx(0.0, abs=1e-6) and s["naive_mae"] > 0 for s in scored)
