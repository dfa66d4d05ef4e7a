"""The control loop's pure half: ask the controller, validate its decision, hand it to the actuators, record it.

The Spark job and the simulator both drive controllers through this class, so a decision is validated, applied
and recorded the same way whether it steers a real job or a model. Invalid decisions are rejected (the current
degrees stay), recorded and counted as rejected, never clamped: silently correcting a controller would hide its
bugs. A controller that raises fails the run.

Every decision becomes one DecisionRecord: when and why, what the controller asked (with its `details`: DS2's
rates, AUTOSCALE's activity level, ...), what was accepted, and what each actuator did and when it took effect.
The log of these records is the run's one record of decisions (written once, as decisions.jsonl).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from controllers.actuation import Actuator, Outcome
from controllers.base import Controller
from controllers.types import Decision, Snapshot

AT_BATCH_START = "at batch start"  # the reason's prefix of a decision taken as a batch started (at_batch_start)


@dataclass
class DecisionRecord:
    batch_id: int
    time_s: float
    before: dict[str, int]
    after: dict[str, int]
    accepted: bool
    reason: str
    executors: int | None  # the executor count in force after the decision (None: not managed)
    executors_before: int | None = None
    requested: dict[str, Any] | None = None  # what the controller asked, as it asked it (also when rejected)
    details: dict[str, Any] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """A change of the operators' degrees (thread level); executor changes are counted apart."""
        return self.accepted and self.before != self.after

    @property
    def executors_changed(self) -> bool:
        return self.accepted and self.executors != self.executors_before

    def outcome(self, actuator: str) -> Outcome | None:
        return next((o for o in self.outcomes if o.actuator == actuator), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "time_s": round(self.time_s, 3),
            "before": self.before,
            "after": self.after,
            "accepted": self.accepted,
            "changed": self.changed,
            "reason": self.reason,
            "executors": self.executors,
            "executors_before": self.executors_before,
            "requested": self.requested,
            "details": {k: _plain(v) for k, v in self.details.items()},
            "outcomes": [o.to_dict() for o in self.outcomes],
        }


def _plain(value: Any) -> Any:
    """Details are numbers (numpy ones included) or short texts; JSON gets plain Python values."""
    if hasattr(value, "item"):
        value = value.item()
    return round(value, 6) if isinstance(value, float) else value


def invalid_reason(decision: Decision, operators: tuple[str, ...], max_degree: int) -> str | None:
    """Why a decision cannot be applied, or None if it can."""
    missing = [op for op in operators if op not in decision.degrees]
    if missing:
        return f"no degree for operator(s) {', '.join(missing)}"
    extra = [op for op in decision.degrees if op not in operators]
    if extra:
        return f"unknown operator(s) {', '.join(extra)}"
    for op, degree in decision.degrees.items():
        if isinstance(degree, bool) or not isinstance(degree, int) or not 1 <= degree <= max_degree:
            return f"degree {degree!r} of {op} outside [1, {max_degree}]"
    if decision.executors is not None and (not isinstance(decision.executors, int) or decision.executors < 1):
        return f"executor count {decision.executors!r} must be a positive integer"
    return None


class ControlLoop:
    """collect (the caller builds the Snapshot) -> decide (the controller) -> validate -> apply (the actuators) ->
    record (the log)."""

    def __init__(self, controller: Controller, actuators: Sequence[Actuator] = ()):
        self.controller = controller
        self.degrees = controller.initial_degrees()
        self.executors = controller.initial_executors()
        self.actuators = list(actuators)
        self.log: list[DecisionRecord] = []

    def at_batch_start(self, last_batch_id: int, time_s: float, pending: int,
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> dict[str, int]:
        """Ask the controller, as batch last_batch_id + 1 starts and is known to read `pending` events (the oldest
        waiting `oldest_wait_s`, and what arrived since the last batch ended, `recent_arrivals`, when the source knows
        them), whether
        that batch should run with other degrees (Controller.at_batch_start); a change is validated, applied and
        recorded like any decision, numbered as a decision after the last batch (in force in the next one);
        returns the degrees for the starting batch."""
        decision = self.controller.at_batch_start(pending, time_s, dict(self.degrees), oldest_wait_s, recent_arrivals)
        if decision is not None:
            decision = self.controller.fit_to_slots(decision, None, self.executors, time_s)
        if decision is not None and dict(decision.degrees) != self.degrees:
            self._take(decision, last_batch_id, time_s, at_batch_start=True)
        return dict(self.degrees)

    def step(self, snapshot: Snapshot) -> dict[str, int]:
        """Decide after a batch; returns the degrees in force for the next batch (self.executors: the executors)."""
        decision = self.controller.decide(snapshot)  # an exception here is a controller bug: the run fails loudly
        decision = self.controller.fit_to_slots(decision, snapshot, self.executors, snapshot.time_s)
        self._take(decision, snapshot.batch_id, snapshot.time_s)
        return dict(self.degrees)

    def _take(self, decision: Decision, batch_id: int, time_s: float, at_batch_start: bool = False) -> None:
        """Validate the decision, apply it through the actuators when valid, and record it either way."""
        before, executors_before = dict(self.degrees), self.executors
        problem = invalid_reason(decision, self.controller.operators, self.controller.max_degree)
        if problem is None and decision.executors is not None and self.executors is None:
            problem = "an executor count from a configuration that leaves the executors to Spark"
        requested = {"degrees": dict(decision.degrees), "executors": decision.executors}
        when = f" {AT_BATCH_START}" if at_batch_start else ""
        if problem is None:
            self.degrees = {op: int(decision.degrees[op]) for op in self.controller.operators}
            if decision.executors is not None:
                self.executors = decision.executors
            reason = f"{AT_BATCH_START}: {decision.reason}" if at_batch_start else decision.reason
            record = DecisionRecord(batch_id, time_s, before, dict(self.degrees), True, reason, self.executors,
                                    executors_before, requested, dict(decision.details))
            for actuator in self.actuators:
                outcome = actuator.apply(record)
                if outcome is not None:
                    record.outcomes.append(outcome)
        else:
            record = DecisionRecord(batch_id, time_s, before, before, False, f"rejected{when}: {problem}",
                                    self.executors, executors_before, requested, dict(decision.details))
        self.log.append(record)
