"""Per-operator parallelism degrees as an actuator (thread level, live).

A degree change needs no restart: the batch function asks this actuator for the degrees when a micro-batch
starts and repartitions before each operator accordingly, so a decision taken after batch k is in force in batch
k+1. That start is when the change took effect, and it is recorded as such in the decision's outcome.
"""
from __future__ import annotations

from typing import Any, Mapping

from controllers.actuation import Outcome
from controllers.loop import DecisionRecord


class DegreeActuator:
    name = "degrees"

    def __init__(self, initial: Mapping[str, int]):
        self.degrees = dict(initial)
        self._waiting: list[Outcome] = []

    def apply(self, record: DecisionRecord) -> Outcome | None:
        if record.after == self.degrees:
            return None
        changes = {op: [self.degrees[op], d] for op, d in record.after.items() if self.degrees.get(op) != d}
        self.degrees = dict(record.after)
        outcome = Outcome(self.name, "applied", changes, record.time_s, note="in force from the next batch")
        self._waiting.append(outcome)
        return outcome

    def batch_started(self, start_s: float) -> dict[str, int]:
        """The degrees for the batch starting now (run time `start_s`); changes waiting for it take effect."""
        for outcome in self._waiting:
            outcome.effective_s = start_s
        self._waiting.clear()
        return dict(self.degrees)

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": True,
                "how": "repartition before each operator to its degree, read when each micro-batch starts (no "
                       "query restart)"}
