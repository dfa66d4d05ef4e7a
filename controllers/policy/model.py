"""What a scaling policy is (thesis §4.2, p. 35): rules of action, scale factor, limit, AND-ed triggers and a guard.

The model is plain frozen data so a policy can be built three ways — parsed from YAML/JSON, written with the fluent
builder, or constructed directly — and always logged back as the same canonical dictionary (`to_dict`), which is
what MLflow records and what the configuration hash sees.

A policy's options are declared settings (`OPTIONS`, `params.declare.Param`: type, default, choices or bounds,
meaning, and the range a tuning study searches), checked in one place whichever way the policy was built;
`describe_options()` prints them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from params.declare import Param, SearchRange, check_params, describe_params
from params.declare import Rule as ParamRule  # (a policy's `Rule` is a scaling rule, below)

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

# options for the thesis' ambiguities (pp. 36-50); the defaults are the project's choices (docs/guides/scaling-policies.md)
BELOW = ("strict", "inclusive")  # Alg. 4.3, p. 50: `below v` as value < v (the code) or value <= v (the pseudo-code)
GUARDS = ("enforced", "ignored")  # §4.2.2, p. 40: the thesis' semantics, or what its code actually did
EDGES = ("rule", "every-trigger")  # rule: act when the AND of the triggers becomes true; every-trigger: the
#                                     code's literal `fired && changed` for each trigger in the same evaluation

# A policy's options as written under `options:` (and logged by `PolicyOptions.to_dict`). The ambiguity options
# are interpretations of the thesis to compare, not knobs to tune, so only the numeric ones carry a search range.
OPTIONS: dict[str, Param] = {
    "sampling_period": Param(float, 5.0, "seconds between the readings the rules judge (SEEP's monitorInterval, "
                                         "thesis §5.2.5, p. 74); in a policy file also '30s', '5min'",
                             minimum=0.0, open_minimum=True, search=SearchRange(1.0, 20.0)),
    "below": Param(str, "strict", "`below v` as value < v (strict, the thesis' code) or value <= v (inclusive, its "
                                  "pseudo-code; Alg. 4.3, p. 50)", choices=BELOW),
    "history_tolerance": Param(float, 0.1, "a trigger's window counts as covered when the readings span at least "
                                           "(1 - tolerance) x the window, a fraction in [0, 1) (Alg. 4.3, p. 50)",
                               minimum=0.0, search=SearchRange(0.0, 0.5)),
    "guards": Param(str, "enforced", "`with_no_..._since` guards as the thesis describes them (enforced) or as its "
                                     "code behaved (ignored; §4.2.2, p. 40)", choices=GUARDS),
    "edge": Param(str, "rule", "act when the AND of a rule's triggers becomes true (rule), or the code's literal "
                               "`fired && changed` per trigger in one evaluation (every-trigger)", choices=EDGES),
}
OPTION_RULES: tuple[ParamRule, ...] = (
    ParamRule(("history_tolerance",), lambda v, c: v["history_tolerance"] < 1,
              "history_tolerance ({history_tolerance}) must be below 1 (a fraction in [0, 1))"),
)
DURATION_OPTIONS = ("sampling_period",)  # written as durations ('30s', '5min') in a policy file
_OPTION_FIELDS = {"sampling_period": "sampling_period_s"}  # option name -> PolicyOptions field, where they differ


def check_options(values: Mapping[str, Any], owner: str = "policy options") -> dict[str, Any]:
    """Options by their written names, completed with defaults and checked against OPTIONS and OPTION_RULES;
    params.declare.ParamError (a ValueError) names the option."""
    return check_params(owner, OPTIONS, values, OPTION_RULES)


def describe_options() -> str:
    """The options a policy takes, as a user reads them: type, default, choices or bounds, search range, meaning."""
    lines = ["policy options (under `options:` in a policy file):", *describe_params(OPTIONS)]
    lines += [f"  rule: {rule.describe()}" for rule in OPTION_RULES]
    return "\n".join(lines)


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
        """Block semantics (§4.2.2, p. 40): an action that would cross the limit does not run at all (no clamping)."""
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
    """A policy's options (declared in OPTIONS, which gives the defaults); checked on construction."""
    sampling_period_s: float = OPTIONS["sampling_period"].default
    below: str = OPTIONS["below"].default
    history_tolerance: float = OPTIONS["history_tolerance"].default
    guards: str = OPTIONS["guards"].default
    edge: str = OPTIONS["edge"].default

    def __post_init__(self):
        for name, value in check_options(self.to_dict()).items():  # as they will be used: 5 becomes 5.0
            object.__setattr__(self, _OPTION_FIELDS.get(name, name), value)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "PolicyOptions":
        """Options by their written names (as `to_dict` gives them); missing ones take their defaults."""
        return cls(**{_OPTION_FIELDS.get(name, name): value for name, value in check_options(values).items()})

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, _OPTION_FIELDS.get(name, name)) for name in OPTIONS}


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

    def upper_limits(self, operators: Sequence[str], initial_sizes: Mapping[str, int]) -> dict[str, int]:
        """The largest size the policy lets each operator reach, for operators whose every scale-out rule has a
        `never_above` limit (the highest of them: rules are independent); an operator with an unlimited scale-out
        rule, or none, is absent. What the run-time guards respect when they size a burst on a user's policy."""
        out: dict[str, int] = {}
        for op in operators:
            rules = [r for r in self.rules if r.action == "scale-out" and r.operator in (op, WILDCARD)]
            if rules and all(r.limit is not None for r in rules):
                out[op] = max(1, max(int(r.limit.amount if r.limit.kind == "nodes"
                                         else r.limit.amount * initial_sizes.get(op, 1)) for r in rules))
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name} if self.name else {}
        out["options"] = self.options.to_dict()
        out["rules"] = [r.to_dict() for r in self.rules]
        return out
