"""A proposal under review (`Review`), a stage of the review (`Stage`) and the pipeline that runs them
(`run_review`): after a stage decides, only the stages that are limits still apply."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from controllers.types import Decision, Snapshot
from params.declare import Param, Rule

if TYPE_CHECKING:
    from controllers.guards import Guards


@dataclass
class Review:
    """A proposal on its way through the stages: the vector in force (`current`), what the stages have made of the
    proposal so far (`want`), the controller's reason and details (the stages add theirs) and the notes the decision's
    reason ends with. The facts every stage may need are measured once, before the first."""

    snapshot: Snapshot
    current: dict[str, int]
    want: dict[str, int]
    reason: str
    details: dict[str, Any]
    utilization: float
    low: float
    high: float
    proposal_changes: bool
    notes: list[str] = field(default_factory=list)
    decided: Decision | None = None  # set by a stage that decides; the limits still apply to it

    def decide(self, degrees: Mapping[str, int], note: str | None) -> None:
        """End the review at `degrees`; `note` (None: none) follows "guards:" in the reason."""
        reason = self.reason if note is None else f"{self.reason}; guards: {note}"
        self.decided = Decision(dict(degrees), reason, details=self.details)

    def hold(self, note: str | None) -> None:
        self.decide(self.current, note)

    def result(self) -> Decision:
        if self.decided is not None:
            return self.decided
        text = self.reason if not self.notes else f"{self.reason}; guards: " + "; ".join(self.notes)
        return Decision(dict(self.want), text, details=self.details)

    @property
    def operators(self) -> tuple[str, ...]:
        return tuple(self.current)


class Stage:
    """One rule of the review. `PARAMS`: the options it reads (merged into the guard layer's declared options);
    `LIMIT`: whether it also applies to a vector an earlier stage decided on."""

    PARAMS: dict[str, Param] = {}
    RULES: tuple[Rule, ...] = ()
    LIMIT = False

    def apply(self, review: Review, guards: Guards) -> None:
        raise NotImplementedError


def run_review(stages: tuple[Stage, ...], review: Review, guards: Guards) -> Decision:
    """`review` through `stages` in order: after a stage decides, only the limits."""
    for stage in stages:
        if review.decided is None or stage.LIMIT:
            stage.apply(review, guards)
    return review.result()
