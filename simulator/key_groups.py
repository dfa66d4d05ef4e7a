"""Key groups in the micro-batch model: the keyed operator's partitions as a placement controller sees and moves
them, so placement controllers (controllers/placement) run in the plant as they run on Spark, and a tuning study
can screen their settings before Spark minutes are spent.

What it models, per batch: each event's key (the workload's own key sampler, Schedule.events) goes to a key group,
the group to the partition the table names; the keyed operator's task p takes (its records x the per-record service
time + the task overhead), and its stage takes as long as its slowest task (its tasks longest first onto the free
slots when the degree exceeds them) instead of the even split the plant assumes otherwise. A decision after batch k
is in force in batch k+1; a change of the keyed operator's degree resets the table to round robin and starts the
placement controller afresh, as jobs/actuators/placement.py does on Spark.

What it does not: a key's group here is a 64-bit mix of the key modulo the groups, not Spark's Murmur3 (which keys
share a group differs, how unequal the groups are does not); a task's time is proportional to its records (Spark's
per-record cost also varies); the state a group holds is its distinct keys in the batch.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from controllers.cost_model import OperatorModel
from controllers.placement import PlacementController, PlacementDecision, PlacementSnapshot
from controllers.placement.types import longest_first_makespan

RECORD_BYTES = 48  # what the dominance test compares is each resource across partitions: any fixed size will do


def key_group_of(keys: np.ndarray, key_groups: int) -> np.ndarray:
    """A key's group: splitmix64's finaliser of the key, modulo the number of groups."""
    z = keys.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(key_groups)).astype(np.int64)


def stage_span(task_s: np.ndarray, slots: int, launch_s: float) -> float:
    """Tasks longest first onto the slot that frees first; the stage ends with its last task, plus one launch per
    task after the first."""
    return longest_first_makespan(task_s.tolist(), slots) + (len(task_s) - 1) * launch_s


class KeyedPlacement:
    """The keyed operator's key-group table and its placement controller, inside one plant run."""

    def __init__(self, operator: str, key_groups: int, factory: Callable[[], PlacementController]):
        if key_groups < 1:
            raise ValueError(f"key_groups must be >= 1, got {key_groups}")
        self.operator = operator
        self.key_groups = key_groups
        self.factory = factory
        self.controller = factory()
        self.degree: int | None = None
        self.assignment: tuple[int, ...] = ()
        self.moves = 0
        self._last: PlacementSnapshot | None = None

    def batch_started(self, degree: int) -> None:
        if degree != self.degree:
            self.degree = degree
            self.assignment = tuple(g % degree for g in range(self.key_groups))
            if self._last is not None:  # not the first batch: the history was of partitions that are gone
                self.controller = self.factory()

    def timing(self, op: OperatorModel, keys: np.ndarray, reaching: int, slots: int, factor: float, time_s: float,
               interval_s: float) -> tuple[float, float]:
        """(span_s, busy_s) of the keyed operator on the keys of the events the batch read, of which `reaching`
        records reach it (the operators before it may drop some: each group keeps its share), and the report its
        controller reads."""
        distinct_keys, which = np.unique(keys, return_inverse=True)  # each distinct key hashed once
        distinct_groups = key_group_of(distinct_keys, self.key_groups)
        records = (np.bincount(distinct_groups[which], minlength=self.key_groups)
                   * (reaching / len(keys) if len(keys) else 0.0))
        where = np.asarray(self.assignment)
        per_partition = np.bincount(where, weights=records, minlength=self.degree)
        task_s = (per_partition * op.service_s + op.task_overhead_s) * factor
        distinct = np.bincount(distinct_groups, minlength=self.key_groups)
        usage = {}
        for g in range(self.key_groups):
            p = where[g]
            share = task_s[p] * records[g] / per_partition[p] if per_partition[p] else 0.0
            usage[g] = (float(records[g]), float(share), float(distinct[g]), float(records[g] * RECORD_BYTES))
        self._last = PlacementSnapshot(time_s, interval_s, self.assignment, int(self.degree),
                                       tuple(float(t) for t in task_s), usage)
        return stage_span(task_s, slots, op.task_launch_s), float(task_s.sum())

    def decide(self, time_s: float, interval_s: float) -> PlacementDecision:
        """The placement controller's step on the batch just ended (its end time and interval known now)."""
        decision = self.controller.decide(replace(self._last, time_s=time_s, interval_s=interval_s))
        self.assignment = decision.applied(self.assignment)
        self.moves += len(decision.moves)
        return decision
