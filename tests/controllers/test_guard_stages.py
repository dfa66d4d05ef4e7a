"""Each review stage alone (controllers/guard_stages/), on a hand-made review: what it does to a proposal, what it
records, and that the pipeline keeps the declared order (after a stage decides, only the limits apply)."""
import pytest

from controllers import ConfigError, OperatorMetrics, Snapshot, build_controller
from controllers.guard_stages import (REVIEW_STAGES, BurstReturn, Bounds, ExcludedPeriods, IdleRelease,
                                      IneffectiveScaling, ReconfigurationCost, Review, Stabilisation, StepFactors,
                                      UtilisationBand, run_review)
from controllers.guards import GUARD_PARAMS, GUARD_RULES, Block, Guards
from params.declare import check_params

OPS = ("parse", "enrich")


def guards(max_degree=8, **overrides) -> Guards:
    return Guards(check_params("guards", GUARD_PARAMS, {"guards": True, **overrides}, GUARD_RULES), OPS, max_degree)


def snapshot(degrees, *, time_s=10.0, arrivals=2000, backlog=0) -> Snapshot:
    ops = tuple(OperatorMetrics(op, degrees[op], arrivals, arrivals, 0.5 * degrees[op], degrees[op], 0.5, 0.5)
                for op in OPS)
    return Snapshot(batch_id=int(time_s), time_s=time_s, trigger_interval_s=2.0, batch_duration_s=1.3,
                    interval_s=2.0, arrivals=arrivals, records_read=arrivals, backlog=backlog, latency_p50_s=None,
                    latency_p95_s=None, latency_p99_s=None, operators=ops, max_degree=8)


def review(current, want, *, utilization=0.7, **snap) -> Review:
    return Review(snapshot(current, **snap), dict(current), dict(want), "proposed", {}, utilization, 0.5, 0.9,
                  proposal_changes=dict(current) != dict(want))


def test_step_factors_cap_each_change_as_flinks_max_factors_do():
    g = guards(scale_up_max_factor=0.5, scale_down_max_factor=0.5)
    r = review({"parse": 4, "enrich": 5}, {"parse": 12, "enrich": 1})
    StepFactors().apply(r, g)
    assert r.want == {"parse": 6, "enrich": 3}  # ceil(4 x 1.5), ceil(5 x 0.5)
    assert r.details["guard.step_limited"] == "parse=6,enrich=3"
    assert "step factors: parse 12 -> 6, enrich 1 -> 3" in r.result().reason
    exact = review({"parse": 5, "enrich": 5}, {"parse": 3, "enrich": 5})
    StepFactors().apply(exact, guards(scale_down_max_factor=0.4))
    assert exact.want["parse"] == 3  # 5 x 0.6 is 3, not 3.0000000000000004 rounded up
    untouched = review({"parse": 4, "enrich": 5}, {"parse": 12, "enrich": 1})
    StepFactors().apply(untouched, guards())  # the defaults do not bind
    assert untouched.want == {"parse": 12, "enrich": 1} and not untouched.notes


def test_step_factors_also_limit_a_vector_an_earlier_stage_decided_on():
    g = guards(scale_down_max_factor=0.5)
    r = review({"parse": 4, "enrich": 4}, {"parse": 4, "enrich": 4}, arrivals=0)
    decision = run_review((IdleRelease(), StepFactors()), r, g)
    assert dict(decision.degrees) == {"parse": 2, "enrich": 2}
    assert "down to parse=1,enrich=1" in decision.reason and "step factors: parse 1 -> 2" in decision.reason


def test_bounds_bring_a_proposal_into_min_degree_and_the_cap():
    g = guards(max_degree=4, min_degree=2)
    r = review({"parse": 2, "enrich": 2}, {"parse": 1, "enrich": 9})
    Bounds().apply(r, g)
    assert r.want == {"parse": 2, "enrich": 4} and r.details["guard.bounded.enrich"] == 4


def test_ineffective_scaling_holds_an_operator_where_scaling_stopped_helping():
    g = guards()
    g.blocks["enrich"] = Block(old=2, new=3, gain=0.02, load=2000.0)
    r = review({"parse": 1, "enrich": 3}, {"parse": 2, "enrich": 5})
    IneffectiveScaling().apply(r, g)
    assert r.want == {"parse": 2, "enrich": 3} and r.details["guard.blocked.enrich"] == 1
    assert "scale-up of enrich 3->5 blocked: 2->3 gained +2%" in r.notes[0]


def test_stabilisation_lets_ups_through_at_once_and_downs_after_the_delay():
    g = guards(stabilisation_s=20)
    mixed = review({"parse": 2, "enrich": 2}, {"parse": 1, "enrich": 3})
    Stabilisation().apply(mixed, g)
    assert mixed.want == {"parse": 2, "enrich": 3}  # the down in a proposal that scales up waits
    down = review({"parse": 2, "enrich": 2}, {"parse": 1, "enrich": 2}, time_s=10.0)
    Stabilisation().apply(down, g)
    assert down.want == {"parse": 2, "enrich": 2} and down.details["guard.down_pending_s"] == 0
    later = review({"parse": 2, "enrich": 2}, {"parse": 1, "enrich": 2}, time_s=30.0)
    Stabilisation().apply(later, g)
    assert later.want == {"parse": 1, "enrich": 2}


def test_an_excluded_period_holds_and_says_so_only_for_a_change():
    g = guards(excluded_periods="5-15")
    r = review({"parse": 1, "enrich": 1}, {"parse": 2, "enrich": 1}, time_s=10.0)
    ExcludedPeriods().apply(r, g)
    assert dict(r.decided.degrees) == {"parse": 1, "enrich": 1} and "excluded period [5, 15)" in r.decided.reason
    quiet = review({"parse": 1, "enrich": 1}, {"parse": 1, "enrich": 1}, time_s=10.0)
    ExcludedPeriods().apply(quiet, g)
    assert quiet.decided.reason == "proposed" and quiet.details["guard.excluded"] == 1
    outside = review({"parse": 1, "enrich": 1}, {"parse": 2, "enrich": 1}, time_s=15.0)
    ExcludedPeriods().apply(outside, g)
    assert outside.decided is None


def test_the_band_holds_inside_and_allows_only_the_way_back_outside():
    g = guards()
    inside = review({"parse": 2, "enrich": 2}, {"parse": 3, "enrich": 2}, utilization=0.7)
    UtilisationBand().apply(inside, g)
    assert dict(inside.decided.degrees) == {"parse": 2, "enrich": 2} and "within [0.50, 0.90]" in inside.decided.reason
    below = review({"parse": 2, "enrich": 2}, {"parse": 3, "enrich": 1}, utilization=0.3)
    UtilisationBand().apply(below, g)
    assert below.decided is None and below.want == {"parse": 2, "enrich": 1}


def test_the_reconfiguration_cost_blocks_a_scale_down_that_does_not_pay():
    g = guards(reconfig_cost_s=2.0, benefit_horizon_s=30.0)
    small = review({"parse": 8, "enrich": 8}, {"parse": 7, "enrich": 8})  # frees 1 x 30 < 2 x 31
    ReconfigurationCost().apply(small, g)
    assert small.want == {"parse": 8, "enrich": 8} and small.details["guard.benefit_slot_s"] == 30
    large = review({"parse": 8, "enrich": 8}, {"parse": 2, "enrich": 2})  # frees 12 x 30 > 2 x 20
    ReconfigurationCost().apply(large, g)
    assert large.want == {"parse": 2, "enrich": 2}


def test_a_burst_return_goes_back_to_the_vector_before_the_burst():
    g = guards()
    g.keep_burst_base({"parse": 1, "enrich": 1})
    r = review({"parse": 2, "enrich": 4}, {"parse": 2, "enrich": 4}, backlog=0)
    BurstReturn().apply(r, g)
    assert dict(r.decided.degrees) == {"parse": 1, "enrich": 1} and r.details["guard.burst_return"] == 1
    assert g.take_burst_base() is None  # taken once


def test_the_order_is_declared_once_and_a_controller_may_leave_a_stage_out():
    assert REVIEW_STAGES.index(StepFactors) < REVIEW_STAGES.index(Bounds)  # Flink: the factor, then the bounds
    assert REVIEW_STAGES[:2] == (IdleRelease, BurstReturn)
    g = Guards(check_params("guards", GUARD_PARAMS, {"guards": True}, GUARD_RULES), OPS, 8,
               stages=(UtilisationBand, Bounds))
    assert [type(s) for s in g.stages] == [Bounds, UtilisationBand]  # REVIEW_STAGES' order, whatever is given
    declared = [name for stage in REVIEW_STAGES for name in stage.PARAMS]
    assert len(declared) == len(set(declared)) and set(declared) <= set(GUARD_PARAMS)


@pytest.mark.parametrize("params, message", [
    ({"scale_down_max_factor": 1.5}, "scale_down_max_factor"),
    ({"scale_up_max_factor": -1}, "scale_up_max_factor"),
])
def test_bad_step_factors_are_refused_naming_the_parameter(params, message):
    with pytest.raises(ConfigError, match=message):
        build_controller("ds2", params, OPS, 8)


def test_the_guards_guide_lists_the_stages_in_their_order():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "guards.md").read_text()
    listed = " ".join(readme.split("The review's stages run in this order: ")[1].split("(`controllers")[0].split())
    assert listed == ", ".join(f"`{stage.__name__}`" for stage in REVIEW_STAGES)
