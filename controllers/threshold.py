"""Reactive threshold controller in the style of Spark Streaming's former dynamic allocation.

Spark Streaming (DStreams) scaled on one signal: the ratio of average batch processing time to the batch interval.
At or above an upper ratio (0.9) it added executors, max(1, round(ratio)) of them; at or below a lower ratio (0.3)
it removed one; and it waited a scaling interval between actions. This controller applies the same rule per
operator, which is what a micro-batch job with live per-operator parallelism can act on: it scales up the
bottleneck (the operator that took the longest wall time in the batch) and scales down the least utilised one.

Guards (controllers/guards.py; on by default, and `guards=off` is the rule above, exactly). With guards on the rule
still decides whether to act and on which operator, and:
- a utilisation below the guards' band (target_utilization - utilization_band), or the backlog a catch-up scale-up
  was sized for being drained (`Guards.lag_drained`), also counts as a reason to scale down, as the ratio at or
  below scale_down_ratio does: the catch-up sizing scales up for the backlog as well as the rate, and the capacity
  it added for the backlog must be able to go once the backlog is drained;
- the catch-up guard sizes the action instead of the ratio step and the one-task decrease: the bottleneck goes to
  the least degree at which it carries the guards' catch-up rate (sustained arrival rate plus the backlog drained
  within catch_up_s, capped by the run's SLO) with the batch within target_utilization of the trigger, on its
  observed scalability (per-record and per-task costs, speedup at each degree); the idlest operator goes down to
  the least degree that still does. No action when the current degree already is that degree;
- operators at the slot bound (parallel_slots) or at an ineffective-scaling block are not bottleneck candidates;
- every proposal goes through the guards' review (bounds, ineffective scaling, stabilisation of scale-downs,
  excluded periods, band, reconfiguration cost). The cooldown still follows every action.
"""
from __future__ import annotations

from controllers.base import Controller, Param, register
from controllers.common_params import COOLDOWN_S, SEARCHED_INITIAL_DEGREE, at_most_max_degree, below
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS, GUARD_RULES
from controllers.slots import EXECUTOR_PARAMS, EXECUTOR_RULES
from params.declare import Choices, SearchRange
from controllers.types import Decision, Snapshot


@register
class ThresholdController(GuardLayer, Controller):
    name = "threshold"
    SLOT_AWARE = True
    summary = "scale the bottleneck up when batch time / trigger >= up, the idlest down when <= down, with a cooldown"
    PARAMS = {
        "scale_up_ratio": Param(float, 0.9, "batch duration / trigger interval at or above which to scale up", 0.0,
                                search=SearchRange(0.5, 1.5)),
        "scale_down_ratio": Param(float, 0.3, "ratio at or below which to scale down", 0.0,
                                  search=SearchRange(0.05, 0.6)),
        "cooldown_s": COOLDOWN_S,
        "initial_degree": SEARCHED_INITIAL_DEGREE,
        "step": Param(str, "ratio", "scale-up size: 'ratio' adds max(1, round(ratio)) like Spark; 'one' adds 1 "
                                    "(guards on: the catch-up size)",
                      choices=("ratio", "one"), search=Choices(("ratio", "one"))),
        **GUARD_PARAMS,
        **EXECUTOR_PARAMS,
    }
    RULES = (below("scale_down_ratio", "scale_up_ratio"), at_most_max_degree("initial_degree", "min_degree"),
             *GUARD_RULES, *EXECUTOR_RULES)

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._last_action_s: float | None = None
        self._make_guards()

    def initial_degrees(self) -> dict[str, int]:
        return {op: max(self.params["initial_degree"], self.params["min_degree"]) for op in self.operators}

    def decide(self, snapshot: Snapshot) -> Decision:
        decision = self._reviewed(snapshot, self._rule)
        if dict(decision.degrees) != snapshot.degrees:
            self._last_action_s = snapshot.time_s
        return decision

    def _rule(self, snapshot: Snapshot) -> Decision:
        p = self.params
        guards = self.guards if self.guards.enabled else None
        degrees = snapshot.degrees
        ratio = snapshot.batch_duration_s / snapshot.trigger_interval_s
        details = {"ratio": ratio}
        if self._last_action_s is not None and snapshot.time_s - self._last_action_s < p["cooldown_s"]:
            return Decision(degrees, f"cooldown ({snapshot.time_s - self._last_action_s:.1f}s < {p['cooldown_s']}s)", details=details)
        if ratio >= p["scale_up_ratio"]:
            top = {op.name: guards.max_useful(op.name, op.degree) if guards else self.max_degree
                   for op in snapshot.operators}
            candidates = [op for op in snapshot.operators if op.degree < top[op.name]]
            if not candidates:
                where = "at its largest useful degree (slots, ineffective-scaling blocks)" if guards else "at max"
                return Decision(degrees, f"ratio {ratio:.2f} >= {p['scale_up_ratio']} but every operator is {where}", details=details)
            bottleneck = max(candidates, key=lambda op: op.span_s)
            step = max(1, round(ratio)) if p["step"] == "ratio" else 1
            new = min(self.max_degree, bottleneck.degree + step)
            if guards:
                target, sized = _catch_up(guards, snapshot, bottleneck.name, details)
                if sized is not None:
                    if sized <= bottleneck.degree:
                        return Decision(degrees, f"ratio {ratio:.2f} >= {p['scale_up_ratio']}, but {bottleneck.name} "
                                                 f"carries the catch-up rate {target:.0f} ev/s at its degree "
                                                 f"{bottleneck.degree}", details=details)
                    new = sized
                new = min(new, top[bottleneck.name])
            degrees[bottleneck.name] = new
            return Decision(
                degrees,
                f"ratio {ratio:.2f} >= {p['scale_up_ratio']}: bottleneck {bottleneck.name} "
                f"({bottleneck.span_s:.2f}s) {bottleneck.degree}->{new}",
                details=details,
            )
        # with guards, a utilisation below the band, or the backlog a catch-up was sized for being drained, also
        # triggers a scale-down: the catch-up sizing scaled up for the backlog as well as the rate, and once the
        # backlog is drained the batch ratio settles between the rule's ratios (0.59 after the plant model's step,
        # with enrich at the degree sized for it), where the rule alone would keep that capacity for good
        low_edge = p["target_utilization"] - p["utilization_band"]
        utilization = guards.utilization(snapshot)[1] if guards else None
        drained = guards is not None and guards.lag_drained(snapshot)
        if ratio <= p["scale_down_ratio"] or (utilization is not None and utilization < low_edge) or drained:
            why = (f"ratio {ratio:.2f} <= {p['scale_down_ratio']}" if ratio <= p["scale_down_ratio"] else
                   f"utilisation {utilization:.2f} below the band ({low_edge:.2f})" if utilization < low_edge else
                   "the backlog the last scale-up was sized for is drained")
            candidates = [op for op in snapshot.operators if op.degree > p["min_degree"]]
            if not candidates:
                return Decision(degrees, f"{why}, all at min", details=details)
            idlest = min(candidates, key=lambda op: op.busy_s / op.degree)
            new = idlest.degree - 1
            if guards:
                target, sized = _catch_up(guards, snapshot, idlest.name, details)
                if sized is not None:
                    if sized >= idlest.degree:
                        return Decision(degrees, f"{why}, but {idlest.name} needs its degree {idlest.degree} for "
                                                 f"the catch-up rate {target:.0f} ev/s", details=details)
                    new = max(sized, p["min_degree"])
            degrees[idlest.name] = new
            return Decision(
                degrees,
                f"{why}: least utilised {idlest.name} {idlest.degree}->{new}",
                details=details,
            )
        return Decision(degrees, f"ratio {ratio:.2f} within ({p['scale_down_ratio']}, {p['scale_up_ratio']})", details=details)


def _catch_up(guards, snapshot: Snapshot, op: str, details: dict) -> tuple[float, int | None]:
    """The catch-up guard's rate and the least degree of `op` that carries it (None: not enough observed), both
    recorded in the decision's details."""
    target, lag, sustained = guards.target_rate(snapshot)
    sized = guards.catch_up_degree(snapshot, op, target)
    # the arrival rate it sized for, for the decision ledger (controllers/ledger.py)
    details.update({"guard.catch_up_rate": target, "guard.lag": lag, "predicted.arrival_eps": sustained})
    if sized is not None:
        details[f"guard.catch_up_degree.{op}"] = sized
    return target, sized
