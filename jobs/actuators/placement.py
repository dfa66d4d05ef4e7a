"""Key-group placement as an actuator (live, like the degrees): which partition of the keyed operator runs each key
group, read by the batch function when a micro-batch starts.

How a key group reaches the partition the table names, with Spark's own partitioner: a keyed repartition sends a
row to partition pmod(murmur3(column), n) (HashPartitioning; the same Murmur3 with seed 42 as `F.hash`). So the job
hashes each key into its key group, pmod(hash(key), key_groups), and repartitions on a routing value chosen for the
key group's partition: for each degree n and partition p, the smallest integer whose hash lands on p. The hashes of
the candidates are computed once, by Spark (`hash_values`), so the routing is exact by construction, not by a
re-implementation of Murmur3.

A move decided after batch k is in force in batch k+1. Window state needs no transfer: the keyed operator writes
per-batch partial aggregates by (window, key) and the sink sums them (jobs.operators), so a key group's window is
whole whichever partitions its batches ran on. A degree change of the keyed operator resets the table to the
key groups' round-robin layout for the new degree (group g on partition g mod n) and starts the placement
controller afresh: its history was of partitions that no longer exist.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from controllers.placement import PlacementDecision, PlacementSnapshot

CANDIDATES = 4096  # routing values tried per degree: every partition of degrees up to 64 has one among them


def representatives(hash_values: Sequence[int], degree: int) -> list[int]:
    """For each partition p < degree, the smallest v in 0..len(hash_values)-1 with pmod(hash(v), degree) == p."""
    found: dict[int, int] = {}
    for value, h in enumerate(hash_values):
        found.setdefault(h % degree, value)  # Python's % is Spark's pmod for a positive modulus
        if len(found) == degree:
            break
    missing = sorted(set(range(degree)) - set(found))
    if missing:
        raise ValueError(f"no routing value among {len(hash_values)} reaches partition(s) {missing} of {degree}")
    return [found[p] for p in range(degree)]


class KeyGroupRouting:
    name = "placement"

    def __init__(self, key_groups: int, hash_values: Sequence[int], degree: int):
        if key_groups < 1:
            raise ValueError(f"key_groups must be >= 1, got {key_groups}")
        self.key_groups = key_groups
        self._hashes = list(hash_values)
        self._reps: dict[int, list[int]] = {}
        self.degree = degree
        self.assignment = self.round_robin(degree)
        self.moves_applied = 0

    def round_robin(self, degree: int) -> tuple[int, ...]:
        return tuple(g % degree for g in range(self.key_groups))

    def routing_values(self, degree: int) -> list[int]:
        if degree not in self._reps:
            self._reps[degree] = representatives(self._hashes, degree)
        return self._reps[degree]

    def batch_started(self, degree: int) -> tuple[tuple[int, ...], bool]:
        """The table for the batch starting now at the keyed operator's `degree`, and whether it was reset (the
        degree changed since the last batch)."""
        if degree == self.degree:
            return self.assignment, False
        self.degree = degree
        self.assignment = self.round_robin(degree)
        return self.assignment, True

    def route_by_group(self) -> list[int]:
        """The routing value of each key group under the current table."""
        values = self.routing_values(self.degree)
        return [values[p] for p in self.assignment]

    def apply(self, decision: PlacementDecision) -> list[dict[str, Any]]:
        """Put the decision's moves in the table for the next batch; what was moved, for the record."""
        if not decision.moves:
            return []
        self.assignment = decision.applied(self.assignment)
        self.moves_applied += len(decision.moves)
        return [{"key_group": m.key_group, "from": m.source, "to": m.target} for m in decision.moves]

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": True,
                "how": f"{self.key_groups} key groups, a per-batch table key group -> partition read by the keyed "
                       "repartition when each micro-batch starts (no query restart)"}


# bytes per row, for the resources the placement controllers compare: an enriched record as the keyed operator reads
# it (event_id, arrival, key, value, region, weighted, key group) and a (window, key) partial as it keeps it
RECORD_BYTES = 8 + 8 + 4 + 8 + 4 + 8 + 4
PARTIAL_BYTES = 8 + 4 + 8 + 8 + 8 + 8 + 8


def placement_snapshot(stats: Mapping[str, Mapping[int, Sequence[float]]], assignment: Sequence[int], degree: int,
                       time_s: float, interval_s: float) -> PlacementSnapshot:
    """What one batch showed of the keyed operator, as a placement controller sees it: per partition its task's
    time (its records wait through it: the partition's latency), per key group its records, its share of its
    partition's task time (in proportion to records), the partial rows it holds and the bytes it was shuffled."""
    partitions = stats.get("partitions", {})
    groups = stats.get("groups", {})
    latency = tuple(float(partitions.get(p, (0.0, 0))[0]) for p in range(degree))
    usage = {}
    for g, partition in enumerate(assignment):
        records, state_rows = groups.get(g, (0, 0))
        busy, partition_records = partitions.get(partition, (0.0, 0))
        share = busy * records / partition_records if partition_records else 0.0
        usage[g] = (float(records), share, float(state_rows * PARTIAL_BYTES), float(records * RECORD_BYTES))
    return PlacementSnapshot(time_s, interval_s, tuple(assignment), degree, latency, usage)
