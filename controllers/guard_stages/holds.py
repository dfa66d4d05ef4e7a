"""The stages that hold or trim a proposal: the ineffective-scaling block, scale-down stabilisation, excluded
periods, the utilisation band and the reconfiguration-cost test."""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from controllers.guard_stages.review import Review, Stage
from controllers.types import vector_text
from params.declare import Param, Rule, SearchRange

if TYPE_CHECKING:
    from controllers.guards import Guards


class IneffectiveScaling(Stage):
    """After a scale-up whose observed gain was below `min_gain`, no further scale-up of that operator beyond where
    scaling stopped helping until the offered load moves by `load_change` (Guards keeps the blocks)."""

    PARAMS = {
        "min_gain": Param(float, 0.1, "guards: a scale-up must raise the operator's observed processing rate by this "
                                      "fraction, or its further scale-ups are blocked until the load changes",
                          0.0, 1.0),
        "load_change": Param(float, 0.5, "guards: relative change of the offered load (mean over 3 batches) that "
                                         "lifts an ineffective-scaling block", 0.0, open_minimum=True),
    }

    def apply(self, review: Review, guards: Guards) -> None:
        p = guards.params
        for op, block in guards.blocks.items():
            review.details[f"guard.blocked.{op}"] = 1
            top = guards.max_useful(op, review.current[op])
            if review.want[op] > top:
                review.notes.append(f"scale-up of {op} {review.current[op]}->{review.want[op]} blocked: "
                                    f"{block.old}->{block.new} gained {block.gain:+.0%} < {p['min_gain']:.0%} (until "
                                    f"the load moves {p['load_change']:.0%} from {block.load:.0f} ev/s)")
                review.want[op] = top


class Stabilisation(Stage):
    """Scale-ups at once; a scale-down once lower vectors (some operator lower, none higher) have been proposed
    continuously for `stabilisation_s`, then the latest of them in one change. The downs in a proposal that also
    scales up wait."""

    PARAMS = {"stabilisation_s": Param(float, 0.0, "guards: a scale-down is applied only after being recommended "
                                                   "continuously this long, seconds (scale-ups at once)", 0.0,
                                       search_when=("guards", True), search=SearchRange(0.0, 120.0))}

    def apply(self, review: Review, guards: Guards) -> None:
        current, want = review.current, review.want
        if any(want[op] > current[op] for op in review.operators) or want == current:
            guards.lower_since = None
            review.want = {op: max(want[op], current[op]) for op in review.operators}
            return
        t = review.snapshot.time_s
        if guards.lower_since is None:
            guards.lower_since = t
        waited = t - guards.lower_since
        if waited < guards.params["stabilisation_s"]:
            review.details["guard.down_pending_s"] = waited
            review.notes.append(f"scale-down to {vector_text(want)} pending "
                                f"({waited:.0f}/{guards.params['stabilisation_s']:g} s)")
            review.want = dict(current)


def parse_periods(text: str) -> list[tuple[float, float]]:
    """'30-60,120-150' or a JSON list [[30, 60], [120, 150]] -> [(30.0, 60.0), (120.0, 150.0)]; ValueError with
    what is wrong."""
    text = (text or "").strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            raw = json.loads(text)
            pairs = [(float(a), float(b)) for a, b in raw]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"expected a list of [start, end] pairs, got {text!r}") from exc
    else:
        pairs = []
        for part in text.split(","):
            match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*-\s*(\d+(?:\.\d*)?)\s*", part)
            if not match:
                raise ValueError(f"expected 'start-end' windows in seconds separated by commas, e.g. '30-60,120-150', "
                                 f"got {part.strip()!r}")
            pairs.append((float(match[1]), float(match[2])))
    for start, end in pairs:
        if not 0 <= start < end:
            raise ValueError(f"window {start:g}-{end:g} must have 0 <= start < end")
    return sorted(pairs)


def _periods_hold(values, context):
    try:
        parse_periods(values["excluded_periods"])
    except ValueError as exc:
        return f"parameter 'excluded_periods': {exc}"
    return True


def excluded_window(periods: list[tuple[float, float]], t: float) -> tuple[float, float] | None:
    """The declared window run time `t` is in (start inclusive, end exclusive), or None."""
    return next(((a, b) for a, b in periods if a <= t < b), None)


class ExcludedPeriods(Stage):
    """No change while the run time is inside a declared window (start inclusive, end exclusive)."""

    RULES = (Rule(("excluded_periods",), _periods_hold,
                  "excluded_periods must be windows 'start-end' (seconds, 0 <= start < end) separated by commas"),)

    PARAMS = {
        "excluded_periods": Param(str, "", "guards: windows of run time with no scaling, seconds from the start: "
                                           "'30-60,120-150' or [[30, 60], [120, 150]]", structured=True),
    }

    def apply(self, review: Review, guards: Guards) -> None:
        window = guards.excluded(review.snapshot.time_s)
        if window is None:
            return
        review.details["guard.excluded"] = 1
        review.hold(f"excluded period [{window[0]:g}, {window[1]:g}) s: no scaling" if review.proposal_changes
                    else None)


class UtilisationBand(Stage):
    """No change while the next batch's utilisation is within target ± band; outside it only the direction that brings
    it back. A scale-down that releases what a catch-up added for a since-drained backlog passes (not above the
    band)."""

    def apply(self, review: Review, guards: Guards) -> None:
        u, low, high = review.utilization, review.low, review.high
        releasing = (review.want != review.current and all(review.want[op] <= review.current[op]
                                                           for op in review.operators)
                     and u <= high and guards.lag_drained(review.snapshot))
        if releasing:
            review.details["guard.lag_drained"] = 1
            review.notes.append(f"the backlog the last scale-up was sized for is drained: the capacity added for it "
                                f"goes (utilisation {u:.2f})")
            return
        if low <= u <= high:
            review.details["guard.in_band"] = 1
            review.hold(f"utilisation {u:.2f} within [{low:.2f}, {high:.2f}]: no action" if review.proposal_changes
                        else None)
            return
        current, want = review.current, review.want
        wrong = [op for op in review.operators if (want[op] > current[op] if u < low else want[op] < current[op])]
        if wrong:
            side = "below" if u < low else "above"
            review.notes.append(f"utilisation {u:.2f} {side} [{low:.2f}, {high:.2f}]: "
                                + ", ".join(f"{op} stays {current[op]}" for op in wrong))
            for op in wrong:
                want[op] = current[op]


class ReconfigurationCost(Stage):
    """A change that only lowers degrees must pay for itself, in slot-seconds: the slots it frees over the horizon,
    (Σp − Σp')·H, against `reconfig_cost_s` of the whole allocation for the change and as much for the change back,
    c·(Σp + Σp'). A scale-up is never blocked by cost: missing the SLO is not priced in slot-seconds."""

    # Only the ratio reconfig_cost_s / benefit_horizon_s decides the test (within a bounded run's end), so a tuning
    # study searches the cost alone.
    PARAMS = {
        "reconfig_cost_s": Param(float, 2.0, "guards: seconds of the whole allocation a change of degrees costs (a "
                                             "scale-down needs (Σp-Σp')·benefit_horizon_s > this·(Σp+Σp'))", 0.0,
                                 search_when=("guards", True), search=SearchRange(0.0, 10.0)),
        "benefit_horizon_s": Param(float, 30.0, "guards: seconds over which a scale-down's freed slots are counted",
                                   0.0, open_minimum=True),
    }

    def apply(self, review: Review, guards: Guards) -> None:
        current, want, p = review.current, review.want, guards.params
        if want == current or any(want[op] > current[op] for op in review.operators):
            return
        before, after = sum(current.values()), sum(want.values())
        benefit, cost = (before - after) * p["benefit_horizon_s"], p["reconfig_cost_s"] * (before + after)
        review.details.update({"guard.benefit_slot_s": benefit, "guard.cost_slot_s": cost})
        if benefit <= cost:
            review.notes.append(f"scale-down to {vector_text(want)} not worth it: frees {benefit:.0f} slot-s over "
                                f"{p['benefit_horizon_s']:g} s <= {cost:.0f} slot-s for the change and back")
            review.want = dict(current)
