"""Slot awareness (controllers/slots.py), shared by DS2, threshold and AUTOSCALE: degrees capped at the slots the run
has now, executors asked for when the degrees want more slots (at once) and released only after the hysteresis, on
hand-made snapshots through the control loop (microseconds)."""
from dataclasses import replace

import pytest

from controllers import ConfigError, ControlLoop, Decision, RunContext, build_controller
from tests.controllers.test_guards import OPS, below_band, snap

# a load four times what the last batch could carry, with as much again waiting
HEAVY = snap(rate=4000, batch_s=6.0, backlog=16000)
CLUSTER = RunContext(trigger_s=2.0, slo_latency_s=5.0, slots=0)  # a cluster master: slots unknown before the start


def on_cluster(snapshot, slots, executors=None):
    """The snapshot as a cluster run records it: `slots` executor cores registered at this batch."""
    return replace(snapshot, slots=slots, executors=executors if executors is not None else slots)


def loop_of(name, params, context=CLUSTER):
    controller = build_controller(name, params, OPS, 8)
    controller.bind(context)
    return ControlLoop(controller)


@pytest.mark.parametrize("name", ["ds2", "threshold"])
def test_degrees_wanted_past_the_registered_slots_are_capped_at_them(name):
    """A load four times what the last batch could carry: unguarded, both controllers size some operator past the 2
    task slots of the two 1-core executors that registered; slot-aware, nothing goes past 2."""
    heavy = on_cluster(HEAVY, slots=2)
    blind = loop_of(name, {"guards": False, "cooldown_s": 0} if name == "threshold" else {"guards": False})
    assert max(blind.step(heavy).values()) > 2
    aware = loop_of(name, {"cooldown_s": 0} if name == "threshold" else {})
    degrees = aware.step(heavy)
    assert max(degrees.values()) == 2  # the guards plan within the registered slots (their bound follows them)


def test_guards_off_is_the_published_controller_blind_to_the_slots():
    heavy = on_cluster(HEAVY, slots=2)
    assert max(loop_of("ds2", {"guards": False}).step(heavy).values()) > 2


def test_autoscale_is_capped_at_the_slots_too():
    c = build_controller("autoscale", {"period_s": 2.0}, OPS, 8)
    c.bind(CLUSTER)
    wants_four = Decision({op: 4 for op in OPS}, "sized for the forecast")
    fitted = c.fit_to_slots(wants_four, on_cluster(snap(batch_s=2.4), slots=3), None, 10.0)
    assert set(fitted.degrees.values()) == {3} and fitted.details["slots.cap"] == 3
    assert build_controller("autoscale", {"guards": False}, OPS, 8).fit_to_slots(
        wants_four, on_cluster(snap(batch_s=2.4), slots=3), None, 10.0) is wants_four


def test_with_executors_managed_a_scale_out_asks_for_executors_at_once_and_degrees_follow_once_they_register():
    loop = loop_of("ds2", {"executors": True, "max_executors": 3})
    assert loop.executors == 1 and loop.controller.needs_cluster()
    degrees = loop.step(on_cluster(replace(HEAVY, batch_id=1, time_s=2.0), slots=1))
    record = loop.log[-1]
    assert loop.executors == 3 and record.executors_changed  # max_executors bounds the request
    assert max(degrees.values()) == 1  # the new executors have not registered: one slot for the next batch
    assert "executors 1 -> 3" in record.reason and record.details["slots.executors_target"] == 3
    # two of them registered: the degrees may use two slots; no new request while the target stands
    degrees = loop.step(on_cluster(replace(HEAVY, batch_id=2, time_s=4.0), slots=2))
    assert max(degrees.values()) == 2 and loop.executors == 3 and not loop.log[-1].executors_changed


def test_executors_are_released_only_after_fewer_were_wanted_for_the_hysteresis_and_to_the_most_wanted_then():
    controller = build_controller("static", {}, OPS, 8)  # any slot-aware controller: drive the fitter directly
    fitter = build_controller("ds2", {"executors": True, "max_executors": 4,
                                      "executor_scale_in_s": 30}, OPS, 8).slot_fitter
    assert controller.slot_fitter is None  # static is not slot-aware: never capped
    assert fitter.executor_target(1, 4, 0.0)[0] == 4  # fewer wanted from t=0
    assert fitter.executor_target(3, 4, 10.0)[0] == 4
    assert fitter.executor_target(2, 4, 29.0)[0] == 4  # 29 s < 30 s: kept
    target, why = fitter.executor_target(1, 4, 30.0)
    assert target == 3 and "4 -> 3" in why  # the most wanted during the 30 s, not the last
    # a scale-up in between restarts the clock
    assert fitter.executor_target(4, 3, 31.0)[0] == 4
    assert fitter.executor_target(1, 4, 40.0)[0] == 4 and fitter.executor_target(1, 4, 69.0)[0] == 4
    assert fitter.executor_target(1, 4, 70.0)[0] == 1


def test_executor_bounds_hold_and_scale_in_caps_degrees_at_the_slots_that_remain():
    fitter = build_controller("threshold", {"executors": True, "min_executors": 2,
                                            "max_executors": 6, "executor_scale_in_s": 0}, OPS, 8).slot_fitter
    assert fitter.executor_target(1, 2, 0.0)[0] == 2  # never below min_executors
    assert fitter.executor_target(8, 2, 1.0)[0] == 6  # never above max_executors
    fitter.live_slots = 6
    fitted = fitter.fit(Decision({op: 3 if op == "enrich" else 1 for op in OPS}, "lighter"), 6, 2.0)
    assert fitted.executors == 3 and fitted.degrees["enrich"] == 3
    fitted = fitter.fit(Decision({op: 5 if op == "enrich" else 1 for op in OPS}, "heavier"), 3, 3.0)
    assert fitted.executors == 5


def test_a_burst_sizing_at_batch_start_is_capped_but_asks_for_no_executors():
    loop = loop_of("ds2", {"executors": True, "max_executors": 4})
    loop.step(on_cluster(replace(below_band(), batch_id=1, time_s=2.0), slots=1))
    degrees = loop.at_batch_start(1, 3.0, pending=200_000)
    assert max(degrees.values()) == 1 and loop.executors == 1


def test_local_slots_cap_when_no_snapshot_says_more():
    loop = loop_of("ds2", {}, RunContext(trigger_s=2.0, slo_latency_s=5.0, slots=2))
    degrees = loop.step(HEAVY)
    assert max(degrees.values()) == 2


@pytest.mark.parametrize("params, message", [
    ({"min_executors": 5, "max_executors": 4}, r"min_executors \(5\) must be <= max_executors \(4\)"),
    ({"executor_scale_in_s": -1}, "executor_scale_in_s"),
    ({"max_executors": 0}, "max_executors"),
])
def test_bad_executor_settings_are_refused_naming_the_parameter(params, message):
    with pytest.raises(ConfigError, match=message):
        build_controller("ds2", {"executors": True, **params}, OPS, 8)
