"""The runtime guard for learned load predictors (controllers.forecast_guard): realised arrivals computed exactly on a
hand-made history, a bad model set aside after exactly `min_scored` scored forecasts, a good one kept, a recovered
one used again, the margin, forecasts the history can no longer score, and the guard inside AUTOSCALE (its state in
the decision's details, a fallback in its reason; never on the paper's or the naive predictor)."""
import pytest

from controllers import ConfigError, OperatorMetrics, RunContext, Snapshot, build_controller, describe
from controllers.forecast import WARMUP, Forecast, Horizon, LastValuePredictor, LearnedPredictor, PaperPredictor
from controllers.forecast_guard import GuardedPredictor, realised_arrivals

STEP, PERIOD = 2.0, 10.0  # sub-intervals of 2 s, forecasts for 10 s (five sub-intervals)


def ramp_count(end_s):
    """Arrivals in the 2-s sub-interval ending at end_s under the rate 100 + 10 t events/s (exact integral)."""
    start = end_s - STEP
    return 100 * STEP + 5 * (end_s ** 2 - start ** 2)


def history(until_s, count=ramp_count):
    times = [STEP * k for k in range(1, int(round(until_s / STEP)) + 1)]
    return times, [count(t) for t in times], [STEP] * len(times)


def actual(made_s, count=ramp_count):
    return sum(count(made_s + STEP * k) for k in range(1, 6))


class Oracle:
    """Knows the future: the exact arrivals of the next period, times `factor`, plus `offset`; `good_from_s` makes
    it exact from that time on (a model that recovers)."""

    def __init__(self, factor=1.0, offset=0.0, good_from_s=float("inf"), name="oracle"):
        self.factor, self.offset, self.good_from_s, self.name = factor, offset, good_from_s, name
        self.calls = 0

    def forecast(self, times_s, counts, intervals_s, period_s, last_n):
        self.calls += 1
        exact = actual(times_s[-1])
        value = exact if times_s[-1] >= self.good_from_s else exact * self.factor + self.offset
        return Forecast(value, 1.0, self.name)


def naive_at(made_s):
    return LastValuePredictor().forecast(*history(made_s), PERIOD, 5).arrivals


def run(guard, iterations):
    """Call the guard at the end of each 10-s iteration with the whole history; (forecast, state) per call."""
    out = []
    for k in range(1, iterations + 1):
        fc = guard.forecast(*history(PERIOD * k), PERIOD, 5)
        out.append((fc, guard.state()))
    return out


def test_realised_arrivals_on_a_hand_made_history():
    # sub-intervals (0,1] 10, (1,3] 20, (3,4] 5, (4,7] 30, (7,8] 7: irregular lengths
    times, counts, intervals = [1.0, 3.0, 4.0, 7.0, 8.0], [10, 20, 5, 30, 7], [1.0, 2.0, 1.0, 3.0, 1.0]
    assert realised_arrivals(times, counts, intervals, 3.0, 8.0) == 42  # aligned: the counts ending in (3, 8]
    assert realised_arrivals(times, counts, intervals, 0.0, 8.0) == 72  # the whole history
    # straddling both bounds: half of (1,3] and half of (7,8] are inside (2, 7.5]
    assert realised_arrivals(times, counts, intervals, 2.0, 7.5) == pytest.approx(10 + 5 + 30 + 3.5)
    assert realised_arrivals(times, counts, intervals, 4.0, 5.0) == pytest.approx(10)  # a third of (4,7]
    assert realised_arrivals(times, counts, intervals, 3.0, 9.0) is None  # not observed to 9 yet
    assert realised_arrivals(times, counts, intervals, -1.0, 4.0) is None  # history no longer reaches back to -1
    assert realised_arrivals([], [], [], 0.0, 1.0) is None


def test_scoring_through_the_guard_is_exact_on_a_hand_made_history():
    class Fixed:
        name = "fixed"

        def forecast(self, *args):
            return Forecast(100.0, 0.0, self.name)

    guard = GuardedPredictor(Fixed(), window=5, min_scored=1)
    times, counts, intervals = [1.0, 3.0, 4.0, 7.0, 8.0], [10, 20, 5, 30, 7], [1.0, 2.0, 1.0, 3.0, 1.0]
    guard.forecast(times[:3], counts[:3], intervals[:3], 4.0, 1)  # at 4 for (4, 8]: naive 5/s x 4 s = 20
    assert guard.state()["scored"] == 0
    fc = guard.forecast(times, counts, intervals, 4.0, 1)  # (4, 8] realised: 30 + 7 = 37
    state = guard.state()
    assert state["scored"] == 1 and state["model_mae"] == pytest.approx(63) and state["naive_mae"] == pytest.approx(17)
    # scored before answering: with min_scored 1 this very call answers naive (at 8: 7 events/s x 4 s)
    assert state["using"] == "naive" and fc.arrivals == pytest.approx(28) and fc.predictor == "last-value"
    # the forecast just made (at 8 for (8, 12]) is pending: a history to 11 does not score it
    guard.forecast(times + [11.0], counts + [30], intervals + [3.0], 4.0, 1)
    assert guard.state()["scored"] == 1


def test_a_learned_predictors_warm_up_answers_are_not_scored_as_the_models():
    """Until its history holds `lags` sub-intervals a learned predictor answers with the last value (WARMUP); on a
    steep ramp those answers err, and a guard that scored them would set the model aside for what it never said."""
    exact_ratio = []

    def predict(rows):  # a model that is exact on the ramp (its answer is the next period's mean rate / scale)
        return exact_ratio[:len(rows)]

    learned = LearnedPredictor(predict, "exact", horizon=Horizon(STEP, 5, lags=15))
    guard = GuardedPredictor(learned, window=5, min_scored=1)
    for k in range(1, 9):  # at 10 s ... 80 s: the calls at 10 and 20 s have fewer than 15 sub-intervals
        times, counts, intervals = history(PERIOD * k)
        rates = [c / STEP for c in counts]
        scale = max(sum(rates[-15:]) / 15, 1e-9)
        exact_ratio[:] = [actual(PERIOD * k) / PERIOD / scale]
        fc = guard.forecast(times, counts, intervals, PERIOD, 5)
        assert (fc.predictor == WARMUP) == (k <= 2)
    state = guard.state()
    assert state["using"] == "model" and state["switches"] == 0
    assert state["scored"] == 8 - 2 - 1  # not the two warm-up forecasts, nor the one still pending
    assert state["model_mae"] == pytest.approx(0.0, abs=1e-6) and state["naive_mae"] > 0


def test_a_model_twice_the_truth_is_set_aside_after_min_scored_forecasts():
    model = Oracle(factor=2.0, name="double")
    guard = GuardedPredictor(model, window=5, min_scored=3)
    assert guard.name == "guarded(double)"
    calls = run(guard, 6)
    # the forecast made at call k is scored at call k+1: three are scored at call 4, which answers naive
    assert [s["scored"] for _, s in calls] == [0, 1, 2, 3, 4, 5]
    assert [s["using"] for _, s in calls] == ["model"] * 3 + ["naive"] * 3
    for k, (fc, _) in enumerate(calls, start=1):
        expected = 2 * actual(PERIOD * k) if k <= 3 else naive_at(PERIOD * k)
        assert fc.arrivals == pytest.approx(expected)
    assert calls[3][0].predictor == "last-value"
    state = calls[-1][1]
    assert state["switches"] == 1 and state["model_mae"] > state["naive_mae"] > 0
    # the errors are those of the last window: the model's is the truth itself (2x - x), naive's the ramp's lag
    assert state["model_mae"] == pytest.approx(sum(actual(PERIOD * k) for k in range(1, 6)) / 5)
    assert state["naive_mae"] == pytest.approx(sum(abs(naive_at(PERIOD * k) - actual(PERIOD * k))
                                                   for k in range(1, 6)) / 5)
    assert model.calls == 6  # the model keeps being asked (and scored) while naive is used
    assert "model worse than naive over the last 5 forecasts" in guard.explain() and "naive used" in guard.explain()


def test_a_good_model_keeps_being_used():
    guard = GuardedPredictor(Oracle(), window=5, min_scored=3)
    calls = run(guard, 8)
    assert all(s["using"] == "model" for _, s in calls)
    assert all(fc.arrivals == pytest.approx(actual(PERIOD * k)) for k, (fc, _) in enumerate(calls, start=1))
    state = calls[-1][1]
    assert state["scored"] == 7 and state["switches"] == 0
    assert state["model_mae"] == pytest.approx(0) and state["naive_mae"] > 0  # naive lags the ramp
    assert guard.explain() == ""


def test_a_model_that_becomes_good_again_is_used_again():
    # twice the truth until 40 s, exact from then on; a window of 3
    guard = GuardedPredictor(Oracle(factor=2.0, good_from_s=40.0), window=3, min_scored=2)
    calls = run(guard, 9)
    using = [s["using"] for _, s in calls]
    # scored: the 2x forecasts made at 10, 20, 30; exact ones from 40. Call 3 (two bad scored) -> naive; the window
    # (3) holds a bad one until the forecast made at 30 leaves it, at call 7 (scored 40, 50, 60)
    assert using == ["model", "model", "naive", "naive", "naive", "naive", "model", "model", "model"]
    assert calls[-1][1]["switches"] == 2
    assert calls[6][0].arrivals == pytest.approx(actual(70.0)) and calls[6][0].predictor == "oracle"
    guard_after_switch_back = GuardedPredictor(Oracle(factor=2.0, good_from_s=40.0), window=3, min_scored=2)
    run(guard_after_switch_back, 7)
    assert "model no longer worse than naive over the last 3 forecasts" in guard_after_switch_back.explain()


@pytest.mark.parametrize("margin, expected", [(0.0, "naive"), (0.25, "naive"), (0.35, "model")])
def test_the_margin_is_a_fraction_of_naives_error(margin, expected):
    # naive lags the ramp by the same amount every period; the model over-predicts by 1.3 times that
    lag = actual(PERIOD) - naive_at(PERIOD)
    assert all(actual(PERIOD * k) - naive_at(PERIOD * k) == pytest.approx(lag) for k in range(1, 6))
    guard = GuardedPredictor(Oracle(offset=1.3 * lag), window=5, margin=margin, min_scored=3)
    calls = run(guard, 5)
    assert calls[-1][1]["model_mae"] == pytest.approx(1.3 * calls[-1][1]["naive_mae"])
    assert calls[-1][1]["using"] == expected


def test_forecasts_the_history_no_longer_covers_are_dropped_not_scored():
    guard = GuardedPredictor(Oracle(factor=2.0), window=5, min_scored=1)
    for k in range(1, 6):
        times, counts, intervals = history(PERIOD * k)
        guard.forecast(times[-3:], counts[-3:], intervals[-3:], PERIOD, 3)  # 6 s retained, periods of 10 s
    state = guard.state()
    assert state["scored"] == 0 and state["unscorable"] == 4 and state["using"] == "model"


def test_bad_guard_settings_are_refused():
    with pytest.raises(ValueError, match="window >= 1"):
        GuardedPredictor(Oracle(), window=0)
    with pytest.raises(ValueError, match="margin >= 0"):
        GuardedPredictor(Oracle(), margin=-0.1)


# --- inside AUTOSCALE -------------------------------------------------------------------------------------------

OPS = ("parse", "enrich", "aggregate", "sink")


def snap(batch_id, time_s, arrivals):
    return Snapshot(batch_id=batch_id, time_s=time_s, trigger_interval_s=2.0, batch_duration_s=1.0, interval_s=2.0,
                    arrivals=arrivals, records_read=arrivals, backlog=0, latency_p50_s=None, latency_p95_s=None,
                    latency_p99_s=None, max_degree=8,
                    operators=tuple(OperatorMetrics(op, 2, arrivals, arrivals, arrivals * 1e-4, 2, 0.0, 0.0)
                                    for op in OPS))


class TripleLastValue:
    """A learned model gone wrong: three times the naive forecast."""

    name = "load-predictor@champion=v9"

    def forecast(self, times_s, counts, intervals_s, period_s, last_n):
        naive = LastValuePredictor().forecast(times_s, counts, intervals_s, period_s, last_n)
        return Forecast(3 * naive.arrivals, naive.trend, self.name)


def arrivals_at(k):
    return 1000 + 100 * (k % 3)  # a load that wobbles: naive is not exact, the model is far worse


def drive(ctl, batches):
    return [ctl.decide(snap(k, 2.0 * (k + 1), arrivals_at(k))) for k in range(batches)]


def test_autoscale_guards_a_learned_predictor_and_says_so():
    ctl = build_controller("autoscale", {"guard_window": 3, "guard_min_scored": 2}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, predictor=TripleLastValue()))
    assert ctl.run_tags() == {"predictor": "guarded(load-predictor@champion=v9)"}
    iterations = [d for d in drive(ctl, 20) if d.reason.startswith("iteration of")]
    assert len(iterations) == 4
    first, second, third, fourth = iterations
    for d in (first, second):
        assert d.details["guard_using_enrich"] == "model" and "naive used" not in d.reason
    assert first.details["guard_scored_enrich"] == 0 and second.details["guard_scored_enrich"] == 1
    assert first.details["guard_model_mae_enrich"] is None
    # the model's forecast is used at first: three times the last value (last batch 1000 + 100 x (9 % 3) = 1000)
    last_rate = arrivals_at(9) / 2.0
    assert second.details["charge_enrich"] == pytest.approx(3 * last_rate * 10.0)
    # two forecasts scored at the third iteration: the model is worse, naive is used for every operator
    assert "predictor guarded(load-predictor@champion=v9)" in third.reason
    assert "guard: parse model worse than naive over the last 2 iterations (MAE" in third.reason
    assert "): naive used" in third.reason
    for op in OPS:
        assert third.details[f"guard_using_{op}"] == "naive"
        assert third.details[f"guard_scored_{op}"] == 2 and third.details[f"guard_switches_{op}"] == 1
        assert third.details[f"guard_model_mae_{op}"] > third.details[f"guard_naive_mae_{op}"]
    assert third.details["charge_enrich"] == pytest.approx(arrivals_at(14) / 2.0 * 10.0)  # the naive forecast
    assert fourth.details["guard_using_enrich"] == "naive" and "over the last 3 iterations" in fourth.reason


def test_autoscale_without_the_guard_uses_the_model_throughout():
    ctl = build_controller("autoscale", {"predictor_guard": False, "guards": False}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, predictor=TripleLastValue()))
    iterations = [d for d in drive(ctl, 40) if d.reason.startswith("iteration of")]
    assert ctl.run_tags() == {"predictor": "load-predictor@champion=v9"}
    assert not any(k.startswith("guard_") for k in iterations[-1].details) and "guard" not in iterations[-1].reason
    assert iterations[-1].details["charge_enrich"] == pytest.approx(3 * arrivals_at(39) / 2.0 * 10.0)


def test_autoscale_says_when_a_learned_predictor_is_still_warming_up():
    """A model needing 15 sub-intervals (30 s of 2 s batches) answers with the last value before; the reason says
    so, and the guard has nothing of the model's to score then."""
    learned = LearnedPredictor(lambda rows: [3.0] * len(rows), "load-predictor@champion=v9",
                               horizon=Horizon(STEP, 5, lags=15))
    ctl = build_controller("autoscale", {}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, predictor=learned))
    iterations = [d for d in drive(ctl, 25) if d.reason.startswith("iteration of")]
    short = "the model's history is still short: last value used"
    assert [short in d.reason for d in iterations] == [True, True, False, False, False]
    assert iterations[1].details["charge_enrich"] == pytest.approx(arrivals_at(9) / 2.0 * 10.0)  # the last value
    assert iterations[1].details["guard_scored_enrich"] == 0 and iterations[-1].details["guard_scored_enrich"] == 2
    assert iterations[-1].details["charge_enrich"] == pytest.approx(3.0 * sum(
        arrivals_at(k) / 2.0 for k in range(10, 25)) / 15 * 10.0)  # the model: 3x the window's mean rate


@pytest.mark.parametrize("handed_over", [PaperPredictor(), LastValuePredictor()])
def test_autoscale_never_guards_the_papers_or_the_naive_predictor(handed_over):
    # a registry that fell back hands the paper's predictor over: the paper's behaviour, exactly
    ctl = build_controller("autoscale", {"predictor": "registry"}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, predictor=handed_over, predictor_warning="fell back"))
    plain = build_controller("autoscale", {"predictor": "last-value" if handed_over.name == "last-value"
                                           else "paper"}, OPS, 8)
    guarded_run, plain_run = drive(ctl, 30), drive(plain, 30)
    assert ctl.run_tags() == {"predictor": handed_over.name}
    assert [d.details for d in guarded_run] == [d.details for d in plain_run]
    assert not any(k.startswith("guard_") for d in guarded_run for k in d.details)


@pytest.mark.parametrize("params, message", [
    ({"guard_window": 0}, "parameter 'guard_window' must be >= 1"),
    ({"guard_margin": -0.1}, "parameter 'guard_margin' must be >= 0.0"),
    ({"guard_min_scored": 0}, "parameter 'guard_min_scored' must be >= 1"),
    ({"predictor_guard": "yes"}, "parameter 'predictor_guard' must be of type bool"),
])
def test_bad_guard_parameters_name_the_parameter(params, message):
    with pytest.raises(ConfigError) as err:
        build_controller("autoscale", params, OPS, 8)
    assert message in str(err.value)


def test_the_guards_parameters_are_declared_with_their_search_ranges():
    text = describe("autoscale")
    assert "predictor_guard (bool, default True)" in text
    assert "guard_window (int, default 5 [1..]; tuned in [2, 10])" in text
    assert "guard_margin (float, default 0.0 [0.0..]; tuned in [0.0, 0.5])" in text
    assert "guard_min_scored (int, default 3 [1..]; tuned in [1, 10])" in text
