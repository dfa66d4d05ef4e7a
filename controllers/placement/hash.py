"""Hash placement as a placement controller that never moves anything: the Sousa thesis's "no scheduling" baseline,
run through the same key-group table and the same per-partition figures as the controllers it is compared with.

Why a controller that does nothing: a baseline run without key groups would differ from a placement run in more
than the placement (no key-group column, no per-group figures collected), and it would record no figures to say
what a better placement could have given. With `hash`, key group g stays on partition g mod n (keys hashed into
groups, groups dealt round robin: a hash placement), and every batch records what a balanced placement of that
batch's key groups would have taken (PlacementSnapshot.balanced_busy_s): the bound a placement controller works
against.
"""
from __future__ import annotations

from controllers.placement.base import PlacementController, register
from controllers.placement.types import PlacementDecision, PlacementSnapshot


@register
class Hash(PlacementController):
    name = "hash"
    summary = "no scheduling: key groups stay where hashing put them (the thesis's baseline), with the same records"

    def decide(self, snapshot: PlacementSnapshot) -> PlacementDecision:
        return PlacementDecision((), "hash placement: no move")
