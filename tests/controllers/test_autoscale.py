"""AUTOSCALE, checked against the paper (§3-§5): both decision tables row by row, the quantification examples, eq. 2's
degeneracy, one iteration computed by hand, bad configurations, and the paper's qualitative results on the plant."""
import math

import numpy as np
import pytest

from controllers.types import RunContext
from controllers import ConfigError, ControlLoop, OperatorMetrics, Snapshot, build_controller
from controllers.autoscale import NOTHING, SCALE_IN, SCALE_OUT, classify, global_actions, local_action, quantify
from controllers.forecast import (WARMUP, LastValuePredictor, LearnedPredictor, PaperPredictor, feature_names,
                                  features)
from simulator.plant import chain, simulate

OPS = ("parse", "enrich", "aggregate", "sink")
# the paper exactly: the guard layer off (it is on by default; tests/controllers/test_guard_layer.py)
PAPER = {"guards": False}


# Table 1 (§4.1, p. 62): rows = trend, columns = activity class
@pytest.mark.parametrize("trend, activity, expected", [
    (-1.0, "low", SCALE_IN), (-1.0, "normal", NOTHING), (-1.0, "strong", NOTHING), (-1.0, "critical", SCALE_OUT),
    (0.0, "low", SCALE_IN), (0.0, "normal", NOTHING), (0.0, "strong", NOTHING), (0.0, "critical", SCALE_OUT),
    (+1.0, "low", NOTHING), (+1.0, "normal", NOTHING), (+1.0, "strong", SCALE_OUT), (+1.0, "critical", SCALE_OUT),
])
def test_local_decision_table(trend, activity, expected):
    assert local_action(activity, trend) == expected


# Table 2 (§4.2, p. 63): rows = predominant upstream action, columns = local decision
@pytest.mark.parametrize("upstream, local, expected", [
    (NOTHING, NOTHING, NOTHING), (NOTHING, SCALE_IN, SCALE_IN), (NOTHING, SCALE_OUT, SCALE_OUT),
    (SCALE_IN, NOTHING, NOTHING), (SCALE_IN, SCALE_IN, SCALE_IN), (SCALE_IN, SCALE_OUT, SCALE_OUT),
    (SCALE_OUT, NOTHING, SCALE_OUT), (SCALE_OUT, SCALE_IN, NOTHING), (SCALE_OUT, SCALE_OUT, SCALE_OUT),
])
def test_global_decision_table(upstream, local, expected):
    validated = global_actions({"a": upstream, "b": local}, ["a", "b"], {"a": [], "b": ["a"]})
    assert validated == {"a": upstream, "b": expected}  # a source's own decision passes unchanged


def test_predominance_is_scale_out_over_scale_in_over_nothing():
    # a diamond: d's predecessors b (scale-in) and c (scale-out): scale-out predominates, so d's scale-in is vetoed
    preds = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    local = {"a": NOTHING, "b": SCALE_IN, "c": SCALE_OUT, "d": SCALE_IN}
    assert global_actions(local, "abcd", preds)["d"] == NOTHING
    local["c"] = NOTHING  # now only a scale-in upstream: d's scale-in is validated
    assert global_actions(local, "abcd", preds)["d"] == SCALE_IN


def test_upstream_options_direct_or_ancestors_validated_or_local():
    order, preds = ("s", "m", "t"), {"s": [], "m": ["s"], "t": ["m"]}
    local = {"s": SCALE_OUT, "m": NOTHING, "t": SCALE_IN}
    # validated (default): s's scale-out forces m out, which vetoes t's scale-in
    assert global_actions(local, order, preds) == {"s": SCALE_OUT, "m": SCALE_OUT, "t": NOTHING}
    # local actions of direct predecessors: t only sees m's own "nothing", so its scale-in stands
    assert global_actions(local, order, preds, upstream_actions="local")["t"] == SCALE_IN
    # local actions of all ancestors: s's scale-out reaches t
    assert global_actions(local, order, preds, upstream="ancestors", upstream_actions="local")["t"] == NOTHING


@pytest.mark.parametrize("nda, expected", [(0.0, "low"), (0.3, "low"), (0.31, "normal"), (0.8, "normal"),
                                           (0.81, "strong"), (1.0, "strong"), (1.0001, "critical"), (5, "critical")])
def test_activity_classes_and_their_boundaries(nda, expected):
    assert classify(nda, 0.3, 0.8) == expected


def test_quantification_examples_of_the_digest():
    assert quantify(4, 1.6, SCALE_OUT, "critical", max_p=24) == 7  # ceil(4 x 1.6)
    assert quantify(12, 0.2, SCALE_IN, "low", max_p=24) == 3  # ceil(2.4)
    assert quantify(4, 0.9, SCALE_OUT, "strong", max_p=24) == 5  # strong, not critical: d + 1
    assert quantify(4, 3.0, SCALE_OUT, "critical", max_p=8) == 8  # maxP clamp
    assert quantify(8, 1.5, SCALE_OUT, "critical", max_p=8) == 8  # a validated scale-out that is a no-op at maxP
    assert quantify(3, 0.0, SCALE_IN, "low", max_p=8) == 1  # floor at the minimum degree
    assert quantify(3, 0.5, NOTHING, "normal", max_p=8) == 3
    # a scale-out forced by Table 2 on a local "nothing": +1 by default, the literal ceil(d x NdA) (never below d)
    assert quantify(3, 0.5, SCALE_OUT, "forced", max_p=8) == 4
    assert quantify(3, 0.5, SCALE_OUT, "forced", max_p=8, forced="quantified") == 3


def test_literal_eq2_degenerates_to_the_observed_sum_and_the_extrapolated_reading_adds_the_trend():
    rng = np.random.default_rng(7)
    times = list(np.arange(1, 6) * 2.0)
    counts = list(rng.integers(100, 5000, size=5).astype(float))
    literal = PaperPredictor("literal").forecast(times, counts, [2.0] * 5, 10.0, 5)
    assert literal.arrivals == pytest.approx(sum(counts))  # OLS residuals sum to zero
    extrapolated = PaperPredictor("extrapolated").forecast(times, counts, [2.0] * 5, 10.0, 5)
    slope = np.polyfit(times, counts, 1)[0]
    assert extrapolated.arrivals == pytest.approx(max(0.0, sum(counts) + 5 * slope * 10.0))
    assert np.sign(extrapolated.trend) == np.sign(slope)
    # the paper's predictor only sees the last iteration: older history changes nothing
    longer = PaperPredictor().forecast([-4.0, -2.0, 0.0] + times, [9e9, 9e9, 9e9] + counts, [2.0] * 8, 10.0, 5)
    assert longer.arrivals == pytest.approx(extrapolated.arrivals)
    # never negative
    falling = PaperPredictor().forecast(times, [5000, 3000, 1000, 500, 0], [2.0] * 5, 10.0, 5)
    assert falling.arrivals == 0.0 and falling.trend < 0


def test_naive_and_learned_predictors():
    last = LastValuePredictor().forecast([1, 2, 3], [100, 200, 300], [1, 1, 1], 10.0, 3)
    assert last.arrivals == 3000 and last.trend == 100
    seen = []

    def model(rows):
        seen.extend(rows)
        return [1.5] * len(rows)

    learned = LearnedPredictor(model, "test-model")
    rates = [100.0] * 10
    fc = learned.forecast(list(range(10)), rates, [1.0] * 10, 10.0, 5)
    assert fc.arrivals == pytest.approx(1.5 * 100 * 10) and fc.trend > 0 and fc.predictor == "test-model"
    assert list(seen[0]) == feature_names()
    # too little history: the last value answers, labelled as the warm-up (a guard does not score it as the model's)
    early = learned.forecast([1, 2], [100, 300], [1, 1], 10.0, 2)
    assert early.predictor == WARMUP and early.arrivals == pytest.approx(300 * 10)


def test_features_are_scale_free():
    a, scale_a = features([10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
    b, scale_b = features([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000])
    assert scale_b == 100 * scale_a
    assert {k: v for k, v in a.items() if k != "log_scale"} == pytest.approx(
        {k: v for k, v in b.items() if k != "log_scale"})


def snap(batch_id, time_s, arrivals, degrees, busy, records=None, backlog=0, interval=2.0):
    records = records or {op: arrivals for op in OPS}
    return Snapshot(batch_id=batch_id, time_s=time_s, trigger_interval_s=2.0, batch_duration_s=1.0,
                    interval_s=interval, arrivals=arrivals, records_read=arrivals, backlog=backlog,
                    latency_p50_s=None, latency_p95_s=None, latency_p99_s=None,
                    operators=tuple(OperatorMetrics(op, degrees[op], records[op], records[op], busy[op], degrees[op],
                                                    0.0, 0.0) for op in OPS), max_degree=8)


def test_one_iteration_by_hand():
    """Δ = 10 s of five 2-s batches with arrivals 1000, 1200, ..., 1800; enrich costs 1 ms per record at degree 2.

    Slope 100 per s, so eq. 2 extrapolated = 7000 + 5 x 100 x 10 = 12000. The 600 unread events will pass through
    every operator (selectivity 1 here): EstimCharge 12600 for each. Parse: capacity 10 / 1e-6 = 10^7, NdA ~ 0.001,
    low but the trend is increasing: nothing. Enrich: capacity = 2 x 10 / 0.001 = 20000 -> NdA 0.63, normal:
    nothing. Then a 3x busier enrich is critical and is sized by ceil(2 x NdA).
    """
    degrees = {"parse": 1, "enrich": 2, "aggregate": 1, "sink": 1}
    ctl = build_controller("autoscale", {"initial_degrees": {"enrich": 2}, **PAPER}, OPS, 8)
    decisions = []
    for k in range(5):
        arrivals = 1000 + 200 * k
        busy = {"parse": arrivals * 1e-6, "enrich": arrivals * 1e-3, "aggregate": arrivals * 1e-6,
                "sink": arrivals * 1e-6}
        decisions.append(ctl.decide(snap(k, 2.0 * (k + 1), arrivals, degrees, busy, backlog=600 if k == 4 else 0)))
    assert all("in progress" in d.reason for d in decisions[:4])
    last = decisions[-1]
    assert last.details["charge_parse"] == pytest.approx(12600)
    assert last.details["charge_enrich"] == pytest.approx(12600)
    assert last.details["capacity_enrich"] == pytest.approx(20000)
    assert last.details["nda_enrich"] == pytest.approx(0.63)
    assert dict(last.degrees) == degrees
    for k in range(5, 10):
        arrivals = 1000 + 200 * k
        busy = {"parse": arrivals * 1e-6, "enrich": arrivals * 3e-3, "aggregate": arrivals * 1e-6,
                "sink": arrivals * 1e-6}
        d = ctl.decide(snap(k, 2.0 * (k + 1), arrivals, degrees, busy))
    # arrivals 2000..2800: sum 12000 + 5 x 100 x 10 = 17000; capacity 2 x 10 / 0.003 = 6667 -> NdA 2.55 -> 6
    assert d.details["nda_enrich"] == pytest.approx(17000 / (20 / 0.003))
    assert d.degrees["enrich"] == math.ceil(2 * 17000 / (20 / 0.003))
    assert "critical" in d.reason


@pytest.mark.parametrize("params, message", [
    ({"theta_min": 0.8, "theta_max": 0.8}, "theta_min (0.8) must be below theta_max (0.8)"),
    ({"theta_min": 0.9, "theta_max": 0.5}, "must be below theta_max"),
    ({"theta_min": 0.0}, "parameter 'theta_min' must be >= 1e-09"),
    ({"theta_max": 1.5}, "parameter 'theta_max' must be <= 1.0"),
    ({"initial_degrees": {"nope": 2}}, "names unknown operator(s) nope"),
    ({"initial_degrees": {"enrich": 20}}, "initial_degrees['enrich'] (20) must be <= max_degree (8)"),
    ({"predictor": "magic"}, "must be one of paper, last-value, registry"),
    ({"eq2_reading": "both"}, "must be one of extrapolated, literal"),
])
def test_bad_configurations_name_the_parameter(params, message):
    with pytest.raises(ConfigError) as err:
        build_controller("autoscale", params, OPS, 8)
    assert message in str(err.value)


def test_unread_events_reach_each_operator_through_the_selectivities_upstream():
    ctl = build_controller("autoscale", {"period_s": 2.0, **PAPER}, OPS, 8)
    degrees = dict.fromkeys(OPS, 1)
    records = {"parse": 1000, "enrich": 1000, "aggregate": 1000, "sink": 250}
    s = snap(0, 2.0, 1000, degrees, dict.fromkeys(OPS, 0.01), backlog=4000)
    s = s.__class__(**{**s.__dict__, "operators": tuple(
        op.__class__(op.name, op.degree, records[op.name], records[OPS[i + 1]] if i < 3 else 250, op.busy_s,
                     op.tasks, op.max_task_s, op.span_s) for i, op in enumerate(s.operators))})
    d = ctl.decide(s)
    # aggregate keeps a quarter of its input: the 4000 unread events are 1000 records for the sink
    assert d.details["charge_enrich"] == pytest.approx(1000 + 4000)
    assert d.details["charge_sink"] == pytest.approx(250 + 1000)


def test_an_iteration_shorter_than_the_trigger_is_rejected():
    ctl = build_controller("autoscale", {"period_s": 1.0}, OPS, 8)
    with pytest.raises(ConfigError, match=r"period_s \(1.0\) is shorter than the trigger interval \(2.0\)"):
        ctl.check_run(RunContext(trigger_s=2.0, slo_latency_s=5.0))
    ctl.check_run(RunContext(trigger_s=1.0, slo_latency_s=5.0))


class Profile:
    """The AUTOSCALE shape on the plant: low, exponential rise, high plateau, step-wise decrease, low."""

    def __init__(self, low=500.0, high=5000.0, duration_s=200.0):
        t = np.arange(0, duration_s, 0.01)
        rate = np.where(t < 30, low, np.where(t < 60, low * (high / low) ** ((t - 30) / 30), high))
        for k, start in enumerate((100, 120, 140, 160)):
            rate = np.where(t >= start, high - (k + 1) * (high - low) / 4, rate)
        cumulative = np.concatenate([[0.0], np.cumsum(rate * 0.01)])
        self.total_events = int(cumulative[-1])
        self._times = np.interp(np.arange(self.total_events) + 1, cumulative, np.arange(len(cumulative)) * 0.01)

    def count_due(self, t_us):
        return int(np.searchsorted(self._times, t_us / 1e6, side="right"))

    def arrival_us(self, first, stop):
        return np.ceil(self._times[first:stop] * 1e6).astype(np.int64)


PLANT = chain([("parse", 0.00002), ("enrich", 0.0006), ("aggregate", 0.00003), ("sink", 0.00002)],
              trigger_interval_s=2.0, slots=8, max_degree=8)


def run_on_plant(name, params):
    return simulate(PLANT, Profile(), ControlLoop(build_controller(name, params, OPS, 8)), 200)


def test_the_papers_qualitative_results_on_the_plant_model():
    """§5.2's results (pp. 65-66) on the plant. Only what the method guarantees is asserted: a linear extrapolation
    with ceil(d x NdA) sizing (NdA -> 1, no headroom) lags an exponential rise, so latency is bounded but not low."""
    runs = {"min": run_on_plant("static", {}), "expt": run_on_plant("static", {"degrees": {"enrich": 5}}),
            "as_min": run_on_plant("autoscale", PAPER),
            "as_expt": run_on_plant("autoscale", {"initial_degrees": {"enrich": 5}, **PAPER})}
    p99 = {name: float(np.percentile(r.latencies(), 99)) for name, r in runs.items()}
    # ConfMin congests (enrich at 1 holds ~1,700 ev/s of the 5,000 peak); ConfExpt absorbs the peak
    assert p99["min"] > 100 and p99["expt"] < 5, p99
    # AUTOSCALE from ConfMin scales enrich out during the rise and back in after: far from ConfMin's congestion
    assert p99["as_min"] < p99["min"] / 5, p99
    enrich = [d.after["enrich"] for d in runs["as_min"].decisions]
    assert max(enrich) >= 3 and enrich[-1] <= 2
    # from ConfExpt it first scales in at the low start, and uses fewer slot-seconds than ConfExpt
    first_change = next(d for d in runs["as_expt"].decisions if d.changed)
    assert first_change.after["enrich"] < 5 and first_change.time_s < 30
    assert runs["as_expt"].slot_seconds < 0.9 * runs["expt"].slot_seconds
    # one decision per iteration: changes only happen at iteration ends
    changes = [d for d in runs["as_min"].decisions if d.changed]
    assert changes and all("iteration of" in d.reason for d in changes)
