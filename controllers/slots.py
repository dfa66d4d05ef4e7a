"""Slot awareness shared by the parallelism controllers (DS2, threshold, AUTOSCALE): never ask for more concurrent
tasks than the run has task slots, and on a cluster ask for executors (the process level) when the degrees wanted
need more slots than the executors in force give.

Why one piece after the controller instead of three inside them: each controller sizes degrees its own way, but
what the slots allow is the same for all of them. On the 2 x 1-core standalone cluster the project's phase-A
characterisation (docs/multilevel.csv) measured degree 8 on 2 slots at 0.85x degree 1: tasks beyond the slots run
in waves, so a degree above them costs task start-ups and buys nothing. On the step workload there (2026-11-26,
docs/multilevel.md) DS2 and threshold reached 20.6 % and 58.2 % SLO, sizing degrees far past the two slots.

What it does to a decision (`SlotFitter.fit`):
- the slots are those the run has now: the executor cores registered at the last batch (a cluster), or local[N]'s N;
  unknown (neither): no cap;
- with `executors=true` (a cluster master; executors of one core each, as the job starts managed executors) the
  executors follow the largest degree wanted, within [min_executors, max_executors]: more at once (scale-out is
  immediate, each new executor needs seconds to register), fewer only after the wanted count stayed below the
  executors in force for `executor_scale_in_s` without a break, and then down to the largest count wanted during
  that time (hysteresis, Flink's scale-down rule);
- every degree is capped at the slots registered now, and on a scale-in at the slots that remain: a scale-out's
  executors raise the cap once they have registered, and the controller's next decision uses them.
Degrees are never raised here; only capped.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping

from controllers.types import Decision, Snapshot
from controllers.scale_in import ScaleInHold
from params.declare import Param, Rule, SearchRange

# managed executors have one core each (jobs.config starts them so): the project's choice, the finest process-level
# step, and what the 1-core workers of deploy.spark_cluster hold
EXECUTOR_CORES = 1

EXECUTOR_PARAMS = {
    "executors": Param(bool, False, "process level: manage the executors (one core each), asking for more when the "
                                    "degrees wanted need more task slots than they give; needs a cluster master"),
    "min_executors": Param(int, 1, "executors: never fewer, and as many in the first batch (Spark's dynamic "
                                   "allocation starts at its minimum too unless told otherwise)", 1),
    "max_executors": Param(int, 4, "executors: never more (project's choice: 4, twice this machine's cores)", 1,
                           search=SearchRange(1, 8), search_when=("executors", True)),
    "executor_scale_in_s": Param(float, 30.0, "executors: release one only after fewer were wanted for this long "
                                              "without a break (hysteresis)", 0.0, search=SearchRange(0.0, 120.0),
                                  search_when=("executors", True)),
}

EXECUTOR_RULES = (Rule(("min_executors", "max_executors"), lambda v, c: v["min_executors"] <= v["max_executors"],
                       "min_executors ({min_executors}) must be <= max_executors ({max_executors})"),)


class SlotFitter:
    """One controller's slot bound and executor target in one run; `observe` each snapshot, then `fit`."""

    def __init__(self, params: Mapping[str, Any]):
        self.manage = bool(params.get("executors", False))
        # the slot bound is one of the guards (controllers/guards.py): guards=false is the published controller,
        # which does not know the slots
        self.capping = bool(params.get("guards", True))
        self.min = int(params.get("min_executors", 1))
        self.max = int(params.get("max_executors", 1))
        self.initial = self.min
        self.scale_in_s = float(params.get("executor_scale_in_s", 0.0))
        self.run_slots = 0  # local[N]: N, known before the run; 0 on a cluster master
        self.live_slots: int | None = None  # executor cores registered at the last batch
        self._hold = ScaleInHold(self.scale_in_s)

    def bind(self, run_slots: int) -> None:
        self.run_slots = run_slots

    def initial_executors(self) -> int | None:
        return self.initial if self.manage else None

    def attainable(self) -> int:
        """The most slots the controller may plan with: what max_executors give when it manages them, else the
        run's slots (0: unknown before the run; the live count then bounds each decision)."""
        return self.max * EXECUTOR_CORES if self.manage else self.run_slots

    def guard_slots(self) -> tuple[int, bool]:
        """What the guard layer's slot bound is told (Guards.bind): the slots to plan with and whether to follow
        the registered count; nothing with the guards off."""
        return (self.attainable(), True) if self.capping else (0, False)

    def observe(self, snapshot: Snapshot) -> None:
        if snapshot.slots:
            self.live_slots = snapshot.slots

    def slots_now(self, executors: int | None) -> int:
        """Task slots the next batch can count on (0: unknown)."""
        if self.live_slots:
            return self.live_slots
        if self.manage and executors:
            return executors * EXECUTOR_CORES
        return self.run_slots

    def executor_target(self, wanted_slots: int, current: int, time_s: float) -> tuple[int, str]:
        """The executors for the next batch when the degrees want `wanted_slots`, and why."""
        wanted = min(self.max, max(self.min, math.ceil(wanted_slots / EXECUTOR_CORES)))
        self._hold.note(time_s, wanted)
        if wanted > current:
            self._hold.reset()
            return wanted, f"executors {current} -> {wanted} ({wanted_slots} slots wanted)"
        if wanted == current:
            self._hold.reset()
            return current, ""
        target, waited = self._hold.lower(wanted, current, time_s)
        if waited < self.scale_in_s:
            return current, f"executors {current} kept: {wanted} wanted for {waited:.0f}/{self.scale_in_s:g} s"
        if target == current:
            return current, ""
        return target, f"executors {current} -> {target} ({wanted_slots} slots wanted for {waited:.0f} s)"

    def fit(self, decision: Decision, executors: int | None, time_s: float, plan_executors: bool = True) -> Decision:
        """`decision` with its degrees capped at the slots and, when managing executors and `plan_executors`, an
        executor target. A decision taken as a batch starts (burst sizing) is only capped: executors asked for then
        would register after the batch they were meant for."""
        notes: list[str] = []
        details = dict(decision.details)
        target = decision.executors
        cap = self.slots_now(executors) if self.capping else 0
        if self.manage and plan_executors:
            current = executors or self.initial
            wanted_slots = max(decision.degrees.values(), default=1)
            target, note = self.executor_target(wanted_slots, current, time_s)
            if note:
                notes.append(note)
            details["slots.wanted"] = wanted_slots
            details["slots.executors_target"] = target
            if self.capping:
                cap = min(cap, target * EXECUTOR_CORES) if cap else target * EXECUTOR_CORES
        degrees = dict(decision.degrees)
        if cap:
            capped = {op: min(d, cap) for op, d in degrees.items() if d > cap}
            if capped:
                notes.append("capped at " + f"{cap} task slot(s): " + ", ".join(
                    f"{op} {degrees[op]} -> {d}" for op, d in capped.items()))
                details["slots.cap"] = cap
                degrees.update(capped)
        if not notes and target == decision.executors:
            return decision
        reason = decision.reason + ("; slots: " + "; ".join(notes) if notes else "")
        return replace(decision, degrees=degrees, reason=reason, executors=target, details=details)
