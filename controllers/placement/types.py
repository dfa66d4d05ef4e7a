"""What a placement controller sees (PlacementSnapshot) and what it answers (PlacementDecision).

Placement is not parallelism: the operator keeps its degree, and a controller moves *key groups* (the keys hashed
into a fixed number of groups) between its partitions. On Spark a per-batch table maps key groups to partitions,
so a move is in force at the next batch; in the placement simulator a partition is a node. Both drive the same
controller objects through these types, as the parallelism controllers are driven through controllers.types.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

# What a key group uses in one report period, and so what a partition (the sum of its key groups) uses: records
# it processed, task time it took, window state it holds, bytes it shuffled in. The project's reading of the Sousa
# thesis's node resources (CPU, I/O wait, RAM, disk, network) for a partition of a keyed operator.
RESOURCES = ("records", "busy_s", "state_bytes", "shuffle_bytes")


def longest_first_makespan(times: Sequence[float], bins: int) -> float:
    """The largest bin after placing `times` longest first, each onto the least loaded of `bins` bins (Graham's
    LPT, within 4/3 of the best): a balanced placement of key groups on partitions, or tasks on task slots."""
    loads = [0.0] * max(1, bins)
    for t in sorted(times, reverse=True):
        loads[loads.index(min(loads))] += t
    return max(loads)


@dataclass(frozen=True)
class PlacementSnapshot:
    """One report period (a micro-batch on Spark) of one keyed operator.

    assignment[g] is the partition key group g ran on; latency_s[p] the latency partition p showed in the period
    (on Spark its task's time: its records wait for the ones before them in the task); usage[g] the resources key
    group g used, in RESOURCES order; moves_in_flight the moves decided earlier and not yet in force.
    group_latency_s, where the groups have latencies of their own (the placement simulator's operator replicas,
    each with its queue), replaces the partition's for them; `apart` lists sets of groups that must never share a
    partition (the two active replicas of one operator in the Sousa thesis; none on Spark).
    """

    time_s: float
    interval_s: float
    assignment: tuple[int, ...]
    partitions: int
    latency_s: tuple[float, ...]
    usage: Mapping[int, tuple[float, ...]]
    moves_in_flight: int = 0
    group_latency_s: Mapping[int, float] | None = None
    apart: tuple[frozenset[int], ...] = ()

    def __post_init__(self):
        if len(self.latency_s) != self.partitions:
            raise ValueError(f"latency_s has {len(self.latency_s)} entries for {self.partitions} partitions")
        bad = [g for g, p in enumerate(self.assignment) if not 0 <= p < self.partitions]
        if bad:
            raise ValueError(f"key group {bad[0]} is assigned to partition {self.assignment[bad[0]]}, "
                             f"outside 0..{self.partitions - 1}")

    @property
    def key_groups(self) -> int:
        return len(self.assignment)

    def latency_of(self, group: int) -> float:
        if self.group_latency_s is not None and group in self.group_latency_s:
            return self.group_latency_s[group]
        return self.latency_s[self.assignment[group]]

    def may_join(self, group: int, partition: int, assignment: tuple[int, ...] | list[int] | None = None) -> bool:
        """Whether `group` may run on `partition` given the groups it must stay apart from (and where they are)."""
        where = self.assignment if assignment is None else assignment
        return not any(group in together and any(where[g] == partition for g in together if g != group)
                       for together in self.apart)

    def key_group_usage(self, group: int) -> tuple[float, ...]:
        return tuple(self.usage.get(group, (0.0,) * len(RESOURCES)))

    def partition_usage(self) -> list[tuple[float, ...]]:
        """Each partition's resources: the sum over the key groups on it."""
        totals = [[0.0] * len(RESOURCES) for _ in range(self.partitions)]
        for group, partition in enumerate(self.assignment):
            for k, value in enumerate(self.key_group_usage(group)):
                totals[partition][k] += value
        return [tuple(t) for t in totals]

    def balanced_busy_s(self) -> float:
        """The slowest partition's task time had this period's key groups been placed to balance it (longest
        processing time first onto the least loaded partition, within 4/3 of the best placement): what a placement
        controller that knew the period in advance could reach; a group's task time is its share of its partition's
        (RESOURCES' busy_s). Moving groups cannot go below the largest group's time nor below the mean."""
        busy = RESOURCES.index("busy_s")
        return longest_first_makespan([self.key_group_usage(g)[busy] for g in range(self.key_groups)],
                                      self.partitions)


@dataclass(frozen=True)
class Move:
    key_group: int
    source: int
    target: int


@dataclass(frozen=True)
class PlacementDecision:
    """The moves to put in force at the next period, and why (every decision is logged, as for parallelism)."""

    moves: tuple[Move, ...]
    reason: str
    details: Mapping[str, float] = field(default_factory=dict)

    def applied(self, assignment: tuple[int, ...]) -> tuple[int, ...]:
        out = list(assignment)
        for move in self.moves:
            if out[move.key_group] != move.source:
                raise ValueError(f"key group {move.key_group} is on partition {out[move.key_group]}, "
                                 f"not {move.source}")
            out[move.key_group] = move.target
        return tuple(out)
