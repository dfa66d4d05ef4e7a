"""DS2 (Kalavri et al., "Three steps is all you need", OSDI 2018), the method behind Flink's autoscaler, adapted to
micro-batches. The derivation, with a worked example and the knobs, is docs/ds2.md.

DS2 measures each operator's *true* processing rate — records processed per second of busy time, which does not
depend on how many tasks run it — and its selectivity (records out / records in). From the sources' target rate it
propagates the rate every operator must sustain, in topological order, and sizes all operators in one step.

Adaptation to micro-batches (the derivation this controller implements). In a micro-batch job all operators share
the trigger interval T: a batch reads what arrived during T and its operators run one after another, each a stage
behind a shuffle. With target source rate λ (the arrival rate, plus the backlog spread over `catch_up_s`),
operator i receives λ_i = λ · σ_1 · … · σ_{i-1} records per second, i.e. λ_i·T per batch, each costing s_i busy
seconds (s_i = 1 / true rate). Spread over p_i tasks running in parallel, its stage lasts about a_i / p_i with
a_i = λ_i·T·s_i. The batch takes the sum of its stages plus a fixed cost C (scheduling, commit, task start-up;
measured as batch time minus the stages' share). The job keeps up with headroom when the batch fits in a fraction u
of the trigger interval (the target utilisation):

        Σ_i a_i / p_i + C  <=  u · T

Unlike streaming DS2 (one inequality per operator, p_i = ⌈λ_i·s_i / u⌉), this is one inequality over the whole
vector: a slow operator can be given more tasks so that a cheap one needs fewer. The least-cost vector (cost
Σ p_i, the slot-seconds per second) is found greedily: start every operator at its minimum and repeatedly add a task
where it shortens the batch most, a_i/p_i − a_i/(p_i+1), until the inequality holds. Because each operator's gain
shrinks with every task added (a_i/p is convex), this greedy order is optimal for the integer problem. Degrees are
capped at `parallel_slots` (tasks beyond the executor cores add waves, not speed). When the target is out of reach
even at the cap (a large fixed cost C), the controller settles for u = 1 — keeping up — instead of paying for every
task to miss the target anyway.

Knobs as Flink's autoscaler names them: target utilisation with a band (no action while the current vector's
predicted utilisation is within target ± band), min/max degree, a scale-down stabilisation delay (a lower vector
must be asked for continuously that long), and the metrics window (batches averaged). Defaults are the project's
choices, sized for short experiments: target 0.7, band 0.2, delay 10 s, window 3 batches (and at least 200
records per operator before a rate is trusted), catch-up 10 s.

Guards (controllers/guards.py; on by default, and `guards=off` is DS2 exactly
as above). The target, band, catch-up and minimum records are the guard layer's options of the same names (one
declaration, the same defaults). With guards on, DS2 still computes the least-cost vector, but:
- its target rate is the guards' catch-up rate: the sustained arrival rate (median of the last 3 batches, so a
  spike already processed is not sized for) plus the lag drained within catch_up_s, capped by the run's SLO;
- a stage at degree p takes (records × cost per record + p × cost per task) ÷ speedup(p), from what the operator
  showed at the degrees it ran at (observed scalability), instead of a_i / p; the fixed cost is the batch time
  minus the stages' wall times; no operator is sized above the slots or above an ineffective-scaling block;
- the proposal is either the least-cost vector from the current one upwards (when the current vector misses the
  budget) or a lower one (when it fits), never a mix whose ups were sized for downs that must wait;
- when no vector within the caps keeps up either (a stage's per-task cost, or the fixed cost, fills the trigger),
  the least vector whose batch is within OUT_OF_REACH_SLACK (5 %) of the shortest the caps allow, rather than
  every slot for the last few per cent;
- the proposal goes through the guards' review (bounds, ineffective scaling, stabilisation_s instead of
  scale_down_delay_s, excluded periods, the band on the next batch's utilisation instead of the predicted one,
  reconfiguration cost), which records what it did in the decision's details and reason.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Mapping

from controllers.base import Controller, Param, register
from controllers.common_params import SEARCHED_INITIAL_DEGREE, at_most_max_degree, uniform_initial_degrees
from controllers.cost_model import within_budget
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS, GUARD_RULES, catch_up_rate, vector_text
from controllers.slots import EXECUTOR_PARAMS, EXECUTOR_RULES
from params.declare import SearchRange
from controllers.types import Decision, Snapshot


# The project's choice for a load no vector within the caps keeps up with: tasks are bought until the batch is within
# this share of the shortest the caps allow, not beyond (with a per-task cost the last tasks shorten it by a fraction
# of a per cent each).
OUT_OF_REACH_SLACK = 0.05


def least_cost_degrees(work_s: dict[str, float], budget_s: float, min_degree: int, max_degree: int) -> dict[str, int]:
    """The least Σp with Σ work/p <= budget (greedy on the marginal gain); max degrees when even they do not fit."""
    return least_cost_vector(lambda op, p: work_s[op] / p, tuple(work_s), budget_s, min_degree,
                             {op: max_degree for op in work_s if work_s[op] > 0})


def least_cost_vector(stage_s: Callable[[str, int], float], operators: tuple[str, ...], budget_s: float,
                      min_degree: int | Mapping[str, int], caps: Mapping[str, int]) -> dict[str, int]:
    """The least Σp with Σ stage_s(op, p) <= budget, greedily adding the task that shortens the batch most, from
    min_degree (one for all, or per operator); an operator grows only up to its cap (absent: never), and not at all
    once no task shortens the batch."""
    degrees = {op: min_degree[op] if isinstance(min_degree, Mapping) else min_degree for op in operators}

    def gain(op: str) -> float:
        return stage_s(op, degrees[op]) - stage_s(op, degrees[op] + 1)

    while not within_budget(sum(stage_s(op, degrees[op]) for op in operators), budget_s):
        growable = [op for op in operators if degrees[op] < caps.get(op, 0)]
        if not growable:
            break
        best = max(growable, key=gain)
        if gain(best) <= 0:
            break
        degrees[best] += 1
    return degrees


@register
class DS2Controller(GuardLayer, Controller):
    name = "ds2"
    SLOT_AWARE = True
    summary = "DS2 rate-based scaling (Flink's autoscaler), all operators in one step, for micro-batches"
    PARAMS = {
        "scale_down_delay_s": Param(float, 10.0, "guards off: a lower vector must be proposed this long before it is "
                                                 "applied (guards on: stabilisation_s)", 0.0,
                                    search=SearchRange(0.0, 60.0), search_when=("guards", False)),
        "window_batches": Param(int, 3, "batches whose metrics are averaged", 1, search=SearchRange(1, 10)),
        "initial_degree": SEARCHED_INITIAL_DEGREE,
        **GUARD_PARAMS,
        **EXECUTOR_PARAMS,
    }
    RULES = (at_most_max_degree("initial_degree", "min_degree"), *GUARD_RULES, *EXECUTOR_RULES)

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._window: deque[Snapshot] = deque(maxlen=self.params["window_batches"])
        self._lower_since: float | None = None
        self._last_change_batch = -1
        self._make_guards()

    def initial_degrees(self) -> dict[str, int]:
        return uniform_initial_degrees(self.params, self.operators, self.max_degree)

    def _cap(self) -> int:
        slots = self.params["parallel_slots"]
        return min(self.max_degree, slots) if slots else self.max_degree

    def plan(self, snapshot: Snapshot) -> tuple[dict[str, int], dict[str, float]] | None:
        """The least-cost degree vector for the observed rates, and the numbers behind it (None: nothing measured)."""
        # only batches run at the current degrees describe them; a reconfiguration starts a new window
        window = [s for s in self._window if s.batch_id > self._last_change_batch] or [snapshot]
        interval = sum(s.interval_s for s in window)
        if interval <= 0:
            return None
        arrival_rate = sum(s.arrivals for s in window) / interval
        trigger = snapshot.trigger_interval_s
        if self.guards.enabled:  # the catch-up guard: the sustained rate plus the lag, within the SLO
            rate, lag, sustained = self.guards.target_rate(snapshot)
        else:
            sustained = arrival_rate
            rate, lag = catch_up_rate(arrival_rate, snapshot.backlog, snapshot.batch_duration_s,
                                      self.params["catch_up_s"])
        work, rates, flowing = {}, {}, rate
        for op in snapshot.operators:
            records = sum(s.operator(op.name).records_in for s in window)
            busy = sum(s.operator(op.name).busy_s for s in window)
            if records < self.params["min_records"]:
                return None
            work[op.name] = flowing * trigger * busy / records  # a_i: busy seconds per trigger interval
            rates[op.name] = flowing
            flowing *= sum(s.operator(op.name).records_out for s in window) / records
        guarded = self.guards.enabled
        if guarded:
            # observed scalability: the stage at degree p from the operator's fitted per-record and per-task costs
            # and the speedup it showed at each degree (busy ÷ wall time; linear where it never ran), not a_i / p
            per_record = {op: work[op] / (rates[op] * trigger) if rates[op] > 0 else 0.0 for op in work}

            def stage(op: str, p: int) -> float:
                return self.guards.stage_s(op, p, rates[op] * trigger, per_record[op]) if work[op] > 0 else 0.0

            fixed = [s.batch_duration_s - sum(o.span_s for o in s.operators) for s in window]
            caps = {op: self.guards.max_useful(op, snapshot.degrees[op]) for op in work if work[op] > 0}
        else:
            def stage(op: str, p: int) -> float:
                return work[op] / p

            fixed = [s.batch_duration_s - sum(o.busy_s / o.degree for o in s.operators) for s in window]
            caps = {op: self._cap() for op in work if work[op] > 0}
        overhead = max(0.0, sum(fixed) / len(fixed))
        ops = tuple(work)
        budget = self.params["target_utilization"] * trigger - overhead
        def fits(vector: Mapping[str, int]) -> bool:
            return within_budget(sum(stage(op, vector[op]) for op in ops), budget)

        degrees = least_cost_vector(stage, ops, budget, self.params["min_degree"], caps)
        if not fits(degrees):
            # the target is out of reach even at the cap: settle for keeping up (batch <= trigger interval), which
            # is what stability needs, rather than paying for every task to miss the target anyway
            budget = trigger - overhead
            degrees = least_cost_vector(stage, ops, budget, self.params["min_degree"], caps)
        if guarded and budget > 0 and not fits(degrees):
            # keeping up is out of reach too (a stage's fitted per-task cost, or the fixed cost, fills the budget):
            # the greedy above bought every task up to the caps, the last ones for a fraction of a per cent each.
            # The budget becomes the shortest batch the caps allow plus OUT_OF_REACH_SLACK of it: the least vector
            # that comes that close, not every slot for the last few per cent
            budget = sum(stage(op, degrees[op]) for op in ops) * (1.0 + OUT_OF_REACH_SLACK)
            degrees = least_cost_vector(stage, ops, budget, self.params["min_degree"], caps)
        current = snapshot.degrees
        predicted = (sum(stage(op, current[op]) for op in ops) + overhead) / trigger
        if guarded:
            # scale-ups at once, scale-downs after stabilisation: a proposal is either the least-cost vector above
            # the current one (when the current one does not fit the budget) or one below it, never a mix whose
            # ups were sized for downs that would have to wait
            if fits(current):
                lower = {op: min(current[op], degrees.get(op, current[op])) for op in current}
                degrees = lower if fits(lower) else dict(current)
            else:
                floors = {op: current[op] for op in ops}
                degrees = least_cost_vector(stage, ops, budget, floors,
                                            {op: max(caps.get(op, 0), current[op]) for op in ops})
        details = {"target_rate": rate, "lag": lag, "overhead_s": overhead, "budget_s": budget,
                   "utilization": predicted, **{f"work_s_{op}": w for op, w in work.items()},
                   # for the decision ledger (controllers/ledger.py): the arrival rate expected, and the batch the
                   # proposed vector should take on the events it sized for
                   "predicted.arrival_eps": sustained, "predicted.records": rate * trigger,
                   "predicted.batch_s": sum(stage(op, degrees[op]) for op in ops) + overhead,
                   "predicted.vector": vector_text(degrees)}
        if guarded:
            details.update({f"guard.stage_s.{op}": stage(op, degrees[op]) for op in ops})
        return degrees, details

    def at_batch_start(self, pending: int, time_s: float, degrees: Mapping[str, int],
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        decision = super().at_batch_start(pending, time_s, degrees, oldest_wait_s, recent_arrivals)
        if decision is not None:
            # the batch that starts runs at these degrees: DS2's window of measurements at the current degrees
            # starts with it
            self._last_change_batch = self._window[-1].batch_id if self._window else -1
        return decision

    def decide(self, snapshot: Snapshot) -> Decision:
        self._window.append(snapshot)
        decision = self._reviewed(snapshot, self._propose)  # with guards off, the proposal itself
        if dict(decision.degrees) != snapshot.degrees:
            self._last_change_batch = snapshot.batch_id
        return decision

    def _propose(self, snapshot: Snapshot) -> Decision:
        """DS2's proposal: with the guards on, the least-cost vector as `plan` bounds it, for the guards' review;
        with them off, DS2 as published (its own band and scale-down delay)."""
        current = snapshot.degrees
        planned = self.plan(snapshot)
        if planned is None:
            return Decision(current, f"fewer than {self.params['min_records']} records measured at these degrees")
        degrees, details = planned
        p = self.params
        if details["budget_s"] <= 0:  # more tasks shorten stages, never the fixed cost
            return Decision(current, f"the fixed per-batch cost ({details['overhead_s']:.2f} s) alone exceeds the "
                                     f"target share of the trigger interval: no degree vector can meet it",
                            details=details)
        if self.guards.enabled:
            if degrees == current:
                return Decision(current, f"predicted utilisation {details['utilization']:.2f}, already the "
                                         f"least-cost vector", details=details)
            return Decision(degrees, f"predicted utilisation {details['utilization']:.2f}: target "
                                     f"{details['target_rate']:.0f} ev/s needs {degrees}", details=details)
        low, high = p["target_utilization"] - p["utilization_band"], p["target_utilization"] + p["utilization_band"]
        if low <= details["utilization"] <= high:
            self._lower_since = None
            return Decision(current, f"predicted utilisation {details['utilization']:.2f} within [{low:.2f}, "
                                     f"{high:.2f}]", details=details)
        if degrees == current:
            return Decision(current, f"utilisation {details['utilization']:.2f}, already the least-cost vector",
                            details=details)
        if all(degrees[op] <= current[op] for op in current):  # a pure scale-down waits for stabilisation
            self._lower_since = self._lower_since if self._lower_since is not None else snapshot.time_s
            waited = snapshot.time_s - self._lower_since
            if waited < p["scale_down_delay_s"]:
                return Decision(current, f"utilisation {details['utilization']:.2f} < {low:.2f}: scale-down to "
                                         f"{degrees} pending ({waited:.1f}/{p['scale_down_delay_s']:g} s)",
                                details=details)
        self._lower_since = None
        return Decision(degrees, f"utilisation {details['utilization']:.2f} outside [{low:.2f}, {high:.2f}]: target "
                                 f"{details['target_rate']:.0f} ev/s needs {degrees}", details=details)
