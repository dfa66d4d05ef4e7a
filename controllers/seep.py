"""The SEEP thesis' controllers on the micro-batch job: user-written scaling policies and SEEP's built-in detector.

Both see the job the way SEEP's monitoring slaves reported it: one reading per operator every sampling period
(5 s by default, SEEP's monitorInterval), not one per micro-batch. `Sampler` turns the batches of a period into that
reading — rates and busy fractions over the whole period, queue length and latency as the last batch left them —
which is where Spark's micro-batching enters: a reading can only be taken when a batch ends, so the effective
sampling instants are the first batch ends at or after each multiple of the period (skipping a tick that would come
less than half a period after the last reading).

Spark mapping of the metrics (controllers.policy.model.METRICS): queue-length = events due but unread, times the
selectivities upstream of the operator (what is waiting for it); input-rate = the same flow per second; processed-
rate = records the operator read per second (mean: per task); utilisation = busy time / (tasks x time), weighted
by how long each degree was in force — mean over the tasks, or the busiest task with `aggregate: max`; latency = p99
end-to-end of the last batch, ms; cpu = the job's processes on this host as a share of its cores (averaged over the
period, capped at 100) and memory (the same for every operator: aggregate `job`).

Both wear the guard layer (controllers/guard_layer.py), on by default as on every parallelism controller: a policy
or the detector still decides when and what to scale at each sampling instant, and its proposal goes through the
guards' review (bounds, band, stabilisation, ineffective scaling, reconfiguration cost, excluded periods); each
batch start is sized for the events it is about to read (burst sizing), which a policy sampling every 5 s cannot
do, and the burst's vector returns after its batch. A policy's or the detector's step after a burst batch is taken
from its own vector, the one before the burst (`Guards.controllers_vector`). The detector never scales in, so without the layer a burst
holds its capacity to the run's end. `guards=false` is the thesis exactly (docs/seep.md's reproductions run so). The
policy's own rule guards (`with_no_scale_out_since: 10`) apply to its own actions; its `never_above` limits bound
the layer's sizing too (a limit is the user's resources: `Policy.upper_limits`), so a burst is sized within them,
while an operator no limited rule scales is sized up to the slots like any other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from typing import Any

from controllers.base import ConfigError, Controller, Param, register
from controllers.common_params import INITIAL_DEGREE, INITIAL_DEGREES, at_most_max_degree
from controllers.guard_layer import GuardLayer
from controllers.guards import GUARD_PARAMS, GUARD_RULES
from params.declare import SearchRange
from controllers.policy.catalogue import resolve_policy
from controllers.policy.engine import PolicyEngine
from controllers.policy.parse import PolicyError
from controllers.types import Decision, Snapshot


@dataclass
class _Accumulated:
    interval_s: float = 0.0
    arrivals: int = 0
    cpu_core_s: float = 0.0  # percent-of-a-core x seconds, to average CPU over the period
    cpu_s: float = 0.0  # seconds with a CPU reading
    records_in: dict[str, int] = field(default_factory=dict)
    busy_s: dict[str, float] = field(default_factory=dict)
    task_busy_s: dict[str, float] = field(default_factory=dict)  # busy / degree per batch: time-weighted per task
    max_task_s: dict[str, float] = field(default_factory=dict)


class Sampler:
    """Collects batches and yields one reading per operator per sampling period."""

    def __init__(self, operators: tuple[str, ...], period_s: float):
        self.operators = operators
        self.period_s = period_s
        self._next_tick = period_s
        self._acc = _Accumulated()

    def add(self, snapshot: Snapshot) -> dict[str, dict[str, dict[str, float]]] | None:
        acc = self._acc
        acc.interval_s += snapshot.interval_s
        acc.arrivals += snapshot.arrivals
        if snapshot.cpu_percent is not None:
            acc.cpu_core_s += snapshot.cpu_percent * snapshot.interval_s
            acc.cpu_s += snapshot.interval_s
        for op in snapshot.operators:
            acc.records_in[op.name] = acc.records_in.get(op.name, 0) + op.records_in
            acc.busy_s[op.name] = acc.busy_s.get(op.name, 0.0) + op.busy_s
            acc.task_busy_s[op.name] = acc.task_busy_s.get(op.name, 0.0) + op.busy_s / op.degree
            acc.max_task_s[op.name] = acc.max_task_s.get(op.name, 0.0) + op.max_task_s
        if snapshot.time_s + 1e-9 < self._next_tick or acc.interval_s <= 0:
            return None
        self._next_tick = (math.floor(snapshot.time_s / self.period_s) + 1) * self.period_s
        if self._next_tick - snapshot.time_s < self.period_s / 2:  # a batch that ended just before a tick
            self._next_tick += self.period_s  # would make two readings a moment apart
        readings = self._readings(snapshot, acc)
        self._acc = _Accumulated()
        return readings

    def _readings(self, snapshot: Snapshot, acc: _Accumulated) -> dict[str, dict[str, dict[str, float]]]:
        out = {}
        upstream = 1.0  # product of the selectivities before this operator
        job_level = {"memory": snapshot.memory_mb,
                     "latency": None if snapshot.latency_p99_s is None else 1000.0 * snapshot.latency_p99_s}
        if acc.cpu_s > 0:
            cpu = acc.cpu_core_s / acc.cpu_s
            job_level["cpu"] = min(100.0, cpu / snapshot.cpu_cores) if snapshot.cpu_cores else cpu
        for op in snapshot.operators:
            degree = op.degree
            queue = snapshot.backlog * upstream
            offered = acc.arrivals * upstream / acc.interval_s
            processed = acc.records_in.get(op.name, 0) / acc.interval_s
            reading = {
                "queue-length": {"sum": queue, "mean": queue / degree},
                "input-rate": {"sum": offered, "mean": offered / degree},
                "processed-rate": {"sum": processed, "mean": processed / degree},
                "utilisation": {"mean": 100.0 * acc.task_busy_s.get(op.name, 0.0) / acc.interval_s,
                                "max": 100.0 * acc.max_task_s.get(op.name, 0.0) / acc.interval_s},
            }
            reading.update({metric: {"job": value} for metric, value in job_level.items() if value is not None})
            out[op.name] = reading
            if op.selectivity is not None:
                upstream *= op.selectivity
        return out


@register
class PolicyController(GuardLayer, Controller):
    name = "seep-policy"
    summary = ("a user's scaling policy (SEEP thesis rules: action, factor, limit, AND-ed triggers, guard): a "
               "catalogue name or the policy's YAML/JSON")
    PARAMS = {
        "policy": Param(str, "seep-t5", "catalogue name (controllers/policy/catalogue) or the policy as YAML/JSON "
                                        "text; `python -m jobs.run --policy FILE` reads a file", structured=True,
                        identity=lambda text: resolve_policy(text).to_dict()),
        "initial_degree": INITIAL_DEGREE,
        "initial_degrees": INITIAL_DEGREES,
        **GUARD_PARAMS,
    }
    RULES = (at_most_max_degree("initial_degree", "initial_degrees", "min_degree"), *GUARD_RULES)

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        try:
            self.policy = resolve_policy(self.params["policy"], self.operators)
        except PolicyError as exc:
            raise ConfigError(f"controller {self.name!r}: {exc}") from None
        # the user's `never_above` limits bound the guards' burst sizing too: a limit is the user's resources
        self._make_guards(self.policy.upper_limits(self.operators, self.initial_degrees()))
        self.sampler = Sampler(self.operators, self.policy.options.sampling_period_s)
        self.engine = PolicyEngine(self.policy, self.operators, self.initial_degrees(), max_degree)

    def initial_degrees(self) -> dict[str, int]:
        return {op: int(self.params["initial_degrees"].get(op, self.params["initial_degree"])) for op in self.operators}

    def run_artifacts(self) -> dict[str, Any]:
        """The policy as the user wrote it and as it was understood."""
        return {"config/policy.txt": str(self.params["policy"]), "config/policy.json": self.policy.to_dict()}

    def run_params(self) -> dict[str, Any]:
        return {"policy.name": self.policy.name or "(unnamed)", "policy.rules": len(self.policy.rules)}

    def decide(self, snapshot: Snapshot) -> Decision:
        return self._reviewed(snapshot, self._propose)

    def _propose(self, snapshot: Snapshot) -> Decision:
        degrees = self.guards.controllers_vector(snapshot.degrees)  # the policy's own, not a burst's
        readings = self.sampler.add(snapshot)
        if readings is None:
            return Decision(degrees, "between samples")
        details = {f"{op}.{t.metric}.{t.aggregate}": readings[op][t.metric][t.aggregate]
                   for rule in self.policy.rules for t in rule.triggers
                   for op in (self.operators if rule.operator == "*" else (rule.operator,))
                   if t.aggregate in readings.get(op, {}).get(t.metric, {})}
        actions = self.engine.observe(snapshot.time_s, readings, degrees)
        for action in actions:
            if action.executed:
                degrees[action.operator] = action.new_size
        reason = "; ".join(a.describe() for a in actions) if actions else "sampled: no rule fired"
        return Decision(degrees, reason, details=details)


@register
class SeepDetector(GuardLayer, Controller):
    name = "seep-detector"
    summary = "SEEP's built-in detector: k consecutive reports above delta percent -> +1 instance (no scale-in)"
    PARAMS = {
        "threshold_percent": Param(float, 50.0, "delta: the busy percentage a report must exceed (SEEP: 50)", 0.0,
                                   100.0, search=SearchRange(20.0, 90.0)),
        "consecutive": Param(int, 2, "k: consecutive reports above delta before scaling out (SEEP: 2)", 1,
                             search=SearchRange(1, 5)),
        "metric": Param(str, "utilisation", "'utilisation' (per operator busy fraction) or 'cpu' (the job's "
                                            "processes; then the busiest operator scales)", choices=("utilisation",
                                                                                                     "cpu")),
        "sampling_period_s": Param(float, 5.0, "seconds between reports (SEEP's monitorInterval: 5)", 0.0,
                                   open_minimum=True, search=SearchRange(1.0, 20.0)),
        "initial_degree": INITIAL_DEGREE,
        **GUARD_PARAMS,
    }
    RULES = (at_most_max_degree("initial_degree", "min_degree"), *GUARD_RULES)

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._make_guards()
        self.sampler = Sampler(self.operators, self.params["sampling_period_s"])
        self.counts = {op: 0 for op in self.operators}

    def initial_degrees(self) -> dict[str, int]:
        return {op: self.params["initial_degree"] for op in self.operators}

    def decide(self, snapshot: Snapshot) -> Decision:
        return self._reviewed(snapshot, self._propose)

    def _propose(self, snapshot: Snapshot) -> Decision:
        degrees = self.guards.controllers_vector(snapshot.degrees)  # the detector's own, not a burst's
        readings = self.sampler.add(snapshot)
        if readings is None:
            return Decision(degrees, "between reports")
        p = self.params
        if p["metric"] == "cpu":
            cpu = next(iter(readings.values())).get("cpu", {}).get("job")
            busiest = max(readings, key=lambda op: readings[op]["utilisation"]["mean"])
            values = {op: (cpu if op == busiest and cpu is not None else 0.0) for op in readings}
        else:
            values = {op: readings[op]["utilisation"]["mean"] for op in readings}
        changed = []
        for op, value in values.items():
            self.counts[op] = self.counts[op] + 1 if value > p["threshold_percent"] else 0
            if self.counts[op] >= p["consecutive"]:
                self.counts[op] = 0
                if degrees[op] < self.max_degree:
                    degrees[op] += 1
                    changed.append(f"{op} {degrees[op] - 1}->{degrees[op]} ({p['consecutive']} reports of "
                                   f"{p['metric']} > {p['threshold_percent']:g}%)")
        details = {f"{op}.{p['metric']}": v for op, v in values.items()}
        return Decision(degrees, "; ".join(changed) or "no operator over the threshold long enough", details=details)
