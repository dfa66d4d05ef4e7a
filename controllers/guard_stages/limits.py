"""Limits on a proposal: the step factors (a limit stage: they also apply to a vector an earlier stage decided on)
and the bounds."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from controllers.guard_stages.review import Review, Stage
from controllers.types import Decision, vector_text
from params.declare import Param

if TYPE_CHECKING:
    from controllers.guards import Guards

# a step factor's product is rounded up as Flink rounds a scaled parallelism (Math.ceil); this much of a degree below
# an integer counts as that integer, so that 5 x 0.6 = 3.0000000000000004 allows 3 and not 4
STEP_ROUNDING = 1e-9


class StepFactors(Stage):
    """Flink's `scale-up.max-factor` and `scale-down.max-factor`: one decision moves an operator's degree p to at most
    ceil(p × (1 + up)) and at least ceil(p × (1 − down)). Where a change restarts the job, a scale-down that
    overshoots costs a second restart to undo; here (a change is live) the defaults do not bind."""

    LIMIT = True
    PARAMS = {
        "scale_up_max_factor": Param(float, 100000.0, "guards: one decision raises an operator's degree p to at most "
                                                      "ceil(p × (1 + this)) (Flink's scale-up.max-factor and its "
                                                      "default)", 0.0),
        "scale_down_max_factor": Param(float, 1.0, "guards: one decision lowers an operator's degree p to no less "
                                                   "than ceil(p × (1 − this)) (Flink's scale-down.max-factor; 1: no "
                                                   "limit, the project's default, as a change here is live)",
                                       0.0, 1.0),
    }

    def apply(self, review: Review, guards: Guards) -> None:
        p = guards.params
        target = review.decided.degrees if review.decided is not None else review.want
        limited = {}
        for op in review.operators:
            now = review.current[op]
            top = math.ceil(now * (1.0 + p["scale_up_max_factor"]) - STEP_ROUNDING)
            bottom = max(1, math.ceil(now * (1.0 - p["scale_down_max_factor"]) - STEP_ROUNDING))
            limited[op] = min(max(target[op], bottom), top)
        if limited == dict(target):
            return
        note = "step factors: " + ", ".join(f"{op} {target[op]} -> {limited[op]}"
                                            for op in review.operators if limited[op] != target[op])
        review.details["guard.step_limited"] = vector_text(limited)
        if review.decided is not None:
            review.decided = Decision(limited, f"{review.decided.reason}; {note}", details=review.details)
        else:
            review.want = limited
            review.notes.append(note)


class Bounds(Stage):
    """[min_degree, the operator's cap]: the slots (tasks beyond the executor cores add waves, not speed), the run's
    max degree and the controller's own per-operator limits. Not a limit stage: the vectors the earlier stages decide
    on (min_degree, or the vector before a burst) are within the bounds already."""

    def apply(self, review: Review, guards: Guards) -> None:
        floor = guards.params["min_degree"]
        for op in review.operators:
            bounded = min(max(review.want[op], floor), guards.cap_of(op))
            if bounded != review.want[op]:
                review.details[f"guard.bounded.{op}"] = bounded
                review.notes.append(f"{op} {review.want[op]} -> {bounded} (bounds [{floor}, {guards.cap_of(op)}])")
                review.want[op] = bounded
