"""The bound a placement controller works against, and the no-scheduling baseline that records it."""
import pytest

from controllers.placement import RESOURCES, PlacementSnapshot, build_placement

BUSY = RESOURCES.index("busy_s")


def snapshot(busy_by_group, partitions, assignment=None):
    groups = len(busy_by_group)
    usage = {g: tuple(b if k == BUSY else 0.0 for k in range(len(RESOURCES))) for g, b in enumerate(busy_by_group)}
    assignment = assignment or tuple(g % partitions for g in range(groups))
    latency = [0.0] * partitions
    for g, p in enumerate(assignment):
        latency[p] += busy_by_group[g]
    return PlacementSnapshot(10.0, 1.0, tuple(assignment), partitions, tuple(latency), usage)


def test_balanced_bound_places_the_largest_groups_first_on_the_least_loaded_partition():
    # round robin puts 5 and 4 together (9 on partition 0); balanced: {5, 1, 1} and {4, 3} -> 7
    snap = snapshot([5, 3, 4, 1, 1], 2, assignment=(0, 1, 0, 1, 1))
    assert max(snap.latency_s) == 9
    assert snap.balanced_busy_s() == pytest.approx(7)


def test_balanced_bound_cannot_go_below_the_largest_group_or_the_mean():
    assert snapshot([10, 1, 1, 1], 4).balanced_busy_s() == pytest.approx(10)
    assert snapshot([2, 2, 2, 2], 2).balanced_busy_s() == pytest.approx(4)
    assert snapshot([0, 0, 0], 3).balanced_busy_s() == 0


def test_hash_placement_never_moves_and_takes_no_parameters():
    hashed = build_placement("hash")
    decision = hashed.decide(snapshot([5, 3, 4, 1, 1], 2))
    assert decision.moves == () and "no move" in decision.reason
    with pytest.raises(ValueError, match="unknown"):
        build_placement("hash", {"round_s": 5})
