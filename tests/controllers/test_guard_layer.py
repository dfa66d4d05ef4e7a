"""The guard layer shared by the parallelism controllers (controllers/guard_layer.py): which controllers wear it,
that AUTOSCALE's and SEEP's proposals go through the same review and batch-start sizing as DS2's and threshold's,
that `guards=false` leaves the paper's AUTOSCALE and the thesis' controllers untouched, that a policy's limits bound
the layer's sizing, that the options are checked by name, and on the plant model that the layer keeps AUTOSCALE's
and the detector's events on time through bursts shorter than their decision periods."""
import pytest

from controllers import ConfigError, RunContext, build_controller
from controllers.base import registered
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS
from simulator.evaluate import calibrated_prior, simulate_configuration
from studies.burst_wait_budget import NOISY
from studies.guards_simulated import random_peaks
from tests.controllers.test_guards import OPS, snap
from workloads import Schedule, parse_workload


def test_every_controller_declaring_the_guard_options_wears_the_layer():
    declaring = sorted(name for name, cls in registered().items() if "guards" in cls.PARAMS)
    assert {"ds2", "threshold", "autoscale", "seep-policy", "seep-detector"} <= set(declaring)
    for name in declaring:
        assert issubclass(registered()[name], GuardLayer), name
        for option in GUARD_PARAMS:
            assert option in registered()[name].PARAMS, (name, option)


def autoscale(**params):
    ctl = build_controller("autoscale", {"period_s": 10.0, **params}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, max_degree=8, slots=4, duration_s=180.0))
    return ctl


def test_autoscale_meets_a_burst_at_the_batch_that_reads_it_between_two_iterations():
    ctl = autoscale()
    ctl.decide(snap(time_s=2.0, rate=1000, batch_s=0.6))  # measured: about 0.3 s of stages for 2,000 events
    # 40,000 events waiting 4 s into a 10 s iteration: AUTOSCALE itself would wait for the iteration's end
    decision = ctl.at_batch_start(40_000, 4.0, {op: 1 for op in OPS}, 0.5)
    assert decision is not None and any(d > 1 for d in decision.degrees.values()), decision
    assert decision.reason.startswith("burst:")
    # the review after it (an iteration still in progress) returns to the vector before the burst
    after = ctl.decide(snap(dict(decision.degrees), time_s=6.0, rate=1000, batch_s=0.6, backlog=0))
    assert "iteration in progress" in after.reason and "guards: the burst batch is done" in after.reason
    assert dict(after.degrees) == {op: 1 for op in OPS}


def test_autoscale_with_guards_false_is_the_paper_alone():
    ctl = autoscale(guards=False)
    ctl.decide(snap(time_s=2.0, rate=1000, batch_s=0.6))
    assert ctl.at_batch_start(40_000, 4.0, {op: 1 for op in OPS}, 0.5) is None
    decisions = [ctl.decide(snap(time_s=t, rate=1000, batch_s=0.6)) for t in (4.0, 6.0, 8.0, 10.0, 12.0)]
    assert not any("guards:" in d.reason for d in decisions)
    assert not any(key.startswith("guard.") for d in decisions for key in d.details)


def test_the_guards_review_autoscales_iteration():
    """An iteration's scale-in inside the band is held by the guards, and said so; guards off, it is applied."""
    def last_iteration(**params):
        ctl = autoscale(period_s=2.0, reconfig_cost_s=0.0, **params)
        decision = None
        for t in (2.0, 4.0, 6.0):  # enrich at 4 on a load one task carries: AUTOSCALE's NdA is low, it scales in
            decision = ctl.decide(snap({"enrich": 4}, time_s=t, rate=1000, batch_s=1.4))
        return decision

    paper, guarded = last_iteration(guards=False), last_iteration()
    assert paper.degrees["enrich"] < 4, paper.reason
    assert guarded.degrees["enrich"] == 4 and "within" in guarded.reason, guarded.reason


@pytest.mark.parametrize("params, option", [({"utilization_band": 1.5}, "utilization_band"),
                                            ({"catch_up_s": 0}, "catch_up_s"),
                                            ({"stabilisation_s": -1}, "stabilisation_s"),
                                            ({"excluded_periods": "60-30"}, "excluded_periods")])
@pytest.mark.parametrize("name", ["autoscale", "seep-policy", "seep-detector"])
def test_the_layers_options_are_checked_by_name(name, params, option):
    with pytest.raises(ConfigError, match=option):
        build_controller(name, params, OPS, 8)


def test_on_bursty_load_the_layer_keeps_autoscales_events_on_time():
    """Random peaks of 4-15 s (shorter than or near AUTOSCALE's 10 s iteration) on the noisy plant, the controllers
    given the plant's costs as a calibration: the paper's AUTOSCALE meets each peak an iteration late."""
    arrivals = Schedule(parse_workload(random_peaks(1)))
    runs = {guards: simulate_configuration("autoscale", {"guards": guards}, arrivals, NOISY, slo_latency_s=5.0,
                                           noise_seed=0, cost_prior=calibrated_prior(NOISY))
            for guards in (False, True)}
    assert runs[False].slo_attainment < 0.7 and runs[True].slo_attainment > 0.95, runs


def bound(name, **params):
    ctl = build_controller(name, params, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, max_degree=8, slots=4, duration_s=180.0))
    return ctl


@pytest.mark.parametrize("name", ["seep-detector", "seep-policy"])
def test_seeps_controllers_meet_a_burst_between_two_samples_at_the_batch_that_reads_it(name):
    ctl = bound(name)
    ctl.decide(snap(time_s=2.0, rate=1000, batch_s=0.6))  # between samples (5 s): the thesis' controllers wait
    decision = ctl.at_batch_start(40_000, 4.0, {op: 1 for op in OPS}, 0.5)
    assert decision is not None and decision.reason.startswith("burst:"), decision
    after = ctl.decide(snap(dict(decision.degrees), time_s=6.0, rate=1000, batch_s=0.6, backlog=0))
    assert "guards: the burst batch is done" in after.reason, after.reason
    assert dict(after.degrees) == {op: 1 for op in OPS}
    assert bound(name, guards=False).at_batch_start(40_000, 4.0, {op: 1 for op in OPS}, 0.5) is None


def test_a_policys_never_above_limit_bounds_the_layers_burst_sizing():
    """seep-t5 never takes enrich above 3 nodes: the layer sizes the burst within that and raises the operators the
    policy does not limit instead; a policy with no limit leaves the slots as the only bound."""
    def burst(policy):
        ctl = bound("seep-policy", policy=policy)
        ctl.decide(snap(time_s=2.0, rate=1000, batch_s=0.6))
        return ctl.at_batch_start(400_000, 4.0, {op: 1 for op in OPS}, 0.5)

    limited = burst("seep-t5")
    assert limited.degrees["enrich"] == 3 and max(limited.degrees.values()) == 4, limited.degrees
    unlimited = ("rules:\n  - name: up\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
                 "    when: {metric: queue-length, above: 100, for_at_least: 5s}\n")
    assert burst(unlimited).degrees["enrich"] == 4


def test_a_policys_upper_limits_are_the_highest_its_limited_scale_out_rules_allow():
    from controllers.policy import load_policy
    from controllers.policy.parse import parse_policy

    assert load_policy("seep-t5").upper_limits(OPS, {}) == {"enrich": 3}
    assert load_policy("seep-cpu").upper_limits(OPS, {}) == {op: 32 for op in OPS}  # a wildcard rule: every operator
    text = ("rules:\n"
            "  - {name: a, operator: enrich, action: scale-out, by: {absolute: 1}, never_above: {factor: 2},\n"
            "     when: {metric: cpu, above: 50, for_at_least: 5s}}\n"
            "  - {name: b, operator: enrich, action: scale-out, by: {absolute: 1}, never_above: {nodes: 5},\n"
            "     when: {metric: cpu, above: 90, for_at_least: 5s}}\n"
            "  - {name: c, operator: parse, action: scale-out, by: {absolute: 1},\n"
            "     when: {metric: cpu, above: 90, for_at_least: 5s}}\n")
    policy = parse_policy(text, operators=OPS)
    # rules are independent: enrich reaches the higher of 2 x its initial 3 and 5; parse's rule has no limit
    assert policy.upper_limits(OPS, {"enrich": 3}) == {"enrich": 6}


def test_on_bursty_load_the_layer_keeps_the_detectors_events_on_time():
    """The detector samples every 5 s, adds one task after two reports over 50 % and never scales in: a peak of a
    few seconds is over before it acts. With the layer each peak's batch is sized as it starts."""
    arrivals = Schedule(parse_workload(random_peaks(1)))
    runs = {guards: simulate_configuration("seep-detector", {"guards": guards}, arrivals, NOISY, slo_latency_s=5.0,
                                           noise_seed=0, cost_prior=calibrated_prior(NOISY))
            for guards in (False, True)}
    assert runs[False].slo_attainment < 0.7 and runs[True].slo_attainment > 0.95, runs


def multilevel_loop(**params):
    from controllers import ControlLoop
    from tests.controllers.test_multilevel import TABLE

    ctl = build_controller("multilevel", {"warmup_s": 0, "headroom": 1.1, **params}, OPS, 8)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=TABLE, duration_s=180.0))  # slots: live
    return ControlLoop(ctl)


def batch(loop, i, rate, batch_s=1.0, slots=2):
    """Batch i (t = 2i) at the loop's degrees, `batch_s` long, what arrived meanwhile waiting."""
    from dataclasses import replace

    return replace(snap(dict(loop.degrees), time_s=2.0 * i, batch_id=i, rate=rate, batch_s=batch_s,
                        backlog=int(rate * batch_s)), slots=slots)


def test_multilevel_sizes_a_burst_within_the_executors_registered_and_leaves_their_count():
    loop = multilevel_loop()
    loop.step(batch(loop, 1, 1500))  # row 0: one executor asked for, two slots still registered
    decision = loop.controller.at_batch_start(40_000, 3.0, loop.degrees, 0.5)
    assert decision.reason.startswith("burst:") and max(decision.degrees.values()) == 2, decision
    assert decision.executors is None  # a burst is met with the slots there: an executor comes seconds later


def test_a_row_change_the_review_holds_keeps_the_row_and_its_executors():
    """The trend calls for row 2 (two executors) while the next batch's utilisation is below the band: the layer
    holds the degrees, so the executors stay as they are, and the controller still stands on row 0 and proposes
    again; once a batch is above the band the row is taken, executors with it."""
    guarded, seed = multilevel_loop(), multilevel_loop(guards=False)
    for loop in (guarded, seed):
        loop.step(batch(loop, 1, 1500, batch_s=0.4))
        loop.step(batch(loop, 2, 2500, batch_s=0.4))  # the seed's controller: row 0 -> 2 at once (test_multilevel)
    assert seed.executors == 2 and "row 0 -> 2" in seed.log[-1].reason
    assert guarded.executors == 1 and set(guarded.degrees.values()) == {1}
    assert "guards: utilisation" in guarded.log[-1].reason and guarded.controller._row == 0
    guarded.step(batch(guarded, 3, 2500, batch_s=2.4))
    assert guarded.executors == 2 and guarded.degrees == {op: 2 for op in OPS}, guarded.log[-1].reason


def test_multilevels_scale_in_is_held_once_by_its_own_stabilisation_not_again_by_the_guards():
    loop = multilevel_loop(stabilisation_s=10.0, reconfig_cost_s=0.0, utilization_band=0.05)
    loop.step(batch(loop, 1, 5000, batch_s=2.4))
    assert loop.executors == 2
    for i in range(2, 9):  # t = 4 ... 16: row 0 is comfortable from t = 4; the row's hold ends at t = 14
        loop.step(batch(loop, i, 1000, batch_s=0.4))
    changed = [r.time_s for r in loop.log if r.executors_changed]
    assert loop.executors == 1 and set(loop.degrees.values()) == {1}, loop.log[-1].reason
    assert changed[-1] == 14.0, changed  # not 10 s more of the guards' own stabilisation


def test_the_detectors_step_after_a_burst_batch_is_taken_from_its_own_vector():
    """A report over the threshold right after a batch run at the burst's vector: the detector adds one task to the
    vector it chose (enrich 1 -> 2), which the burst's return keeps; stepping from the burst's vector (4 -> 5, past
    the slots) would have been lost with the return."""
    ctl = bound("seep-detector", consecutive=1, sampling_period_s=2.0)
    ctl.decide(snap(time_s=2.0, rate=1000, batch_s=0.6))
    burst = ctl.at_batch_start(40_000, 4.0, {op: 1 for op in OPS}, 0.5)
    assert burst.degrees["enrich"] > 2, burst.degrees
    busy = {"parse": 0.1, "enrich": 1.6, "aggregate": 0.1, "sink": 0.1}  # enrich's tasks 80 % busy
    after = ctl.decide(snap(dict(burst.degrees), time_s=6.0, rate=1000, batch_s=2.0, spans=busy, backlog=0))
    assert "enrich 1->2" in after.reason and after.degrees["enrich"] == 2, after.reason
    assert after.degrees["parse"] == 1
