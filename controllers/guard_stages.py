"""The guards' review of a proposal as a pipeline of small stages, each with its own options and one method.

A controller proposes a degree vector after each batch; the review decides what of it is applied. Each stage reads
the proposal as the stages before it left it (`Review.want`), the run's observations (`Guards`: the capacity curve,
the offered load, the ineffective-scaling blocks) and its own options, and either changes the proposal (with a note
in the reason and its facts in the decision's ``guard.*`` details) or decides (`Review.decide`): then only the
stages that are limits (`Stage.LIMIT`: step factors, bounds) still apply. The order is written once, in
`REVIEW_STAGES`, and follows the Flink Kubernetes operator's autoscaler where the two have the same stage (step
factors before the parallelism bounds, the ineffective-scaling block on scale-ups, the scale-down interval, the
utilisation band).

Pure: no Spark, MLflow or I/O; each stage runs in a unit test in microseconds.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from controllers.types import Decision, Snapshot, vector_text
from params.declare import Choices, Param, Rule, SearchRange

if TYPE_CHECKING:
    from controllers.guards import Guards

# the detail marking a decision that ends a burst sizing (its return to the vector before it)
BURST_RETURN = "guard.burst_return"
# a step factor's product is rounded up as Flink rounds a scaled parallelism (Math.ceil); this much of a degree below
# an integer counts as that integer, so that 5 x 0.6 = 3.0000000000000004 allows 3 and not 4
STEP_ROUNDING = 1e-9


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


class IdleRelease(Stage):
    """After a batch during which nothing arrived and that left nothing waiting, every operator to `min_degree` at
    once: Spark runs no batch until events arrive and burst sizing sizes that batch as it starts, so a vector held
    through a silence is paid for nothing."""

    PARAMS = {"idle_release": Param(
        bool, True, "guards: after a batch during which nothing arrived and that left nothing waiting, every operator "
                    "to min_degree at once (the next batch runs when events arrive, and burst sizing sizes it then)",
        search_when=("guards", True), search=Choices((True, False)))}

    def apply(self, review: Review, guards: Guards) -> None:
        snapshot, p = review.snapshot, guards.params
        if not p["idle_release"] or snapshot.arrivals or snapshot.backlog \
                or excluded_window(guards.periods, snapshot.time_s):
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
            limited[op] = min(max(target[op], bottom), max(top, now))
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
    max degree and the controller's own per-operator limits."""

    LIMIT = True

    def apply(self, review: Review, guards: Guards) -> None:
        if review.decided is not None:
            return  # the deciding stages' vectors are within the bounds already
        floor = guards.params["min_degree"]
        for op in review.operators:
            bounded = min(max(review.want[op], floor), guards.cap_of(op))
            if bounded != review.want[op]:
                review.details[f"guard.bounded.{op}"] = bounded
                review.notes.append(f"{op} {review.want[op]} -> {bounded} (bounds [{floor}, {guards.cap_of(op)}])")
                review.want[op] = bounded


class IneffectiveScaling(Stage):
    """After a scale-up whose observed gain was below `min_gain`, no further scale-up of that operator beyond where
    scaling stopped helping until the offered load moves by `load_change` (Guards keeps the blocks)."""

    PARAMS = {
        "min_gain": Param(float, 0.1, "guards: a scale-up must raise the operator's observed processing rate by this "
                                      "fraction, or its further scale-ups are blocked until the load changes",
                          0.0, 1.0, search_when=("guards", True), search=SearchRange(0.0, 0.3)),
        "load_change": Param(float, 0.5, "guards: relative change of the offered load (mean over 3 batches) that "
                                         "lifts an ineffective-scaling block", 0.0, open_minimum=True,
                             search_when=("guards", True), search=SearchRange(0.1, 1.0)),
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
        window = excluded_window(guards.periods, review.snapshot.time_s)
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

    PARAMS = {
        "reconfig_cost_s": Param(float, 2.0, "guards: seconds of the whole allocation a change of degrees costs (a "
                                             "scale-down needs (Σp-Σp')·benefit_horizon_s > this·(Σp+Σp'))", 0.0,
                                 search_when=("guards", True), search=SearchRange(0.0, 10.0)),
        "benefit_horizon_s": Param(float, 30.0, "guards: seconds over which a scale-down's freed slots are counted",
                                   0.0, open_minimum=True, search_when=("guards", True),
                                   search=SearchRange(5.0, 120.0, log=True)),
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


# The review's order, written once. A controller runs all of them unless it carries one out itself (`Guards(...,
# skip=...)`: the multi-level controller holds its scale-downs per table row).
REVIEW_STAGES: tuple[type[Stage], ...] = (IdleRelease, BurstReturn, StepFactors, Bounds, IneffectiveScaling,
                                          Stabilisation, ExcludedPeriods, UtilisationBand, ReconfigurationCost)


def run_review(stages: tuple[Stage, ...], review: Review, guards: Guards) -> Decision:
    """`review` through `stages` in order: after a stage decides, only the limits."""
    for stage in stages:
        if review.decided is None or stage.LIMIT:
            stage.apply(review, guards)
    return review.result()
