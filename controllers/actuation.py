"""The actuator contract: how a validated decision is applied, and what applying it did.

The control loop (controllers.loop) holds a list of actuators and hands each accepted decision to every one of
them in order; each answers with an Outcome (or None when the decision asks nothing of it). Degrees, executors
and hosts are actuators on Spark (jobs/actuators/); a placement or level actuator is one more entry in that list,
not a new code path. An actuator the backend lacks is `Unavailable`: it says so once, in the run's record, and
never pretends to act. Pure: the contract imports nothing from Spark, so the simulator and tests implement it too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from controllers.loop import DecisionRecord


@dataclass
class Outcome:
    """What one actuator did with one decision.

    status: 'applied' (asked of the backend), 'failed' (the backend refused: `note` says why) or 'unavailable'.
    requested_s is when it was asked (run time, seconds since the anchor, like the decision's time); effective_s
    when it took effect (the next batch ran with it, the executors registered or were removed, the host joined),
    filled in by the actuator as it sees it happen; None while it has not (or never did: see `note`)."""

    actuator: str
    status: str
    requested: Any
    requested_s: float
    effective_s: float | None = None
    note: str = ""
    measured: dict[str, Any] = field(default_factory=dict)  # the actuator's own measurements (delays, executors)

    @property
    def delay_s(self) -> float | None:
        return None if self.effective_s is None else self.effective_s - self.requested_s

    def to_dict(self) -> dict[str, Any]:
        return {"actuator": self.actuator, "status": self.status, "requested": self.requested,
                "requested_s": round(self.requested_s, 3),
                "effective_s": None if self.effective_s is None else round(self.effective_s, 3),
                "delay_s": None if self.delay_s is None else round(self.delay_s, 3),
                "note": self.note, **({"measured": self.measured} if self.measured else {})}


class Actuator(Protocol):
    """Applies the part of a decision it is responsible for."""

    name: str

    def apply(self, record: "DecisionRecord") -> Outcome | None:
        """Apply an accepted decision (record.after, record.executors); None when it asks nothing of this
        actuator (no change of what it controls)."""
        ...

    def describe(self) -> dict[str, Any]:
        """What this actuator is on this backend, for the run's record (available or not, and why)."""
        ...


@dataclass
class Unavailable:
    """An actuator the backend does not have (executors on a local master, hosts without a cluster to grow):
    recorded once with its reason; a decision that would need it was already refused before the run started."""

    name: str
    reason: str

    def apply(self, record: "DecisionRecord") -> Outcome | None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": False, "reason": self.reason}
