"""The micro-batch model: batches read what is due, degrees beyond the slots add waves, a decision takes effect in
the next batch, and the same inputs give the same run."""
import math
from dataclasses import replace

import numpy as np
import pytest

from controllers import ControlLoop, build_controller
from controllers.cost_model import OperatorModel, operator_timing
from simulator.plant import ConstantArrivals, chain, simulate

OPS = ("parse", "enrich", "aggregate", "sink")


PLANT = chain([("parse", 0.00002), ("enrich", 0.0004), ("aggregate", 0.00005), ("sink", 0.00002)],
              trigger_interval_s=2.0, slots=4, max_degree=8)


def test_plant_static_congests_when_capacity_is_short():
    # enrich needs 3000/s * 0.4 ms = 1.2 s of work per second: more than one task can give
    run = simulate(PLANT, ConstantArrivals(3000, 60), ControlLoop(build_controller("static", {}, OPS, 8)), 60)
    durations = [b.snapshot.batch_duration_s for b in run.batches]
    assert durations[-1] > durations[1] * 3, "batches grow without bound"
    assert run.latencies().max() > 20


def test_plant_threshold_scales_enrich_and_keeps_latency_bounded():
    loop = ControlLoop(build_controller("threshold", {"cooldown_s": 4}, OPS, 8))
    run = simulate(PLANT, ConstantArrivals(3000, 60), loop, 60)
    final = run.batches[-1].snapshot.degrees
    assert final["enrich"] >= 2 and final["parse"] == 1
    assert sum(1 for d in run.decisions if d.changed) >= 1
    tail = [b.snapshot.latency_p99_s for b in run.batches if b.start_s > 30]
    assert max(tail) < 6


def test_plant_is_deterministic():
    def once():
        loop = ControlLoop(build_controller("threshold", {}, OPS, 8))
        return [(b.snapshot.batch_duration_s, tuple(b.snapshot.degrees.values()))
                for b in simulate(PLANT, ConstantArrivals(2500, 30), loop, 30).batches]

    assert once() == once()


def test_plant_decision_takes_effect_in_the_next_batch():
    loop = ControlLoop(build_controller("threshold", {"cooldown_s": 0}, OPS, 8))
    run = simulate(PLANT, ConstantArrivals(3000, 20), loop, 20)
    for record in run.decisions:
        if record.changed and record.batch_id + 1 < len(run.batches):
            assert run.degrees_at(record.batch_id + 1) == record.after


def test_degrees_beyond_the_slots_add_waves_not_speed():
    op = OperatorModel("enrich", service_s=0.001, task_overhead_s=0.0)
    span_4, busy_4 = operator_timing(op, 4000, 4, slots=4)
    span_8, busy_8 = operator_timing(op, 4000, 8, slots=4)
    assert span_4 == pytest.approx(1.0) and busy_4 == pytest.approx(4.0)
    assert span_8 == pytest.approx(1.0), "8 tasks on 4 slots: two waves of half the work each"
    assert busy_8 == pytest.approx(busy_4)


def test_a_stage_pays_each_tasks_launch_beyond_its_work():
    op = OperatorModel("parse", service_s=0.0, task_overhead_s=0.0, task_launch_s=0.025)
    assert operator_timing(op, 1000, 8, slots=4) == (pytest.approx(0.175), 0.0), "launches are wall time, not busy"
    assert operator_timing(op, 1000, 1, slots=4)[0] == 0.0, "a one-task stage: its launch is in what was measured"


def test_every_due_event_is_read_once_and_latency_counts_from_its_scheduled_arrival():
    run = simulate(PLANT, ConstantArrivals(1000, 10), ControlLoop(build_controller("static", {}, OPS, 8)), 10)
    assert sum(b.snapshot.records_read for b in run.batches) == 10_000
    first = run.batches[0]
    assert first.latencies_s.max() == pytest.approx(first.end_s - 0.0), "event 0 arrives at 0, leaves at batch end"
    assert all(b.latencies_s.min() >= 0 for b in run.batches)


NOISY = chain([("parse", 0.00002), ("enrich", 0.0004), ("aggregate", 0.00005), ("sink", 0.00002)],
              trigger_interval_s=2.0, slots=4, max_degree=8, batch_overhead_s=0.3, batch_overhead_sigma=0.3,
              service_sigma={"enrich": 0.2})


def _durations(plant, noise_seed, rate=1500, duration_s=60):
    loop = ControlLoop(build_controller("static", {"degree": 2}, OPS, 8))
    return [b.snapshot.batch_duration_s for b in simulate(plant, ConstantArrivals(rate, duration_s), loop,
                                                           duration_s, noise_seed=noise_seed).batches]


def test_noise_is_seeded_and_spreads_batches_around_the_deterministic_cost():
    plain = _durations(NOISY, None, duration_s=300)
    assert max(plain[1:-1]) - min(plain[1:-1]) < 0.01, "no seed: the deterministic plant, steady batches alike"
    first, again, other = _durations(NOISY, [1, 0]), _durations(NOISY, [1, 0]), _durations(NOISY, [1, 1])
    assert first == again, "same noise seed, same run"
    assert first != other
    many = np.concatenate([_durations(NOISY, [s, 0], duration_s=300) for s in range(4)])
    # overhead: median-one factor; enrich: mean-one factor; so the mean stays within a few % of the plain batch
    assert np.mean(many) == pytest.approx(np.mean(plain), rel=0.05)
    assert np.std(np.log(many)) > 0.05, "the batches vary"
    # a plant with no spread ignores the seed
    assert _durations(PLANT, [1, 0]) == _durations(PLANT, None)


def test_an_unchained_degree_vector_pays_a_stage_of_its_own_per_batch():
    """The job runs an operator in its predecessor's stage at the same degree (unless keyed); the plant charges each
    stage beyond the fewest `stage_overhead_s`, and only with chaining on."""
    from dataclasses import replace

    keyed = tuple(replace(op, keyed=op.name == "aggregate") for op in PLANT.operators)
    base = replace(PLANT, operators=keyed, batch_overhead_s=0.1, stage_overhead_s=0.08)

    def first_batch(plant, degrees):
        loop = ControlLoop(build_controller("static", {"degrees": degrees}, OPS, 8))
        return simulate(plant, ConstantArrivals(1000, 4), loop, 4).batches[0].snapshot

    chained = first_batch(base, {})  # every operator at 1: the fewest stages
    split = first_batch(base, {"enrich": 2, "sink": 2})  # parse | enrich | aggregate | sink
    work = lambda s: s.batch_duration_s - sum(op.span_s for op in s.operators)  # noqa: E731
    assert work(chained) == pytest.approx(0.1) and work(split) == pytest.approx(0.1 + 2 * 0.08)
    assert work(first_batch(replace(base, chaining=False), {"enrich": 2, "sink": 2})) == pytest.approx(0.1)


class _Burst:
    """3,000 events due at 0.5 s (reading them at 1.2 ms each takes the first batch past its trigger), then 10 ev/s."""

    total_events = 3000 + 10 * 19

    def count_due(self, t_us):
        t = t_us / 1e6
        return 0 if t < 0.5 else min(self.total_events, 3000 + int((t - 0.5) * 10))

    def arrival_us(self, first, stop):
        i = np.arange(first, stop)
        return np.where(i < 3000, 500_000, 500_000 + (i - 2999) * 100_000).astype(np.int64)


def test_triggers_stay_on_sparks_grid_after_a_batch_overruns():
    """Spark fires triggers at wall-clock multiples of the interval: a batch that overran is followed at once, and
    the batch after that waits for the next multiple, not one interval after the late start."""
    plant = chain([("parse", 0.0), ("enrich", 0.0012), ("aggregate", 0.0), ("sink", 0.0)], trigger_interval_s=2.0,
                  slots=4, batch_overhead_s=0.1, max_degree=8, trigger_phase_s=0.75)
    run = simulate(plant, _Burst(), ControlLoop(build_controller("static", {}, OPS, 8)), 20)
    starts = [round(b.start_s, 3) for b in run.batches]
    first_end = round(run.batches[0].end_s, 3)
    assert starts[0] == 0.75  # the first grid point with events due
    assert first_end > 2.75 and starts[1] == first_end  # overran: the next batch at once
    assert starts[2] == 2.75 + 2.0 * math.ceil((first_end - 2.75) / 2.0 + 1e-9)  # back on the grid
    assert all(round((s - 0.75) / 2.0, 6).is_integer() for s in starts[2:])


def test_a_noisy_run_draws_its_trigger_phase_from_its_seed_unless_it_is_set():
    noisy = chain([("parse", 0.00002), ("enrich", 0.0004), ("aggregate", 0.00005), ("sink", 0.00002)],
                  trigger_interval_s=2.0, slots=4, max_degree=8, batch_overhead_sigma=0.1, trigger_phase_s=None)

    def first_start(plant, seed):
        return simulate(plant, ConstantArrivals(500, 20), ControlLoop(build_controller("static", {}, OPS, 8)), 20,
                        noise_seed=seed).batches[0].start_s

    phases = [first_start(noisy, seed) for seed in range(6)]
    assert all(0 <= p < 2.0 for p in phases) and len(set(phases)) == 6
    assert phases == [first_start(noisy, seed) for seed in range(6)]  # same seed, same phase
    assert first_start(replace(noisy, trigger_phase_s=1.25), 3) == 1.25
    assert first_start(replace(noisy, trigger_phase_s=None), None) == 0.0  # no noise: no draw


def test_a_trigger_phase_outside_the_interval_is_refused():
    with pytest.raises(ValueError, match=r"trigger_phase_s must be in \[0, trigger_interval_s = 2.0\), got 2.0"):
        chain([("parse", 0.0)], trigger_interval_s=2.0, trigger_phase_s=2.0)


def test_a_batch_at_changed_degrees_runs_longer_by_the_change_slowdown_and_only_that_one():
    """Spark's batches just after a degree change run longer than steady ones of the same size (a new shuffle
    layout, new tasks): the plant charges `change_slowdown` on those batches alone."""
    changes = {"changes": {3: {"enrich": 2}, 6: {"enrich": 1}}}

    def durations(slowdown):
        loop = ControlLoop(build_controller("scripted", changes, OPS, 8))
        run = simulate(replace(PLANT, change_slowdown=slowdown), ConstantArrivals(1000, 20), loop, 20)
        return [b.snapshot.batch_duration_s for b in run.batches]

    plain, slowed = durations(0.0), durations(0.25)
    changed = {4, 7}  # the batches after the two scripted changes, the way up and the way down
    for i, (a, b) in enumerate(zip(plain, slowed)):
        assert b == pytest.approx(a * 1.25 if i in changed else a), i
    with pytest.raises(ValueError, match=r"change_slowdown must be >= 0, got -0.1"):
        replace(PLANT, change_slowdown=-0.1)


def _on_off_arrivals(tmp_path):
    from workloads import Schedule
    from workloads.spec import parse_workload

    trace = tmp_path / "rate.csv"  # 6 s at 500 ev/s, 20 s silent, one second of 500 events, silent to the end
    trace.write_text("t_seconds,events\n" + "".join(f"{t},{500 if t < 6 or t == 26 else 0}\n" for t in range(40)))
    return Schedule(parse_workload({"name": "on-off", "trace": {"path": str(trace)}, "seed": 1}))


def test_an_idle_stretch_is_charged_as_a_spark_run_charges_it(tmp_path):
    """A Spark run is charged from one batch's start to the next's (jobs/recording/run_record.py:
    interval_in_force_s), so the triggers skipped for want of data between two batches are paid for; the plant
    charges the same, where it used to charge a batch only up to the next trigger."""
    degrees = {"parse": 1, "enrich": 3, "aggregate": 2, "sink": 1}
    loop = ControlLoop(build_controller("static", {"degrees": degrees}, OPS, 8))
    run = simulate(PLANT, _on_off_arrivals(tmp_path), loop, 40)
    starts = [b.start_s for b in run.batches]
    assert max(np.diff(starts)) > 15  # the silence: no batch for 20 s
    last = run.batches[-1]
    tail = max(last.end_s, starts[-1] + PLANT.trigger_interval_s) - starts[-1]  # the last batch: to its next trigger
    assert run.slot_seconds == pytest.approx(7 * (starts[-1] - starts[0] + tail))


def test_an_idle_stretch_is_charged_at_the_vector_decided_before_it(tmp_path):
    """A controller that lowers its vector as the burst's last batch ends holds the lower one through the silence
    after it: the skipped triggers are charged at that vector (jobs/recording/summary.py: charged_slot_seconds), the
    batch itself at the one it ran with."""
    arrivals = _on_off_arrivals(tmp_path)
    held = simulate(PLANT, arrivals, ControlLoop(build_controller("scripted", {"initial_degree": 3}, OPS, 8)), 40)
    gap = int(np.argmax(np.diff([b.start_s for b in held.batches])))  # the burst's last batch, before the silence
    plan = {"initial_degree": 3, "changes": {gap: {op: 1 for op in OPS}, gap + 1: {op: 3 for op in OPS}}}
    lowered = simulate(PLANT, arrivals, ControlLoop(build_controller("scripted", plan, OPS, 8)), 40)
    before, after = lowered.batches[gap], lowered.batches[gap + 1]
    assert [b.start_s for b in lowered.batches] == [b.start_s for b in held.batches]
    assert before.snapshot.degrees == {op: 3 for op in OPS} and after.snapshot.degrees == {op: 1 for op in OPS}
    idle = after.start_s - max(before.end_s, before.start_s + PLANT.trigger_interval_s)
    assert idle > 15
    # the idle triggers at 4 slots instead of 12; the batch after the silence runs at 4 instead of 12 too
    own_after = max(after.end_s, after.start_s + PLANT.trigger_interval_s) - after.start_s
    assert held.slot_seconds - lowered.slot_seconds == pytest.approx(8 * (idle + own_after))
