"""AUTOSCALE (Kotto-Kombi, Lumineau, Lamarre, EGC 2017): the preventive controller, as in its §3-§4 (pp. 61-64).

Once per iteration of length Δ (the `period_s` parameter; n = the micro-batches that ended in it), for each operator:

    EstimCharge = |EstimR| + backlog                    (eq. 3; |EstimR| from the load predictor, eq. 2)
    EstimCapacite = degree × Δ / Lat + ε                (eqs. 4-5; Lat = busy seconds per record, queueing excluded)
    NdA = EstimCharge / EstimCapacite                   (eq. 6): low <= θ_min < normal <= θ_max < strong <= 1 < critical

Table 1 (local) turns (class, trend) into an action, Table 2 (global) reconciles it with the upstream operators'
actions in topological order (scale-out > scale-in > nothing), and a validated action sets the degree to
min(maxP, ceil(degree × NdA)), or degree + 1 when the scale-out comes from strong-not-critical activity.

What the Spark job measures for it (the project's mapping of the paper's §3, pp. 60-61): an operator's arrivals in a
sub-interval are the records its upstream delivered in that micro-batch, and for the first operator the events that
became due (the offered load, not the rows admitted); its backlog (nbEnAttente, what it still has to process) is
the source's unread events scaled by the selectivities upstream of it — a micro-batch runs all its stages to
completion, so nothing queues between operators, but every unread event will pass through each of them, and
an expensive operator downstream of a cheap one is exactly where Storm's queue would have built up; Lat is its
tasks' busy time per input record; its degree is its partitions per batch.

The paper's ambiguities are parameters, each default a project's choice named in its doc: eq. 2 read literally or
extrapolated to the next iteration; ε zero or the covariance of recent capacities with the iteration index; upstream
= direct predecessors or all ancestors, their local or validated actions; the degree of a scale-out that Table 2
forces on an operator whose own decision was "nothing". θ_min 0.3 and θ_max 0.8 are the project's suggested
starting values (the paper's §3.3, p. 62, gives none). Δ defaults to 10 s, five triggers of the default 2 s.

A learned load predictor (predictor=registry, or any handed over by the run) is not the paper's: it was chosen on
held-back windows of traces and may do worse than the naive last value on a trace it never saw. Unless
predictor_guard is off, each operator's forecasts are then scored against the arrivals that followed, and the naive
forecast is used while the model's recent error is the larger (controllers.forecast_guard; the guard's state is in
each iteration's details, a fallback in its reason). The paper's and the naive predictors are never guarded.

The guard layer (controllers/guard_layer.py, controllers/guards.py; on by default, `guards=false` is
the paper exactly) reviews each proposal as it reviews DS2's and threshold's, and sizes each batch start for the
events it is about to read: a burst shorter than an iteration is otherwise met at the degrees of the iteration
before (docs/bursty.md, "AUTOSCALE with the guard layer"). The paper's reproductions run it off.

Known consequence of a faithful port: capacities are per operator, but a micro-batch runs its stages one after
another in the same trigger interval, so operators that are each "normal" can together overrun the trigger. The
paper has no such coupling (Storm's operators run concurrently); DS2's micro-batch adaptation (controllers.ds2) has.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from controllers.base import ConfigError, Controller, Param, Rule, register
from controllers.common_params import (INITIAL_DEGREE, INITIAL_DEGREES, LEARNED_PREDICTOR_PARAMS, MIN_DEGREE,
                                      at_most_max_degree, below)
from params.declare import Choices, SearchRange
from controllers.forecast import WARMUP, LastValuePredictor, PaperPredictor
from controllers.forecast_guard import GuardedPredictor
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS, GUARD_RULES
from controllers.slots import EXECUTOR_PARAMS, EXECUTOR_RULES
from controllers.types import Decision, RunContext, Snapshot

NOTHING, SCALE_IN, SCALE_OUT = "nothing", "scale-in", "scale-out"
PRECEDENCE = {NOTHING: 0, SCALE_IN: 1, SCALE_OUT: 2}  # scale-out > scale-in > nothing (paper §4.2)
CLASSES = ("low", "normal", "strong", "critical")

# Table 1: (load increasing?, activity class) -> local action
LOCAL_TABLE: Mapping[tuple[bool, str], str] = {
    (False, "low"): SCALE_IN, (False, "normal"): NOTHING, (False, "strong"): NOTHING, (False, "critical"): SCALE_OUT,
    (True, "low"): NOTHING, (True, "normal"): NOTHING, (True, "strong"): SCALE_OUT, (True, "critical"): SCALE_OUT,
}

# Table 2: (predominant upstream action, local action) -> validated action
GLOBAL_TABLE: Mapping[tuple[str, str], str] = {
    (NOTHING, NOTHING): NOTHING, (NOTHING, SCALE_IN): SCALE_IN, (NOTHING, SCALE_OUT): SCALE_OUT,
    (SCALE_IN, NOTHING): NOTHING, (SCALE_IN, SCALE_IN): SCALE_IN, (SCALE_IN, SCALE_OUT): SCALE_OUT,
    (SCALE_OUT, NOTHING): SCALE_OUT, (SCALE_OUT, SCALE_IN): NOTHING, (SCALE_OUT, SCALE_OUT): SCALE_OUT,
}


def classify(nda: float, theta_min: float, theta_max: float) -> str:
    if nda <= theta_min:
        return "low"
    if nda <= theta_max:
        return "normal"
    if nda <= 1.0:
        return "strong"
    return "critical"


def local_action(activity: str, trend: float) -> str:
    return LOCAL_TABLE[(trend > 0, activity)]


def predominant(actions: Sequence[str]) -> str:
    return max(actions, key=PRECEDENCE.__getitem__, default=NOTHING)


def global_actions(local: Mapping[str, str], order: Sequence[str], predecessors: Mapping[str, Sequence[str]],
                   upstream: str = "direct", upstream_actions: str = "validated") -> dict[str, str]:
    """Table 2 applied in topological order from the sources; `order` must be topological."""
    validated: dict[str, str] = {}
    for op in order:
        ups = list(predecessors.get(op, ()))
        if upstream == "ancestors":
            seen, stack = set(), list(ups)
            while stack:
                u = stack.pop()
                if u not in seen:
                    seen.add(u)
                    stack.extend(predecessors.get(u, ()))
            ups = [u for u in order if u in seen]
        source = validated if upstream_actions == "validated" else local
        validated[op] = GLOBAL_TABLE[(predominant([source[u] for u in ups]), local[op])]
    return validated


def quantify(degree: int, nda: float, action: str, cause: str, max_p: int, min_degree: int = 1,
             forced: str = "plus_one") -> int:
    """The new degree for a validated action (paper §4.3); `cause` is the local action's activity class, or
    'forced' when Table 2 turned a local 'nothing' into a scale-out."""
    if action == NOTHING:
        return degree
    if action == SCALE_OUT and cause == "strong":
        new = degree + 1
    elif action == SCALE_OUT and cause == "forced":
        new = degree + 1 if forced == "plus_one" else max(degree, math.ceil(degree * nda))
    else:
        new = math.ceil(degree * nda)
    return max(min_degree, min(max_p, new))


def index_covariance(values: Sequence[float]) -> float:
    """Sample covariance of the values with their index: the ε variant (capacity drift per iteration)."""
    n = len(values)
    if n < 2:
        return 0.0
    mi, mv = (n - 1) / 2, sum(values) / n
    return sum((i - mi) * (v - mv) for i, v in enumerate(values)) / (n - 1)


@dataclass
class _OperatorHistory:
    times: deque = field(default_factory=lambda: deque(maxlen=256))
    counts: deque = field(default_factory=lambda: deque(maxlen=256))
    intervals: deque = field(default_factory=lambda: deque(maxlen=256))
    capacities: deque = field(default_factory=lambda: deque(maxlen=32))
    service_s: float | None = None


@register
class AutoscaleController(GuardLayer, Controller):
    name = "autoscale"
    SLOT_AWARE = True
    summary = "AUTOSCALE (EGC 2017): predicted load / capacity per operator, decision tables, scale before congestion"
    PARAMS = {
        "period_s": Param(float, 10.0, "iteration length Δ in seconds (one decision per iteration); must be at "
                                       "least the trigger interval", 0.001, search=SearchRange(2.0, 30.0)),
        "theta_min": Param(float, 0.3, "NdA at or below which activity is low (project's choice; paper §3.3, p. 62)",
                           1e-9, 1.0, search=SearchRange(0.1, 0.6)),
        "theta_max": Param(float, 0.8, "NdA above which activity is strong (project's choice; paper §3.3, p. 62)",
                           1e-9, 1.0, search=SearchRange(0.5, 1.0)),
        "eq2_reading": Param(str, "extrapolated", "eq. 2 summed at the next iteration's timestamps ('extrapolated') "
                                                  "or at the fitted ones ('literal', = last iteration's count)",
                             choices=("extrapolated", "literal")),
        "epsilon": Param(str, "zero", "ε in eq. 5: 'zero' (persistence) or 'index_covariance' (covariance of the "
                                      "last capacities with the iteration index)",
                         choices=("zero", "index_covariance"), search=Choices(("zero", "index_covariance"))),
        "epsilon_iterations": Param(int, 4, "iterations used by epsilon=index_covariance", 2),
        "upstream": Param(str, "direct", "Table 2's 'preceding nodes': direct predecessors or all ancestors",
                          choices=("direct", "ancestors")),
        "upstream_actions": Param(str, "validated", "Table 2 reads the predecessors' validated or local actions",
                                  choices=("validated", "local")),
        "forced_scale_out": Param(str, "plus_one", "degree of a scale-out forced by Table 2 on a local 'nothing': "
                                                   "'plus_one' or 'quantified' (ceil(d × NdA), at least d)",
                                  choices=("plus_one", "quantified"), search=Choices(("plus_one", "quantified"))),
        "max_p": Param(int, 0, "maxP, the largest degree of any operator; 0: the run's max degree", 0),
        "min_degree": MIN_DEGREE,
        "parallel_slots": Param(int, 0, "cap the degree counted in the capacity at the tasks that can run at once "
                                        "(cf. the paper's eq. 4, p. 61); 0: no cap, as in the paper. With guards "
                                        "on it also bounds the degrees (0: the run's slots do)", 0),
        "predictor": Param(str, "paper", "load predictor: 'paper' (OLS on the last iteration), 'last-value' "
                                         "(naive), or 'registry' (the MLflow model `predictor_model@"
                                         "predictor_alias`, loaded by the run)",
                           choices=("paper", "last-value", "registry")),
        **LEARNED_PREDICTOR_PARAMS,
        "initial_degree": INITIAL_DEGREE.but(doc="degree of every operator not in initial_degrees (1: ConfMin)"),
        "initial_degrees": INITIAL_DEGREES.but(doc="per-operator first degrees, e.g. {enrich: 3} (ConfExpt)"),
        **EXECUTOR_PARAMS,
        # the guard layer (controllers/guards.py): on by default, `guards=false` is the paper exactly; min_degree
        # and parallel_slots are AUTOSCALE's own above, and the guards read them
        **{name: param for name, param in GUARD_PARAMS.items() if name not in ("min_degree", "parallel_slots")},
    }
    RULES = (
        below("theta_min", "theta_max"),
        at_most_max_degree("initial_degrees"),
        Rule(("min_degree", "max_p"), lambda v, c: None if c.max_degree is None else
             v["min_degree"] <= (min(v["max_p"], c.max_degree) if v["max_p"] else c.max_degree),
             "min_degree ({min_degree}) exceeds maxP (max_p {max_p}, or max_degree {max_degree} when 0)"),
        *EXECUTOR_RULES,
        *GUARD_RULES,
    )

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._make_guards()
        p = self.params
        self.max_p = min(p["max_p"], max_degree) if p["max_p"] else max_degree
        # the project's topologies are chains; a DAG would pass its own predecessor lists here
        self.predecessors = {op: ([self.operators[i - 1]] if i else []) for i, op in enumerate(self.operators)}
        self.predictor = (LastValuePredictor() if p["predictor"] == "last-value"
                          else PaperPredictor(p["eq2_reading"]))
        self.predictor_note = "" if p["predictor"] != "registry" else "registry predictor not loaded; paper's used"
        self._guards: dict[str, GuardedPredictor] = {}  # per operator, when a learned predictor is guarded
        self._history = {op: _OperatorHistory() for op in self.operators}
        self._period_start: float | None = None
        self._period_n = 0
        self._period_busy = {op: 0.0 for op in self.operators}
        self._period_records = {op: 0 for op in self.operators}
        self._period_out = {op: 0 for op in self.operators}

    def check_run(self, context: RunContext) -> None:
        if self.params["period_s"] < context.trigger_s:
            raise ConfigError(f"controller {self.name!r}: period_s ({self.params['period_s']}) is shorter than the "
                              f"trigger interval ({context.trigger_s}); an iteration must hold at least one "
                              "micro-batch")

    def bind(self, context: RunContext) -> None:
        """A run that loaded a registered load predictor hands it over here; its warning (a fallback) is shown in
        decision reasons. A learned predictor is guarded (predictor_guard): one guard per operator, since each
        operator's arrivals are their own series. The paper's and the naive predictors never are (a registry that
        fell back to the paper's predictor hands that over), so the paper's behaviour is reproduced exactly."""
        super().bind(context)
        if context.predictor is not None:
            self.predictor = context.predictor
            self.predictor_note = context.predictor_warning
            p = self.params
            learned = not isinstance(self.predictor, (PaperPredictor, LastValuePredictor))
            self._guards = ({op: GuardedPredictor(self.predictor, p["guard_window"], p["guard_margin"],
                                                  p["guard_min_scored"]) for op in self.operators}
                            if p["predictor_guard"] and learned else {})

    @property
    def predictor_name(self) -> str:
        return next(iter(self._guards.values())).name if self._guards else self.predictor.name

    def run_tags(self) -> dict[str, str]:
        return {"predictor": self.predictor_name}

    def initial_degrees(self) -> dict[str, int]:
        p = self.params
        return {op: min(self.max_degree, max(p["min_degree"], int(p["initial_degrees"].get(op, p["initial_degree"]))))
                for op in self.operators}

    def _observe(self, snapshot: Snapshot) -> None:
        upstream_out = None
        for op in snapshot.operators:
            h = self._history[op.name]
            arrivals = snapshot.arrivals if upstream_out is None else upstream_out
            h.times.append(snapshot.time_s)
            h.counts.append(arrivals)
            h.intervals.append(snapshot.interval_s)
            self._period_busy[op.name] += op.busy_s
            self._period_records[op.name] += op.records_in
            self._period_out[op.name] += op.records_out
            upstream_out = op.records_out
        self._period_n += 1

    def decide(self, snapshot: Snapshot) -> Decision:
        return self._reviewed(snapshot, self._propose)

    def _propose(self, snapshot: Snapshot) -> Decision:
        """The paper's decision: an iteration's tables once Δ has passed, else the current degrees."""
        if self._period_start is None:
            self._period_start = snapshot.time_s - snapshot.interval_s
        self._observe(snapshot)
        current = snapshot.degrees
        span = snapshot.time_s - self._period_start
        if span < self.params["period_s"] * (1 - 1e-9):
            return Decision(current, f"iteration in progress ({span:.1f}/{self.params['period_s']:g} s)")
        try:
            return self._iterate(snapshot, current, span)
        finally:
            self._period_start = snapshot.time_s
            self._period_n = 0
            self._period_busy = {op: 0.0 for op in self.operators}
            self._period_records = {op: 0 for op in self.operators}
            self._period_out = {op: 0 for op in self.operators}

    def _iterate(self, snapshot: Snapshot, current: dict[str, int], span: float) -> Decision:
        p = self.params
        n = self._period_n
        nda, cls, trend, local, details = {}, {}, {}, {}, {}
        waiting = float(snapshot.backlog)  # unread events, as records reaching each operator in turn
        warming_up = False
        for op in self.operators:
            h = self._history[op]
            if self._period_records[op]:
                h.service_s = self._period_busy[op] / self._period_records[op]
            predictor = self._guards.get(op, self.predictor)
            fc = predictor.forecast(list(h.times), list(h.counts), list(h.intervals), span, n)
            warming_up = warming_up or fc.predictor == WARMUP
            charge = fc.arrivals + waiting
            if self._period_records[op]:
                waiting *= self._period_out[op] / self._period_records[op]
            effective = min(current[op], p["parallel_slots"]) if p["parallel_slots"] else current[op]
            if h.service_s is None or h.service_s <= 0:
                capacity = math.inf  # nothing measured yet: no evidence of any load on this operator
            else:
                capacity = effective * span / h.service_s
            if math.isfinite(capacity):
                h.capacities.append(capacity)
            epsilon = (index_covariance(list(h.capacities)[-p["epsilon_iterations"]:])
                       if p["epsilon"] == "index_covariance" else 0.0)
            estimated = capacity + epsilon
            nda[op] = charge / estimated if estimated > 0 else math.inf
            cls[op] = classify(nda[op], p["theta_min"], p["theta_max"])
            trend[op] = fc.trend
            local[op] = local_action(cls[op], fc.trend)
            details.update({f"nda_{op}": nda[op], f"charge_{op}": charge, f"capacity_{op}": estimated,
                            f"trend_{op}": fc.trend})
            if op in self._guards:
                details.update({f"guard_{key}_{op}": value for key, value in self._guards[op].state().items()})
        validated = global_actions(local, self.operators, self.predecessors, p["upstream"], p["upstream_actions"])
        degrees = {}
        for op in self.operators:
            cause = "forced" if validated[op] == SCALE_OUT and local[op] != SCALE_OUT else cls[op]
            nda_op = nda[op] if math.isfinite(nda[op]) else float(self.max_p)
            degrees[op] = quantify(current[op], nda_op, validated[op], cause, self.max_p, p["min_degree"],
                                   p["forced_scale_out"])
        parts = [f"{op} NdA {nda[op]:.2f} {cls[op]} trend {'+' if trend[op] > 0 else '-'} {local[op]}"
                 + (f"->{validated[op]}" if validated[op] != local[op] else "")
                 + (f" {current[op]}->{degrees[op]}" if degrees[op] != current[op] else "")
                 for op in self.operators]
        note = f" [{self.predictor_note}]" if self.predictor_note else ""
        guard = [f"{op} {text}" for op, g in self._guards.items() if (text := g.explain("iterations"))]
        guard_note = f"; guard: {'; '.join(guard)}" if guard else ""
        if warming_up:
            guard_note += "; the model's history is still short: last value used"
        return Decision(degrees, f"iteration of {n} batches, predictor {self.predictor_name}{note}: "
                                 + "; ".join(parts) + guard_note, details=details)

