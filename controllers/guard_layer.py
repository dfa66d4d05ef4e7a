"""The guard layer as a parallelism controller wears it: one mixin, so every controller that proposes degree vectors
gets the same guards the same way (controllers/guards.py holds the guards themselves).

One guard layer is shared by every parallelism controller, not copied into each, so that the guards act alike under
all of them. What a controller needs for it is always the same four things: the guards built from its parameters
(which merged `GUARD_PARAMS`), bound to the run (its latency bound, its slots, its length, its calibration), asked
at each batch start (burst sizing: the events the batch is about to read are known), and its proposal reviewed after
each batch. DS2 and threshold also ask the guards while they size a proposal (catch-up rate, observed capacity
curve); a controller that only proposes (AUTOSCALE) gets the review and the batch-start sizing alone. With
`guards=false` the controller is exactly its paper: the review passes the proposal through and no batch start is
resized.

Pure like the controllers: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from controllers.guard_stages import REVIEW_STAGES, Stage
from controllers.guards import Guards
from controllers.types import Decision, RunContext, Snapshot


class GuardLayer:
    """Mixin for a `Controller` whose PARAMS include GUARD_PARAMS (and RULES GUARD_RULES). Call `_make_guards()` in
    `__init__` after the base's and `_reviewed(snapshot, propose)` as `decide`; `bind` (the guards bound to the run
    after the base) and `at_batch_start` are provided."""

    guards: Guards
    # the review's stages this controller runs (controllers/guard_stages/); all of them unless it says otherwise
    GUARD_STAGES: tuple[type[Stage], ...] = REVIEW_STAGES

    def _make_guards(self, operator_caps: Mapping[str, int] | None = None,
                     own: Mapping[str, object] | None = None) -> None:
        """`operator_caps`: upper bounds the controller's own configuration sets per operator (a policy's limits),
        which the guards' burst sizing and bounds then respect too. `own`: guard options the controller carries out
        itself and the guards must not do a second time (multilevel's scale-in stabilisation is per table row)."""
        self.guards = Guards({**self.params, **(own or {})}, self.operators, self.max_degree, operator_caps,
                             self.GUARD_STAGES)

    def bind(self, context: RunContext) -> None:
        super().bind(context)  # type: ignore[misc]  (the Controller this mixin is combined with)
        self._bind_guards(context)

    def _bind_guards(self, context: RunContext) -> None:
        slots, follow_live = self.slot_fitter.guard_slots() if self.slot_fitter is not None else (context.slots, True)
        self.guards.bind(context.slo_latency_s, slots, follow_live, horizon_s=context.duration_s,
                         cost_prior=context.cost_prior)

    def at_batch_start(self, pending: int, time_s: float, degrees: Mapping[str, int],
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        """Burst sizing for the batch about to start; None with guards off."""
        return self.guards.batch_start(pending, degrees, self.context.trigger_s if self.context else 1.0,
                                       oldest_wait_s)

    def _reviewed(self, snapshot: Snapshot, propose: Callable[[Snapshot], Decision]) -> Decision:
        """The controller's own proposal for `snapshot`, through the guards' review when they are on: the guards
        see the batch before the controller proposes (their curves and bursts include it), and the proposal's
        reason and details are kept, the guards' notes after them."""
        if not self.guards.enabled:
            return propose(snapshot)
        self.guards.observe(snapshot)
        proposal = propose(snapshot)
        reviewed = self.guards.review(snapshot, proposal.degrees, proposal.reason, proposal.details)
        if proposal.executors is None:
            return reviewed
        # a controller that sizes executors with its degrees (multilevel's table rows): the executors go with the
        # degrees they were proposed for; where the review kept or set other degrees, the executors stay as they are
        # (None: the loop keeps the count in force, a request still registering included)
        taken = dict(reviewed.degrees) == dict(proposal.degrees)
        return replace(reviewed, executors=proposal.executors if taken else None)
