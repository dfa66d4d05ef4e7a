"""What a scaling policy is (digest_002 §2): rules of action, scale factor, limit, AND-ed triggers and a guard.

The model is plain frozen data so a policy can be built three ways — parsed from YAML/JSON, written with the fluent
builder, or constructed directly — and always logged back as the same canonical dictionary (`to_dict`), which is
what MLflow records and what the configuration hash sees.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

WILDCARD = "*"
ACTIONS = ("scale-out", "scale-in")

# metric -> (unit, aggregations across the operator's tasks (the first is the default), what it measures).
# "job": one reading for the whole job (the same for every operator); Spark reports no per-task value for these.
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "queue-length": ("tuples", ("sum", "mean"), "events waiting for the operator (mean: per task)"),
    "latency": ("ms", ("job",), "p99 end-to-end latency of the events the last batch delivered"),
    "cpu": ("percent", ("job",), "CPU use of the job's processes as a share of the machine's cores, capped at 100"),
    "memory": ("MB", ("job",), "resident memory of the job's processes"),
    "input-rate": ("tuples/s", ("sum", "mean"), "events offered to the operator per second (mean: per task)"),
    "processed-rate": ("tuples/s", ("sum", "mean"), "events the operator processed per second (mean: per task)"),
    "utilisation": ("percent", ("mean", "max"), "busy share of the operator's tasks over the period (max: the "
                                                "busiest task, the closest to SEEP's per-instance readings)"),
}
METRIC_ALIASES = {"backlog": "queue-length", "utilization": "utilisation"}
AGGREGATES = ("sum", "mean", "max", "job")

# options for the ambiguities digest_002 §7 lists; the defaults are the project's choices (README "Scaling policies")
BELOW = ("strict", "inclusive")  # §7.5: `below v` as value < v (the code) or value <= v (the pseudo-code)
GUARDS = ("enforced", "ignored")  # §7.11: the thesis' semantics, or what its code actually did
EDGES = ("rule", "every-trigger")  # rule: act when the AND of the triggers becomes true; every-trigger: the
#                                     code's literal `fired && changed` for each trigger in the same evaluation


@dataclass(frozen=True)
class Trigger:
    metric: str
    comparator: str  # "above" | "below"
    value: float
    for_at_least_s: float
    aggregate: str  # across the operator's tasks: sum | mean | max

    def holds(self, reading: float, below_inclusive: bool) -> bool:
        if self.comparator == "above":
            return reading > self.value
        return reading <= self.value if below_inclusive else reading < self.value

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, self.comparator: self.value, "for_at_least": self.for_at_least_s,
                "aggregate": self.aggregate}


@dataclass(frozen=True)
class ScaleFactor:
    kind: str  # "absolute" (add/remove k) | "relative" (multiply/divide by f, rounded)
    amount: float

    def apply(self, action: str, size: int) -> int:
        """The size after the action, with the thesis' floor of 1 (an operator never leaves the query)."""
        if self.kind == "absolute":
            new = size + int(self.amount) if action == "scale-out" else size - int(self.amount)
        else:
            ratio = size * self.amount if action == "scale-out" else size / self.amount
            new = math.floor(ratio + 0.5)  # half up, as Java's Math.round in SEEP (Python's round() is half-even)
        return max(1, new)

    def to_dict(self) -> dict[str, Any]:
        return {self.kind: self.amount}


@dataclass(frozen=True)
class Limit:
    kind: str  # "nodes" (absolute size) | "factor" (ratio to the operator's initial size)
    amount: float

    def blocks(self, action: str, new_size: int, initial_size: int) -> bool:
        """Block semantics (§2.4): an action that would cross the limit does not run at all (no clamping)."""
        bound = self.amount if self.kind == "nodes" else self.amount * initial_size
        return new_size > bound if action == "scale-out" else new_size < bound

    def to_dict(self) -> dict[str, Any]:
        return {self.kind: self.amount}


@dataclass(frozen=True)
class Guard:
    last_action: str  # the type of the operator's last action the guard looks at
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {f"with_no_{self.last_action.replace('-', '_')}_since": self.seconds}


@dataclass(frozen=True)
class Rule:
    name: str
    operator: str  # an operator name or WILDCARD
    action: str
    factor: ScaleFactor
    triggers: tuple[Trigger, ...]
    limit: Limit | None = None
    guards: tuple[Guard, ...] = ()

    @property
    def longest_window_s(self) -> float:
        return max(t.for_at_least_s for t in self.triggers)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "operator": self.operator, "action": self.action,
                               "by": self.factor.to_dict()}
        if self.limit is not None:
            out["never_above" if self.action == "scale-out" else "never_below"] = self.limit.to_dict()
        out["when"] = [t.to_dict() for t in self.triggers]
        for guard in self.guards:
            out.update(guard.to_dict())
        return out


@dataclass(frozen=True)
class PolicyOptions:
    sampling_period_s: float = 5.0  # SEEP's monitorInterval (digest_002 §2.6)
    below: str = "strict"
    history_tolerance: float = 0.1  # §7.4: a window counts as covered when the readings span >= (1 - tol) x window
    guards: str = "enforced"
    edge: str = "rule"

    def to_dict(self) -> dict[str, Any]:
        return {"sampling_period": self.sampling_period_s, "below": self.below,
                "history_tolerance": self.history_tolerance, "guards": self.guards, "edge": self.edge}


@dataclass(frozen=True)
class Policy:
    """A fixed set of independent rules (the thesis allows no change during a run, and neither does a run here)."""
    rules: tuple[Rule, ...]
    options: PolicyOptions = field(default_factory=PolicyOptions)
    name: str | None = None

    def operators(self) -> set[str]:
        return {r.operator for r in self.rules}

    def metrics(self) -> set[str]:
        return {t.metric for r in self.rules for t in r.triggers}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name} if self.name else {}
        out["options"] = self.options.to_dict()
        out["rules"] = [r.to_dict() for r in self.rules]
        return out
