"""The stages that end a burst's capacity: idle release after a silence, and the return after a burst batch."""
from __future__ import annotations

from typing import TYPE_CHECKING

from controllers.guard_stages.review import Review, Stage
from controllers.types import vector_text

if TYPE_CHECKING:
    from controllers.guards import Guards

# the detail marking a decision that ends a burst sizing (its return to the vector before it)
BURST_RETURN = "guard.burst_return"


class IdleRelease(Stage):
    """After a batch during which nothing arrived and that left nothing waiting, every operator to `min_degree` at
    once: Spark runs no batch until events arrive and burst sizing sizes that batch as it starts, so a vector held
    through a silence is paid for nothing. No option: a controller that should hold its vector through silences leaves
    the stage out of its GUARD_STAGES."""

    def apply(self, review: Review, guards: Guards) -> None:
        snapshot, p = review.snapshot, guards.params
        if snapshot.arrivals or snapshot.backlog or guards.excluded(snapshot.time_s):
            return
        idle = {op: p["min_degree"] for op in review.operators}
        if idle == review.current:
            return
        guards.burst_over()
        guards.lower_since = None
        review.details["guard.idle_release"] = 1
        review.decide(idle, f"nothing arrived during the batch and nothing waits: down to {vector_text(idle)} (the "
                            f"next batch runs when events arrive, and burst sizing sizes it then)")


class BurstReturn(Stage):
    """After a batch that ran at a vector burst sizing raised at its start: back to the vector before it at once (or to
    the proposal, if higher), without stabilisation, band or cost test. Not where the events already waiting would
    need the burst's vector at the next start anyway (a burst longer than its batch): two actions for nothing."""

    def apply(self, review: Review, guards: Guards) -> None:
        before = guards.take_burst_base()
        if before is None:
            return
        current, ops = review.current, review.operators
        # a proposal beyond the slot bound asks for no more than the bound: a controller whose estimate counts the
        # burst's arrivals (AUTOSCALE's iteration charge) proposes more than the slots allow after a burst batch
        # sized to the bound, and that must not keep the burst's vector
        bounded = {op: min(max(review.want[op], guards.params["min_degree"]), guards.cap_of(op)) for op in ops}
        if not any(current[op] > before[op] for op in ops) or any(bounded[op] > current[op] for op in ops):
            return
        # a proposal that keeps an operator at its burst degree says nothing about it (threshold keeps the current
        # vector whenever the ratio is within its bounds, which after a burst batch it usually is)
        back = {op: before[op] if bounded[op] == current[op] else min(current[op], max(bounded[op], before[op]))
                for op in ops}
        if guards.return_undone(review.snapshot, back):
            guards.keep_burst_base(before)
            review.details["guard.burst_return_skipped"] = review.snapshot.backlog
            review.hold(f"the burst goes on: {review.snapshot.backlog} events waiting would need more than "
                        f"{vector_text(back)} at the next batch start; the burst's vector stays")
            return
        review.details[BURST_RETURN] = 1
        review.decide(back, f"the burst batch is done, back to {vector_text(back)}")
