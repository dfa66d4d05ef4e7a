"""Controllers on hand-made snapshots: no Spark, microseconds each (on the simulator: tests/simulator)."""
import pytest

import controllers
from controllers import ConfigError, ControlLoop, Decision, OperatorMetrics, Snapshot, build_controller
from controllers.base import Controller, register

OPS = ("parse", "enrich", "aggregate", "sink")


def snapshot(batch_duration, spans, degrees=None, time_s=100.0, trigger=2.0, busy=None):
    degrees = degrees or {op: 1 for op in OPS}
    busy = busy or spans
    ops = tuple(OperatorMetrics(op, degrees[op], 100, 100, busy[i], degrees[op], spans[i], spans[i])
                for i, op in enumerate(OPS))
    return Snapshot(batch_id=int(time_s), time_s=time_s, trigger_interval_s=trigger, batch_duration_s=batch_duration,
                    interval_s=trigger, arrivals=200, records_read=200, backlog=0, latency_p50_s=1.0,
                    latency_p95_s=1.0, latency_p99_s=1.0, operators=ops, max_degree=8)


def test_static_keeps_its_degrees():
    c = build_controller("static", {"degree": 2, "degrees": {"enrich": 5}}, OPS, 8)
    assert c.initial_degrees() == {"parse": 2, "enrich": 5, "aggregate": 2, "sink": 2}
    assert c.decide(snapshot(10.0, [1, 5, 1, 1])).degrees == c.initial_degrees()


# the threshold rule as Spark Streaming had it: guards off (the guarded rule is in tests/controllers/test_guards.py)
PAPER = {"guards": False}


def test_threshold_scales_the_bottleneck_up_by_the_ratio():
    c = build_controller("threshold", PAPER, OPS, 8)
    d = c.decide(snapshot(5.0, [0.1, 4.0, 0.3, 0.2]))  # ratio 2.5 -> +2 (round half to even) on enrich
    assert d.degrees == {"parse": 1, "enrich": 3, "aggregate": 1, "sink": 1}
    assert "bottleneck enrich" in d.reason


def test_threshold_step_one_adds_one():
    c = build_controller("threshold", {**PAPER, "step": "one"}, OPS, 8)
    assert c.decide(snapshot(5.0, [0.1, 4.0, 0.3, 0.2])).degrees["enrich"] == 2


def test_threshold_scales_the_idlest_down_and_respects_cooldown():
    c = build_controller("threshold", {**PAPER, "initial_degree": 3, "cooldown_s": 10}, OPS, 8)
    degrees = {op: 3 for op in OPS}
    d = c.decide(snapshot(0.4, [0.1, 0.2, 0.05, 0.05], degrees, time_s=100, busy=[0.3, 0.6, 0.03, 0.3]))
    assert d.degrees["aggregate"] == 2 and sum(d.degrees.values()) == 11
    again = c.decide(snapshot(0.4, [0.1, 0.2, 0.05, 0.05], d.degrees, time_s=105))
    assert again.degrees == d.degrees and "cooldown" in again.reason
    later = c.decide(snapshot(0.4, [0.1, 0.2, 0.05, 0.05], d.degrees, time_s=111))
    assert sum(later.degrees.values()) == 10


def test_threshold_holds_inside_the_band_and_at_max():
    c = build_controller("threshold", {**PAPER, "initial_degree": 8}, OPS, 8)
    assert c.decide(snapshot(1.0, [0.1, 0.5, 0.2, 0.2], {op: 8 for op in OPS})).degrees == {op: 8 for op in OPS}
    assert "every operator is at max" in c.decide(snapshot(5.0, [1, 3, 1, 1], {op: 8 for op in OPS})).reason


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("nonesuch", {}, "unknown controller 'nonesuch'; known controllers: autoscale, ds2, executor-autoscaler, "
         "multilevel, multilevel-benchmark, oracle, scripted, seep-detector, seep-policy, settle, "
         "spark-dynamic-allocation, "
         "static, threshold"),
        ("threshold", {"scale_up": 0.9}, "controller 'threshold': unknown parameter(s) scale_up"),
        ("threshold", {"cooldown_s": -1}, "parameter 'cooldown_s' must be >= 0.0"),
        ("threshold", {"scale_up_ratio": "high"}, "parameter 'scale_up_ratio' must be of type float"),
        ("threshold", {"scale_up_ratio": 0.3, "scale_down_ratio": 0.5}, "scale_down_ratio (0.5) must be below"),
        ("threshold", {"step": "two"}, "parameter 'step' must be one of ratio, one"),
        ("threshold", {"initial_degree": 9}, "must be <= max_degree (8)"),
        ("static", {"degree": 0}, "parameter 'degree' must be >= 1"),
        ("static", {"degree": True}, "parameter 'degree' must be of type int"),
        ("static", {"degrees": {"enrichh": 2}}, "names unknown operator(s) enrichh"),
        ("static", {"degree": 9}, "degree (9) must be <= max_degree (8)"),
    ],
)
def test_bad_config_is_rejected_with_a_clear_message(name, params, message):
    with pytest.raises(ConfigError) as err:
        build_controller(name, params, OPS, 8)
    assert message in str(err.value)


def test_loop_rejects_invalid_decisions_without_applying_them():
    @register
    class Wild(Controller):
        name = "test-wild"
        summary = "returns an impossible degree"

        def initial_degrees(self):
            return {op: 1 for op in self.operators}

        def decide(self, snapshot):
            return Decision({op: 99 for op in self.operators}, "too much")

    loop = ControlLoop(build_controller("test-wild", {}, OPS, 8))
    assert loop.step(snapshot(1.0, [1, 1, 1, 1])) == {op: 1 for op in OPS}
    assert not loop.log[-1].accepted and "outside [1, 8]" in loop.log[-1].reason


def test_registry_lists_the_builtins():
    assert {"static", "threshold"} <= set(controllers.registered())


def test_scripted_applies_changes_after_the_named_batches():
    c = build_controller("scripted", {"changes": {2: {"enrich": 3}, "4": {"enrich": 1, "sink": 2}}}, OPS, 8)
    loop = ControlLoop(c)
    seen = []
    for batch in range(6):
        s = snapshot(1.0, [1, 1, 1, 1], loop.degrees, time_s=batch)
        s = Snapshot(**{**s.__dict__, "batch_id": batch})
        seen.append(loop.step(s))
    assert seen[1]["enrich"] == 1 and seen[2]["enrich"] == 3 and seen[3]["enrich"] == 3
    assert seen[4] == {"parse": 1, "enrich": 1, "aggregate": 1, "sink": 2}


@pytest.mark.parametrize("changes, message", [
    ({"x": {"enrich": 2}}, "batch ids must be integers"),
    ({1: {"enrichh": 2}}, "unknown operator 'enrichh'"),
    ({1: {"enrich": 9}}, "must be an integer in [1, 8]"),
    ({1: 3}, "expected a mapping operator -> degree"),
])
def test_scripted_rejects_bad_plans(changes, message):
    with pytest.raises(ConfigError) as err:
        build_controller("scripted", {"changes": changes}, OPS, 8)
    assert message in str(err.value)
