"""Settle (controllers/settle.py, the settle controller): the replay against hand-computed queues, the
greedy covering vector, the error budget, the arrival profile, and on the plant model a bursty load on which
settling takes far fewer actions than the default guards without giving up the SLO."""

import numpy as np
import pytest

from controllers import ConfigError, ControlLoop, RunContext, build_controller
from controllers.settle import Arrivals, StageModel, arrival_segments, covering_goal, covering_vector, replay
from controllers.types import ARRIVAL_BIN_S, arrival_profile
from simulator.plant import OperatorModel, PlantConfig, simulate
from workloads import Schedule, WorkloadError, load_workload, parse_workload

OPS = ("parse", "enrich", "aggregate", "sink")


def even(events, start=0.0, end=2.0):
    return Arrivals.from_segments([(start, end, events)])


# ---- the replay ------------------------------------------------------------------------------------------------

def test_a_batch_that_ends_within_the_slo_of_its_oldest_event_keeps_them_all():
    # 100 events over [0, 2] s, one batch at the 2 s trigger taking 1 s: the oldest waited 3 s of 5
    result = replay(even(100), lambda n: 1.0, trigger_s=2.0, slo_s=5.0)
    assert (result.on_time, result.judged, result.largest_batch) == (100, 100, 100)


def test_a_batch_that_ends_late_keeps_only_the_events_younger_than_the_slo():
    # the batch starts at 2 s and takes 4 s: it ends at 6 s, so only events that arrived from 1 s on are on time
    result = replay(even(100), lambda n: 4.0, trigger_s=2.0, slo_s=5.0)
    assert result.on_time == pytest.approx(50) and result.attainment == pytest.approx(0.5)


def test_a_batch_that_overruns_delays_the_next_one_which_reads_what_arrived_meanwhile():
    # 100 events/s over [0, 6]; batches take 0.01 s per event: the 2 s batch (200 events) ends at 4 s, the next
    # starts at once and reads 200 more, ends at 6 s; the last starts at 6 s with 200 more, ends at 8 s
    arrivals = Arrivals.from_segments([(0.0, 6.0, 600)])
    result = replay(arrivals, lambda n: 0.01 * n, trigger_s=2.0, slo_s=5.0)
    assert result.judged == pytest.approx(600) and result.on_time == pytest.approx(600)
    tight = replay(arrivals, lambda n: 0.01 * n, trigger_s=2.0, slo_s=3.5)
    # each batch's events waited up to 2 s before it started and it took 2 s: half a second of each batch is late
    assert tight.on_time == pytest.approx(600 - 3 * 50)


def test_the_error_budget_weighs_early_misses_against_the_window_to_come():
    result = replay(even(100), lambda n: 4.0, trigger_s=2.0, slo_s=5.0)  # 50 late of 100 seen over 2 s
    assert result.share(2.0) == pytest.approx(0.5)
    assert result.share(100.0) == pytest.approx(1 - 50 / (100 * 50))


def test_events_waiting_at_a_batch_start_are_replayed_as_the_one_batch_that_reads_them():
    # 1,000 events/s over [0, 4] s, a batch costs 1 ms per event. Replayed freely, batches at 2 s and 4 s read 2,000
    # each and end 2 s later: every event within 4 s. At a batch start at 4 s with 3,000 waiting since 1 s (the real
    # queue read up to 1 s), that batch reads all 3,000 and ends at 7 s: events older than 2 s miss a 5 s SLO.
    arrivals = Arrivals.from_segments([(0.0, 4.0, 4000)])
    free = replay(arrivals, lambda n: 1e-3 * n, trigger_s=2.0, slo_s=5.0)
    assert free.on_time == pytest.approx(4000)
    waiting = replay(arrivals, lambda n: 1e-3 * n, trigger_s=2.0, slo_s=5.0, waiting_since=1.0)
    assert waiting.judged == pytest.approx(4000) and waiting.largest_batch == pytest.approx(3000)
    assert waiting.on_time == pytest.approx(1000 + 2000)  # the replayed batch at 1 s, then the arrivals from 2 s on
    assert arrivals.time_of(arrivals.total - 3000) == pytest.approx(1.0)


def test_a_burst_still_arriving_is_replayed_with_the_batch_after_the_waiting_one():
    # as above, the batch at 4 s reads the 3,000 waiting and ends at 7 s; with the events arriving at 1,000/s, the
    # next batch starts at 7 s (it overran the 6 s trigger) on the 3,000 that arrived meanwhile and ends at 10 s:
    # those of [4, 5) s are late for a 5 s SLO. They count as judged and late since, and apart as late_next.
    arrivals = Arrivals.from_segments([(0.0, 4.0, 4000)])
    both = replay(arrivals, lambda n: 1e-3 * n, trigger_s=2.0, slo_s=5.0, waiting_since=1.0, next_rate=1000.0)
    assert both.judged == pytest.approx(7000) and both.on_time == pytest.approx(3000 + 2000)
    assert (both.late_last, both.late_next, both.late_since) == pytest.approx((1000, 1000, 2000))
    assert both.largest_batch == pytest.approx(3000)
    # without events waiting there is no batch about to start, and nothing to project after it
    free = replay(arrivals, lambda n: 1e-3 * n, trigger_s=2.0, slo_s=5.0, next_rate=1000.0)
    assert (free.judged, free.late_next) == pytest.approx((4000, 0))


def test_late_events_are_counted_apart_from_a_time_on():
    # one batch at 2 s taking 4 s: events of [0, 1) are late; from 0.5 s on, half of those
    result = replay(even(100), lambda n: 4.0, trigger_s=2.0, slo_s=5.0, since=0.5)
    assert result.judged - result.on_time == pytest.approx(50) and result.late_since == pytest.approx(25)
    assert result.new_share(2.0) == pytest.approx(0.75) and result.share(2.0) == pytest.approx(0.5)


def test_segments_follow_the_sources_profile_or_else_the_last_trigger():
    assert arrival_segments(10.0, 10.6, 9, (1, 5, 3), spread_s=2.0) == [
        (10.0, 10.0 + ARRIVAL_BIN_S, 1.0), (10.0 + ARRIVAL_BIN_S, 10.0 + 2 * ARRIVAL_BIN_S, 5.0),
        (10.0 + 2 * ARRIVAL_BIN_S, 10.6, 3.0)]
    # a batch that overran: its 9,000 arrivals are replayed within the last trigger, not spread over 6 s
    assert arrival_segments(10.0, 16.0, 9000, None, spread_s=2.0) == [(14.0, 16.0, 9000.0)]


def test_the_arrival_profile_counts_what_became_due_in_each_bin():
    due = lambda t: int(1000 * t)  # noqa: E731  (1,000 events per second)
    assert arrival_profile(due, 2.0, 2.6) == (250, 250, 100)
    assert arrival_profile(due, 2.0, 2.0) == ()


# ---- the covering vector -----------------------------------------------------------------------------------------

def model(per_record_enrich=1e-3):
    """A fixed 0.3 s per batch; enrich 1 ms per record, the others 10 µs; linear speed-up up to 8."""
    costs = {"parse": 1e-5, "enrich": per_record_enrich, "aggregate": 1e-5, "sink": 1e-5}
    return StageModel(0.3, {op: 1.0 for op in OPS}, costs, {op: 0.0 for op in OPS},
                      {op: [float(p) for p in range(1, 9)] for op in OPS})


def test_a_degree_beyond_the_slot_bound_replays_at_the_bounds_speed_up():
    # a run started above the slots (initial_degree 7 on local[4]: a tuning trial found it) is replayed, not refused
    bounded = StageModel(0.3, {"enrich": 1.0}, {"enrich": 1e-3}, {"enrich": 0.0}, {"enrich": [1.0, 2.0, 3.0, 4.0]})
    assert bounded.stage_s("enrich", 7, 4000) == bounded.stage_s("enrich", 4, 4000) == pytest.approx(1.0)


def test_the_covering_vector_is_the_least_that_reaches_the_target():
    # 3,000 events in one 2 s trigger: enrich alone takes 3 s at degree 1, 1.5 s at 2, 1 s at 3
    arrivals = even(3000)
    floor, top = {op: 1 for op in OPS}, {op: 8 for op in OPS}
    vector, result = covering_vector(model(), arrivals, floor, top, 2.0, 3.5, target=0.99, window_s=2.0)
    assert vector == {"parse": 1, "enrich": 3, "aggregate": 1, "sink": 1} and result.attainment >= 0.99
    lower = replay(arrivals, lambda n: model().batch_s({**vector, "enrich": 2}, n), 2.0, 3.5)
    assert lower.attainment < 0.99


def test_with_a_stage_share_a_raise_takes_only_operators_whose_stage_is_that_share_of_the_batch():
    # 12,000 events in one trigger, enrich 1 ms and parse 0.2 ms per record, the others 10 µs: no vector keeps the
    # oldest within 4 s, and the greedy raises every operator towards the bound (4), aggregate and sink included,
    # for stages of 0.03-0.04 s in a 4-s batch. With settle_stage_share 0.1 those two stay at 1; with 0.2, parse
    # stops where its stage falls below a fifth of the operators' stage time; with 1, enrich alone is raised. A
    # burst the bottleneck carries is sized as before.
    costs = {"parse": 2e-4, "enrich": 1e-3, "aggregate": 1e-5, "sink": 1e-5}
    heavy = StageModel(0.3, {op: 1.0 for op in OPS}, costs, {op: 0.0 for op in OPS},
                       {op: [float(p) for p in range(1, 5)] for op in OPS})
    floor, top = {op: 1 for op in OPS}, {op: 4 for op in OPS}

    def vector(arrivals, share, stage_model=heavy, slo=4.0):
        return covering_vector(stage_model, arrivals, floor, top, 2.0, slo, target=0.99, window_s=2.0,
                               stage_share=share)[0]

    burst = even(12000)
    assert vector(burst, 0.0)["aggregate"] > 1 and vector(burst, 0.0)["sink"] > 1
    assert vector(burst, 0.1) == {"parse": 4, "enrich": 4, "aggregate": 1, "sink": 1}
    narrow = vector(burst, 0.2)
    assert narrow["enrich"] == 4 and 1 < narrow["parse"] < 4 and narrow["aggregate"] == narrow["sink"] == 1

    def parse_share(degree):
        at = {**narrow, "parse": degree}
        return heavy.stage_s("parse", degree, 12000) / sum(heavy.stage_s(op, at[op], 12000) for op in OPS)

    assert parse_share(narrow["parse"] - 1) >= 0.2 > parse_share(narrow["parse"])
    assert vector(burst, 1.0) == {"parse": 1, "enrich": 4, "aggregate": 1, "sink": 1}
    assert vector(even(3000), 0.2, model(), 3.5) == vector(even(3000), 0.0, model(), 3.5) == \
        {"parse": 1, "enrich": 3, "aggregate": 1, "sink": 1}


def test_where_no_vector_reaches_the_target_it_stops_short_of_the_slot_bound():
    # enrich 10 ms per record: 3,000 events take 3.75 s even at 8; the SLO 3.5 s is out of reach for the oldest
    arrivals = even(3000)
    floor, top = {op: 1 for op in OPS}, {op: 8 for op in OPS}
    best = replay(arrivals, lambda n: model(1e-2).batch_s(top, n), 2.0, 3.5)
    vector, result = covering_vector(model(1e-2), arrivals, floor, top, 2.0, 3.5, target=0.99, window_s=2.0)
    assert best.attainment < 0.99
    assert result.attainment >= 0.99 * best.attainment and sum(vector.values()) < sum(top.values())


def test_on_a_load_no_vector_carries_it_holds_the_least_within_the_late_ratio_of_the_best():
    # enrich 4 ms per record: 3,000 events in one trigger; at degree 8 the batch ends 1.8 s after its 2 s start, so
    # the oldest 15 % miss a 3.5 s SLO; a late ratio of 1.5 allows 22.5 % late and holds fewer degrees than 1.0
    arrivals = even(3000)
    floor, top = {op: 1 for op in OPS}, {op: 8 for op in OPS}
    best = replay(arrivals, lambda n: model(4e-3).batch_s(top, n), 2.0, 3.5)
    assert 0.8 < best.attainment < 0.99
    tight, _ = covering_vector(model(4e-3), arrivals, floor, top, 2.0, 3.5, 0.99, 2.0, late_ratio=1.0)
    loose, result = covering_vector(model(4e-3), arrivals, floor, top, 2.0, 3.5, 0.99, 2.0, late_ratio=1.5,
                                    late_points=1.0)
    late_best = best.judged - best.on_time
    assert result.judged - result.on_time <= 1.5 * late_best + 1e-6
    assert sum(loose.values()) < sum(tight.values())
    # ... and never more than late_points of the events beyond the best's late ones, whatever the ratio
    capped, result = covering_vector(model(4e-3), arrivals, floor, top, 2.0, 3.5, 0.99, 2.0, late_ratio=4.0,
                                     late_points=0.02)
    assert result.judged - result.on_time <= late_best + 0.02 * result.judged + 1e-6
    assert sum(capped.values()) > sum(covering_vector(model(4e-3), arrivals, floor, top, 2.0, 3.5, 0.99, 2.0,
                                                      late_ratio=4.0, late_points=1.0)[0].values())


def test_a_raise_is_sized_on_the_arrivals_since_the_held_vector_was_chosen_not_on_an_earlier_peak():
    # an opening peak no vector carries (12,000 events in 2 s: late even at 8), then 1,500 events per second from
    # 10 s; judged on everything in memory the search buys the slot bound for the opening's late events, judged on the
    # arrivals since 10 s it is the least vector that carries them (enrich 3; at 2 some of them are late)
    arrivals = Arrivals.from_segments([(0.0, 2.0, 12000), (2.0, 10.0, 0), (10.0, 20.0, 15000)])
    floor, top = {op: 1 for op in OPS}, {op: 8 for op in OPS}
    everything, _ = covering_vector(model(), arrivals, floor, top, 2.0, 3.5, 0.99, 20.0, late_ratio=2.0,
                                    late_points=0.05)
    since, result = covering_vector(model(), arrivals, floor, top, 2.0, 3.5, 0.99, 20.0, late_ratio=2.0,
                                    late_points=0.05, since=10.0)
    assert everything["enrich"] == 8
    assert since == {**floor, "enrich": 3} and result.late_since == 0 and result.new_share(20.0) == 1.0
    fewer = replay(arrivals, lambda n: model().batch_s({**since, "enrich": 2}, n), 2.0, 3.5, since=10.0)
    assert fewer.late_since > 0


def test_a_raise_is_judged_from_the_real_queue_after_the_choice_not_behind_a_re_run_of_its_first_batch():
    """On Spark the real-time Google trace's settle chose a vector as the opening peak's batch (53,600 events)
    started; replayed from the start of the memory, that batch was re-run at each candidate, the arrivals after it
    looked late behind it, and every operator went to the slot bound about 30 s in. Here: 24,000 events in the first
    second, then 1,500/s; enrich 4 chosen at 2 s, its batch of 25,500 ran to 9.44 s with 11,160 waiting."""
    arrivals = Arrivals.from_segments([(0.0, 1.0, 24000), (1.0, 40.0, 1500 * 39)])
    floor, top, held = {op: 1 for op in OPS}, {op: 8 for op in OPS}, {**{op: 1 for op in OPS}, "enrich": 4}
    end = 2.0 + model().batch_s(held, 25500)
    anchor = (end, 1500 * (end - 2.0))
    rerun, _ = covering_vector(model(), arrivals, floor, top, 2.0, 5.0, 0.99, 40.0, late_ratio=2.0,
                               late_points=0.05, since=2.0)
    assert rerun["enrich"] == 8  # the re-run's first batch at enrich 8 keeps every later arrival on time
    vector, result = covering_vector(model(), arrivals, floor, top, 2.0, 5.0, 0.99, 40.0, late_ratio=2.0,
                                     late_points=0.05, since=2.0, anchor=anchor)
    # from the real queue: one degree more speeds the batch that reads the 11,160 waiting; the slot bound is not bought
    assert vector == {**held, "enrich": 5} and result.judged == pytest.approx(arrivals.total)
    held_from_anchor = replay(arrivals, lambda n: model().batch_s(held, n), 2.0, 5.0, since=2.0, anchor=anchor)
    assert held_from_anchor.largest_batch == pytest.approx(anchor[1])
    # events that had waited the SLO when that batch ended are late at any vector: none is judged on them
    assert held_from_anchor.late_since < replay(arrivals, lambda n: model().batch_s(held, n), 2.0, 5.0,
                                                since=2.0).late_since


def test_the_anchor_is_the_first_batch_end_after_settle_chose_a_vector():
    from dataclasses import replace

    ones = {op: 1 for op in OPS}
    g = guards()
    burst = history(g, ones)
    raised = g.batch_start(20000, ones, 2.0, time_s=burst.time_s - 9.3)
    assert raised is not None and g.settle.anchor is None
    g.observe(replace(snapshot(10, burst.time_s - 9.3 + 3.0, 20000, dict(raised.degrees)), backlog=4500))
    assert g.settle.anchor == (burst.time_s - 9.3 + 3.0, 4500)
    g.observe(replace(snapshot(11, burst.time_s - 9.3 + 5.0, 4500, dict(raised.degrees)), backlog=0))
    assert g.settle.anchor == (burst.time_s - 9.3 + 3.0, 4500)  # the first batch end after the choice only


def test_the_covering_goal_is_the_target_where_reachable_else_the_best_less_the_slack():
    assert covering_goal(0.999, 0.995, 2.0, 0.05) == 0.995
    assert covering_goal(0.99, 0.995) == pytest.approx(0.985)  # ratio 1: the best less one error budget
    assert covering_goal(0.98, 0.995, 2.0, 0.05) == pytest.approx(0.96)  # twice the best's 2 % late
    assert covering_goal(0.50, 0.995, 2.0, 0.05) == pytest.approx(0.45)  # at most 5 points more


# ---- on the plant --------------------------------------------------------------------------------------------------

PLANT = PlantConfig(tuple(OperatorModel(name, service, task_overhead_s=0.01) for name, service in
                          (("parse", 10e-6), ("enrich", 160e-6), ("aggregate", 15e-6), ("sink", 5e-6))),
                    trigger_interval_s=2.0, slots=4, batch_overhead_s=0.3, max_degree=8)
SLO_S = 5.0


def random_peaks(seed):
    return {"name": "random-peaks", "profile": "random_peaks", "duration_s": 180, "seed": seed,
            "arrivals": "poisson", "noise": {"sigma": 0.2, "step_s": 1},
            "params": {"base": 1500, "peak": 12000, "first_at_s": 15, "first_peak_s": 8, "min_peak_s": 4,
                       "max_peak_s": 15, "min_trough_s": 10, "max_trough_s": 35}}


def simulated(controller, params, arrivals, plant=PLANT, duration_s=None, horizon_s=0.0, noise_seed=None):
    """(actions, SLO attainment, the run) of `controller` on the plant; `horizon_s` the run length it is told (0:
    a stream that runs until stopped)."""
    ctl = build_controller(controller, params, OPS, plant.max_degree)
    ctl.bind(RunContext(trigger_s=plant.trigger_interval_s, slo_latency_s=SLO_S, max_degree=plant.max_degree,
                        slots=plant.slots, duration_s=horizon_s))
    result = simulate(plant, arrivals, ControlLoop(ctl), duration_s or arrivals.spec.duration_s,
                      noise_seed=noise_seed)
    return sum(d.changed for d in result.decisions), float(np.mean(result.latencies() <= SLO_S)), result


def run(controller, spec, **params):
    return simulated(controller, params, Schedule(parse_workload(spec, source="test")), duration_s=180.0)


@pytest.mark.parametrize("controller", ["ds2", "threshold"])
def test_on_bursty_load_settling_takes_far_fewer_actions_than_the_default_guards(controller):
    """Random peaks of 8x the base: the default guards meet each peak with a raise and a return (about 25 actions
    per run); settled, a handful, within 10 SLO points of the defaults."""
    default = [run(controller, random_peaks(seed)) for seed in (1, 2, 3)]
    settled = [run("settle", random_peaks(seed)) for seed in (1, 2, 3)]
    assert sum(r[0] for r in settled) <= 0.3 * sum(r[0] for r in default), (default, settled)
    assert np.mean([r[1] for r in settled]) >= np.mean([r[1] for r in default]) - 0.10
    decisions = [d for d in settled[0][2].decisions if d.changed]
    assert decisions and all("settle" in d.reason for d in decisions)
    assert all("guard.settle_attainment" in d.details for d in decisions)


def test_a_settled_vector_is_lowered_only_after_settle_down_s():
    spec = {"name": "one-burst", "profile": "flash_crowd", "duration_s": 180, "seed": 1,
            "params": {"base": 1500, "peak": 12000, "at_s": 20, "rise_s": 1, "decay_s": 4}}
    for down_s in (30.0, 90.0):
        _, _, result = run("settle", spec, settle_down_s=down_s, settle_memory_s=40)
        changes = [d for d in result.decisions if d.changed]
        ups = [d for d in changes if sum(d.after.values()) > sum(d.before.values())]
        downs = [d for d in changes if sum(d.after.values()) < sum(d.before.values())]
        assert ups and downs, changes
        assert downs[0].time_s - ups[-1].time_s >= down_s


def test_a_bounded_run_shorter_than_the_memory_spends_its_error_budget_over_itself():
    """The nightly step (1,500 -> 6,000 ev/s at 20 s, 60 s): with the budget planned over settle_memory_s (300 s)
    settle waits for late events the run never outlives (raise at 27.9 s, 97.2 %); over the run's 60 s it raises
    at 24.6 s and keeps every event on time."""
    arrivals = Schedule(parse_workload({**load_workload("step").to_dict(), "seed": 1}, source="test"))

    def attainment(horizon_s):
        actions, slo, _ = simulated("settle", {}, arrivals, horizon_s=horizon_s)
        return slo, actions

    unbounded, bounded = attainment(0.0), attainment(arrivals.spec.duration_s)
    assert unbounded[0] < 0.98 and bounded[0] >= 0.995 and bounded[1] == unbounded[1] == 1


@pytest.mark.parametrize("params, message", [
    ({"settle_target": 1.0}, "parameter 'settle_target' must be < 1.0"),
    ({"settle_target": 0.2}, "parameter 'settle_target' must be >= 0.5"),
    ({"settle_memory_s": 0}, "parameter 'settle_memory_s' must be > 0.0"),
    ({"settle_down_s": -1}, "parameter 'settle_down_s' must be >= 0.0"),
    ({"settle_trim_share": 1.5}, "parameter 'settle_trim_share' must be <= 1.0"),
    ({"settle_stage_share": 1.5}, "parameter 'settle_stage_share' must be <= 1.0"),
])
def test_bad_settle_settings_are_rejected_naming_the_option(params, message):
    with pytest.raises(ConfigError) as err:
        build_controller("settle", params, OPS, 8)
    assert message in str(err.value)


def test_the_replay_reads_an_operators_speed_up_over_the_memory_where_the_bursts_weigh_most():
    """On Spark, enrich at degree 4 showed 4.0 on the burst batches and 2.2 on the small batches between them: the
    guards' curve (the last ten batches at a degree) forgets the bursts once their vector is held; the replay,
    which predicts the bursts, keeps them."""
    from controllers import OperatorMetrics, Snapshot

    g = guards()

    def batch(i, records, busy, span):
        ops = tuple(OperatorMetrics(op, 4 if op == "enrich" else 1, records, records,
                                    busy if op == "enrich" else 0.01, 4 if op == "enrich" else 1, span,
                                    span if op == "enrich" else 0.01) for op in OPS)
        return Snapshot(batch_id=i, time_s=2.0 * (i + 1), trigger_interval_s=2.0, batch_duration_s=span + 0.3,
                        interval_s=2.0, arrivals=records, records_read=records, backlog=0, latency_p50_s=None,
                        latency_p95_s=None, latency_p99_s=None, operators=ops, max_degree=8)

    g.observe(batch(0, 40000, 6.4, 1.6))  # a burst: 4 tasks busy 1.6 s each
    for i in range(1, 13):
        g.observe(batch(i, 1000, 0.2, 0.1))  # small batches: a speed-up of 2
    assert g.controller.guards.speedup("enrich", 4) == pytest.approx(2.0)
    assert g.settle.speedup("enrich", 4) == pytest.approx((6.4 + 12 * 0.2) / (1.6 + 12 * 0.1))
    assert g.settle.speedup("enrich", 4) > 3.0


# ---- when the guards act ---------------------------------------------------------------------------------------

class Settled:
    """The settle controller driven by hand, as the loop drives it: batches observed, asked at a batch start, a
    decision after a batch (the trigger 2 s, the SLO 5 s, 8 slots)."""

    def __init__(self, **params):
        self.controller = build_controller("settle", params, OPS, 8)
        self.bind(5.0, slots=8)

    def bind(self, slo_latency_s, slots, horizon_s=0.0):
        self.controller.bind(RunContext(trigger_s=2.0, slo_latency_s=slo_latency_s, slots=slots,
                                        duration_s=horizon_s))

    @property
    def settle(self):
        return self.controller.settle

    def observe(self, snapshot):
        self.controller.guards.observe(snapshot)
        self.settle.observe(snapshot)

    def batch_start(self, pending, current, trigger_s, oldest_wait_s=None, time_s=None, recent_arrivals=None):
        assert trigger_s == 2.0
        return self.controller.at_batch_start(pending, time_s, current, oldest_wait_s, recent_arrivals)

    def review(self, snapshot):
        return self.controller.decide(snapshot)


def guards(**params):
    return Settled(**params)


def snapshot(i, time_s, events, degrees, enrich_per_record_s=1e-3):
    """A batch that read `events`, all due in its 2 s interval; enrich takes `enrich_per_record_s` per record
    (its tasks all at once), the other operators 10 µs, 0.3 s fixed."""
    from controllers import OperatorMetrics, Snapshot

    ops = []
    for op in OPS:
        busy = events * (enrich_per_record_s if op == "enrich" else 1e-5)
        ops.append(OperatorMetrics(op, degrees[op], events, events, busy, degrees[op], busy / degrees[op],
                                   busy / degrees[op]))
    duration = 0.3 + sum(o.span_s for o in ops)
    return Snapshot(batch_id=i, time_s=time_s, trigger_interval_s=2.0, batch_duration_s=duration, interval_s=2.0,
                    arrivals=events, records_read=events, backlog=0, latency_p50_s=None, latency_p95_s=None,
                    latency_p99_s=None, operators=tuple(ops), max_degree=8)


def history(g, degrees, enrich_per_record_s=1e-3):
    """Ten quiet batches of 1,000 events and a burst of 9,000 (9.3 s at enrich 1: most of it late)."""
    for i in range(10):
        g.observe(snapshot(i, 2.0 * (i + 1), 1000, degrees, enrich_per_record_s))
    return snapshot(10, 22.0 + 9.3, 9000, degrees, enrich_per_record_s)


def test_a_raise_held_at_a_batch_start_is_in_the_next_reviews_record():
    """A batch start that holds a raise the budget called for changes nothing and so makes no decision; the review
    after the batch records which test held it (here the repay test: 100 events waiting 1 s before the run's end
    cannot save the error budget a raise is for), once."""
    ones = {op: 1 for op in OPS}
    g = guards()
    g.bind(5.0, slots=8, horizon_s=32.3)
    burst = history(g, ones)
    g.observe(burst)
    assert g.batch_start(100, ones, 2.0, time_s=burst.time_s + 0.01) is None
    after = snapshot(11, burst.time_s + 0.6, 100, ones)
    held = g.review(after).details["guard.settle_start_held"]
    assert held.startswith(f"at {burst.time_s + 0.01:.1f} s, 100 events waiting: repay: a raise to ")
    later = snapshot(12, burst.time_s + 0.9, 0, ones)
    assert "guard.settle_start_held" not in g.review(later).details


def test_a_review_raises_itself_only_where_the_runner_does_not_ask_at_batch_starts():
    ones = {op: 1 for op in OPS}
    alone = guards()
    decision = alone.review(history(alone, ones))
    assert decision.degrees["enrich"] > 1
    asked = guards()
    burst = history(asked, ones)
    assert asked.batch_start(1000, ones, 2.0, time_s=20.0) is None  # a quiet batch: no raise, but it asks there
    decision = asked.review(burst)
    assert dict(decision.degrees) == ones and "left to the next batch start" in decision.reason
    raised = asked.batch_start(1000, ones, 2.0, time_s=burst.time_s + 0.01)
    assert raised is not None and raised.degrees["enrich"] > 1


def test_in_a_bounded_run_no_raise_is_taken_that_the_rest_of_the_run_cannot_repay():
    """The burst of `history` ends at 31.3 s: a review raises enrich where the run goes on, not where it ends 1 s
    later (the burst's batch has run; a raise would pay only for what is left)."""
    ones = {op: 1 for op in OPS}
    for horizon_s, raised in ((0.0, True), (300.0, True), (32.3, False)):
        g = guards()
        g.bind(5.0, slots=8, horizon_s=horizon_s)
        decision = g.review(history(g, ones))
        assert (decision.degrees["enrich"] > 1) is raised, (horizon_s, decision.reason)
        # the decision record says which test held a raise the budget called for
        assert ("guard.settle_no_raise" in decision.details) is not raised
    assert decision.details["guard.settle_no_raise"].startswith("repay: a raise to ")
    assert "s left of the run" in decision.reason and "no raise, repay" in decision.reason
    # ... but at a batch start the waiting events are saved now: a burst waiting 2 s before the end is met
    g = guards()
    g.bind(5.0, slots=8, horizon_s=24.0)
    history(g, ones)
    start = g.batch_start(20000, ones, 2.0, time_s=22.0)
    assert start is not None and start.degrees["enrich"] > 1


def test_a_held_vector_is_raised_for_new_late_arrivals_not_for_the_history_it_was_chosen_on():
    """Once settle has chosen a vector, the late events of arrivals before it do not raise it again: on Spark the
    same history, replayed as the cost estimates moved, raised held vectors for no new arrival."""
    ones = {op: 1 for op in OPS}
    g = guards()
    chosen = dict(g.review(history(g, ones)).degrees)
    # the costs now read 40 % higher: replayed at these costs, the burst is partly late at the chosen vector
    for i in range(11, 16):
        g.observe(snapshot(i, 31.3 + 2.0 * (i - 10), 1000, chosen, 1.4e-3))
    last = snapshot(16, 31.3 + 12.0, 1000, chosen, 1.4e-3)
    assert dict(g.review(last).degrees) == chosen
    g.settle.chosen = None  # the same vector, not chosen by settle: the burst's late events count
    assert g.review(snapshot(17, 31.3 + 14.0, 1000, chosen, 1.4e-3)).degrees["enrich"] > \
        chosen["enrich"]


def test_on_a_load_no_vector_carries_a_raise_that_buys_less_than_the_slack_is_not_taken():
    """The real-time Google trace (one-second peaks beyond the slots): a held vector that keeps what the best vector
    keeps less the late ratio's slack is not raised for a point or two (settle_min_gain), which on Spark spent an
    action at 74 s for 84.7 % -> 87.0 % and one at 173 s of a 180 s run. In the noisy plant, over four noise seeds
    (one seed's runs go either way): 17 actions -> 12 at no lower attainment. A stream that runs until stopped (the
    run's length not given): in a bounded run the last raises are also weighed against what is left of it."""
    from studies.burst_wait_budget import NOISY

    try:
        arrivals = Schedule(parse_workload({**load_workload("bursty-google-tasks-1s").to_dict(), "seed": 1},
                                           source="test"))
    except WorkloadError as exc:
        pytest.skip(f"the Google 2011 task events trace is not on this machine: {exc}")

    def runs(min_gain):
        return [simulated("settle", {"settle_min_gain": min_gain}, arrivals, NOISY, noise_seed=n)
                for n in (0, 1, 2, 3)]

    taken, skipped = runs(False), runs(True)
    assert sum(r[0] for r in skipped) < sum(r[0] for r in taken)
    assert np.mean([r[1] for r in skipped]) >= np.mean([r[1] for r in taken]) - 0.01
    # the held raises are on record, with the test that held them
    held = [d for r in skipped for d in r[2].decisions if "guard.settle_no_raise" in d.details]
    assert held and all(d.details["guard.settle_no_raise"].startswith("min gain: ") for d in held)
    assert not [d for r in taken for d in r[2].decisions if "guard.settle_no_raise" in d.details]


def test_a_raise_for_events_that_waited_long_is_trimmed_once_to_what_the_trigger_grid_needed():
    """Random peaks of 8x the base: a raise at a batch start rescues a burst whose events have waited, and takes
    cheap operators too; the review after its batch lowers once to the least vector that, replayed on the trigger
    grid over the same arrivals, keeps what the raised one keeps (less one error budget). Over three seeds: less
    cost, at most one more action per raise, the SLO within two points; settle_trim_share=1 turns it off."""
    trimmed = [run("settle", random_peaks(seed)) for seed in (1, 2, 3)]
    untrimmed = [run("settle", random_peaks(seed), settle_trim_share=1.0) for seed in (1, 2, 3)]
    assert sum(r[2].slot_seconds for r in trimmed) <= 0.95 * sum(r[2].slot_seconds for r in untrimmed)
    assert np.mean([r[1] for r in trimmed]) >= np.mean([r[1] for r in untrimmed]) - 0.02
    trims = 0
    for actions, _, result in trimmed:
        changes = [d for d in result.decisions if d.changed]
        for before, trim in zip(changes, changes[1:]):
            if "trim after the raise" not in trim.reason:
                continue
            trims += 1
            assert sum(before.after.values()) > sum(before.before.values())  # it follows a raise directly
            assert sum(trim.after.values()) <= 0.75 * sum(trim.before.values())  # and frees a quarter at least
            assert all(trim.after[op] <= trim.before[op] for op in OPS)
            assert all(trim.after[op] >= before.before[op] for op in OPS)  # never below the vector before the raise
        raises = sum(sum(d.after.values()) > sum(d.before.values()) for d in changes)
        assert actions <= 2 * raises
    assert trims >= 1
    assert not any("trim" in d.reason for r in untrimmed for d in r[2].decisions if d.changed)


def test_a_trimmed_vector_raised_again_ends_the_trims_of_the_run():
    """Raise, trim, raise again is churn (the held-out Alibaba LoRA trace in the plant: 6 actions where holding took
    3.5): after a trimmed vector had to be raised, later raises are held as they are."""
    g = guards()
    raised = {**{op: 2 for op in OPS}, "enrich": 4}
    trimmed = {**{op: 1 for op in OPS}, "enrich": 4}
    ones = {op: 1 for op in OPS}
    g.settle.chose(raised, 10.0, raised_from=ones)
    assert g.settle.trim_due
    g.settle.chose(trimmed, 12.0, trimmed=True)
    g.settle.chose(raised, 40.0, raised_from=trimmed)  # the trim was wrong
    assert not g.settle.trim_due
    g.settle.chose({**raised, "sink": 3}, 60.0, raised_from=raised)
    assert not g.settle.trim_due


def test_with_rate_sizing_a_raise_for_a_burst_still_arriving_also_carries_the_next_batch():
    """A burst of 4,000 ev/s has arrived for the last 2 s of quiet batches (1,000 per 2 s): the raise for the 8,000
    waiting sizes enrich for them; with `settle_rate_sizing` it goes on up until the batch after them, on 4,000 ev/s
    arriving meanwhile, is on time too. On Spark the Alibaba trace's burst took a second raise 3.5 s after the
    first. The ledger's details keep the rate it was sized for; off (the default), none."""
    ones = {op: 1 for op in OPS}
    profile = tuple([1000] * int(round(2.0 / ARRIVAL_BIN_S)))  # 1,000 per 0.25 s bin: 4,000 ev/s

    def raise_at_start(**params):
        g = guards(**params)
        for i in range(10):
            g.observe(snapshot(i, 2.0 * (i + 1), 1000, ones))
        return g.batch_start(8000, ones, 2.0, oldest_wait_s=2.0, time_s=22.0, recent_arrivals=profile)

    plain, sized = raise_at_start(), raise_at_start(settle_rate_sizing=True)
    assert plain is not None and sized is not None
    assert sized.degrees["enrich"] > plain.degrees["enrich"] > 1
    assert all(sized.degrees[op] >= plain.degrees[op] for op in OPS)
    assert sized.details["guard.settle_next_rate"] == pytest.approx(4000, rel=0.01)
    assert "with the next batch at 4000 ev/s" in sized.reason
    assert plain.details["guard.settle_next_rate"] == 0.0 and "next batch" not in plain.reason


def test_the_trim_would_undo_a_raise_the_quiet_load_does_not_need_and_keeps_one_a_burst_needs():
    """`SettleMode.trim_would_undo`: on quiet batches a raise of enrich is taken back at once by the trim (the batch-start rule
    then holds the raise where the waiting batch is on time anyway); after a burst the vector before the raise is
    late, and the trim keeps the raise. With the trims off nothing is undone."""
    ones = {op: 1 for op in OPS}
    raised = {**ones, "enrich": 3}
    quiet = guards()
    for i in range(11):
        quiet.observe(snapshot(i, 2.0 * (i + 1), 1000, ones))
    assert quiet.settle.trim_would_undo(ones, raised, 2.0)
    assert not quiet.settle.trim_would_undo(ones, ones, 2.0)  # no raise, nothing to undo
    untrimmed = guards(settle_trim_share=1.0)
    for i in range(11):
        untrimmed.observe(snapshot(i, 2.0 * (i + 1), 1000, ones))
    assert not untrimmed.settle.trim_would_undo(ones, raised, 2.0)
    burst = guards()
    burst.observe(history(burst, ones))
    assert not burst.settle.trim_would_undo(ones, raised, 2.0)
