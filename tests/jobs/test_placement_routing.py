"""The key-group table (jobs/actuators/placement.py) and the keyed operator's figures, without Spark."""
import pytest

from controllers.placement import Move, PlacementDecision
from jobs.actuators.placement import KeyGroupRouting, placement_snapshot, representatives
from jobs.operators import merge_key_group_stats

HASHES = [7, -3, 12, 5, 8, 2, 9, 100, -41, 6]  # stand-ins for Spark's hash of 0, 1, 2, ...


def test_representatives_are_the_first_values_whose_hash_lands_on_each_partition():
    assert representatives(HASHES, 2) == [2, 0]  # hash 12 % 2 = 0 first at value 2; 7 % 2 = 1 at value 0
    assert representatives(HASHES, 3) == [1, 0, 3]  # pmod: -3 -> 0 (value 1), 7 -> 1 (value 0), 5 -> 2 (value 3)
    with pytest.raises(ValueError, match="reaches partition"):
        representatives([0, 0, 0], 2)


def test_moves_change_the_table_for_the_next_batch_and_a_degree_change_resets_it():
    routing = KeyGroupRouting(6, HASHES, degree=3)
    assert routing.assignment == (0, 1, 2, 0, 1, 2)
    moved = routing.apply(PlacementDecision((Move(0, 0, 2),), "test"))
    assert moved == [{"key_group": 0, "from": 0, "to": 2}] and routing.assignment == (2, 1, 2, 0, 1, 2)
    assert routing.batch_started(3) == ((2, 1, 2, 0, 1, 2), False)
    values = representatives(HASHES, 3)
    assert routing.route_by_group() == [values[p] for p in (2, 1, 2, 0, 1, 2)]
    assert routing.batch_started(2) == ((0, 1, 0, 1, 0, 1), True)
    with pytest.raises(ValueError, match="key group 1 is on partition 1, not 0"):
        routing.apply(PlacementDecision((Move(1, 0, 1),), "stale"))
    with pytest.raises(ValueError, match="key_groups must be >= 1"):
        KeyGroupRouting(0, HASHES, 2)


def test_task_figures_merge_and_a_key_group_seen_on_two_partitions_is_marked():
    a = {"partitions": {0: [1.0, 10]}, "groups": {3: [10, 4]}, "where": {3: 0}}
    b = {"partitions": {1: [0.5, 5]}, "groups": {4: [5, 2]}, "where": {4: 1}}
    merged = merge_key_group_stats(a, b)
    assert merged["partitions"] == {0: [1.0, 10], 1: [0.5, 5]} and merged["where"] == {3: 0, 4: 1}
    twice = merge_key_group_stats(merged, {"partitions": {1: [0.1, 1]}, "groups": {3: [1, 1]}, "where": {3: 1}})
    assert twice["where"][3] == -1 and twice["groups"][3] == [11, 5] and twice["partitions"][1] == [0.6, 6]


def test_the_snapshot_gives_each_key_group_its_share_of_its_partitions_task_time():
    stats = {"partitions": {0: [2.0, 100], 1: [0.5, 50]}, "groups": {0: [75, 10], 1: [25, 5], 2: [50, 8]}}
    snap = placement_snapshot(stats, (0, 0, 1), 2, time_s=10.0, interval_s=2.0)
    assert snap.latency_s == (2.0, 0.5)
    assert snap.usage[0][:2] == (75.0, 1.5) and snap.usage[1][:2] == (25.0, 0.5) and snap.usage[2][:2] == (50.0, 0.5)
    assert snap.usage[0][2] > snap.usage[1][2]  # more partial rows, more state
