"""The plant's key groups: a table the placement controller moves, the stage as slow as its slowest task, a move in
force at the next batch and a degree change that resets the table, as on Spark."""
import numpy as np
import pytest

from controllers import ControlLoop, build_controller
from controllers.placement import Move, PlacementController, PlacementDecision
from simulator.key_groups import KeyedPlacement, key_group_of, stage_span
from simulator.plant import chain, simulate
from workloads import Schedule, load_workload

PLANT = chain([("parse", 1e-5), ("enrich", 1e-5), ("aggregate", 4e-4), ("sink", 1e-6)], trigger_interval_s=2.0,
              slots=4, batch_overhead_s=0.2, max_degree=8)


def test_a_keys_group_is_fixed_in_range_and_groups_of_uniform_keys_are_even():
    keys = np.arange(100_000)
    groups = key_group_of(keys, 16)
    assert groups.min() == 0 and groups.max() == 15 and (key_group_of(keys, 16) == groups).all()
    counts = np.bincount(groups)
    assert counts.max() / counts.mean() < 1.05


def test_a_stage_lasts_as_long_as_its_slowest_task_and_extra_tasks_wait_for_a_free_slot():
    assert stage_span(np.array([3.0, 1.0, 1.0]), slots=4, launch_s=0.0) == 3.0
    assert stage_span(np.array([2.0, 2.0, 1.0, 1.0, 1.0]), slots=2, launch_s=0.0) == 4.0  # {2, 1, 1} and {2, 1}
    assert stage_span(np.array([1.0, 1.0]), slots=4, launch_s=0.5) == 1.5


class MoveOnce(PlacementController):
    """Moves key group 0 to partition 1 after the first batch it sees, then nothing."""
    name = "move-once"
    summary = "test"

    def __init__(self):
        super().__init__()
        self.seen = []

    def decide(self, snapshot):
        self.seen.append(snapshot)
        if len(self.seen) == 1:
            return PlacementDecision((Move(0, snapshot.assignment[0], 1),), "move 0")
        return PlacementDecision((), "none")


def test_a_move_is_in_force_at_the_next_batch_and_a_degree_change_resets_table_and_controller():
    built = []

    def factory():
        built.append(MoveOnce())
        return built[-1]

    schedule = Schedule(load_workload("skewed-keys").with_overrides(duration_s=20, seed=1))
    keyed = KeyedPlacement("aggregate", 8, factory)
    ctl = build_controller("scripted", {"initial_degree": 2, "changes": {4: {"aggregate": 4}}},
                           ("parse", "enrich", "aggregate", "sink"), 8)
    simulate(PLANT, schedule, ControlLoop(ctl), 20.0, keyed=keyed)
    first = built[0].seen
    assert first[0].assignment == (0, 1, 0, 1, 0, 1, 0, 1) and first[1].assignment[0] == 1
    assert len(built) == 2, "the degree change restarted the placement controller"
    assert built[1].seen[0].partitions == 4 and built[1].seen[0].assignment[:4] == (0, 1, 2, 3)
    # the report: per partition its task's time; per group records and its share of that time
    snap = first[0]
    assert sum(u[0] for u in snap.usage.values()) == snap.partition_usage()[0][0] + snap.partition_usage()[1][0] > 0
    for p in range(2):  # a group's share of its partition's task time is in proportion to its records
        shares = sum(u[1] for g, u in snap.usage.items() if snap.assignment[g] == p)
        assert shares == pytest.approx(snap.latency_s[p])
    assert keyed.moves == 2  # one by each controller
