"""How a setting is declared and checked: one mechanism for controllers, workloads, policies and run settings.

Parameters are data (as in scikit-learn's `_parameter_constraints` or Flink's `AutoScalerOptions`): each has a type,
a default, bounds, a meaning, whether it is given per operator, and optionally the range a tuning study searches
(as in Optuna's distributions). Checking happens in one place (`check_params`), before anything runs, so "unknown
parameter", "out of range" and "these two contradict each other" are one-line errors naming the owner and the
parameter, never a failure minutes into a Spark job. Rules across fields are data too (`Rule`), written once and
shared, so no owner hard-codes its own name into an error message.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping


class ParamError(ValueError):
    """A value that cannot be used; the message names its owner and the parameter."""


@dataclass(frozen=True)
class SearchRange:
    """The range a tuning study searches for a numeric parameter (Optuna: FloatDistribution / IntDistribution).

    `log` samples on a log scale, natural for timeouts and rates spanning orders of magnitude."""

    low: float
    high: float
    log: bool = False

    def __post_init__(self):
        if not self.low < self.high:
            raise ParamError(f"search range [{self.low}, {self.high}] is empty or inverted (low must be < high)")
        if self.log and self.low <= 0:
            raise ParamError(f"a log-scale search range needs low > 0, got {self.low}")

    def to_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True)
class Choices:
    """The values a tuning study tries for a categorical parameter (Optuna: CategoricalDistribution)."""

    values: tuple[Any, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"choices": list(self.values)}


@dataclass(frozen=True)
class Param:
    """One declared setting.

    per_operator: the value is a mapping operator -> value, each checked against kind and bounds, and the operator
    names against the topology when it is known. An empty mapping is the default (every operator takes the
    owner's scalar fallback).
    """

    kind: type  # int, float, bool, str or dict
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    # the bound itself is not allowed (a trigger of 0 s, an SLO of 0 s; a correlation below 1)
    open_minimum: bool = False
    open_maximum: bool = False
    per_operator: bool = False
    search: SearchRange | Choices | None = None
    # a text parameter that may also be given as a mapping or list (a policy written inline in YAML flow style or
    # JSON): kept as that structure's JSON text, so every way of writing it configures the same thing
    structured: bool = False
    # what the configuration's identity (config_id) sees of the value, when the text is not the thing itself: a
    # policy given by catalogue name is hashed as the rules it names, so editing the file makes a new configuration
    identity: Callable[[Any], Any] | None = None
    # (other parameter, value): the setting only matters when that parameter has that value (a guard option when
    # guards are on), so a tuning study searches it only then (Optuna's define-by-run conditional space) and leaves
    # it at its default otherwise, instead of spending trials on a dimension that changes nothing
    search_when: tuple[str, Any] | None = None

    def __post_init__(self):
        if isinstance(self.search, SearchRange):
            if self.kind not in (int, float):
                raise ParamError(f"a numeric search range on a {self.kind.__name__} parameter")
            if self.minimum is not None and self.search.low < self.minimum:
                raise ParamError(f"search range low {self.search.low} is below the minimum {self.minimum}")
            if self.maximum is not None and self.search.high > self.maximum:
                raise ParamError(f"search range high {self.search.high} is above the maximum {self.maximum}")

    def but(self, **changes: Any) -> "Param":
        """This declaration with some fields changed (a shared declaration with another default, say)."""
        return replace(self, **changes)

    @property
    def tunable(self) -> bool:
        return self.search is not None

    def check(self, owner: str, name: str, value: Any) -> Any:
        """The value as it will be used (ints given for floats become floats), or ParamError naming the culprit."""
        if self.per_operator:
            if not isinstance(value, Mapping):
                raise ParamError(f"{owner}: parameter {name!r} must be a mapping operator -> "
                                 f"{self.kind.__name__}, e.g. {{enrich: 4}}, got {value!r}")
            return {str(op): self._check_one(owner, f"{name}[{op!r}]", v) for op, v in value.items()}
        return self._check_one(owner, name, value)

    def _check_one(self, owner: str, name: str, value: Any) -> Any:
        where = f"{owner}: parameter {name!r}" if "[" not in name else f"{owner}: {name}"
        if self.structured and isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if (self.kind in (int, float) and isinstance(value, bool)) or not isinstance(value, self.kind):
            raise ParamError(f"{where} must be of type {self.kind.__name__}, got {value!r}")
        if self.kind is float and not math.isfinite(value):
            raise ParamError(f"{where} must be a finite number, got {value!r}")
        if self.minimum is not None:
            if self.open_minimum and value <= self.minimum:
                raise ParamError(f"{where} must be > {self.minimum}, got {value!r}")
            if value < self.minimum:
                raise ParamError(f"{where} must be >= {self.minimum}, got {value!r}")
        if self.maximum is not None:
            if self.open_maximum and value >= self.maximum:
                raise ParamError(f"{where} must be < {self.maximum}, got {value!r}")
            if value > self.maximum:
                raise ParamError(f"{where} must be <= {self.maximum}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ParamError(f"{where} must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        return value

    def json_schema(self) -> dict[str, Any]:
        """The declaration as JSON Schema keywords (what an Airflow Param takes), so a DAG's form checks the same
        bounds as the command line."""
        types = {int: "integer", float: "number", bool: "boolean", str: "string", dict: "object"}
        schema: dict[str, Any] = {"type": "object" if self.per_operator else types[self.kind],
                                  "description": self.doc}
        if not self.per_operator:
            if self.minimum is not None:
                schema["exclusiveMinimum" if self.open_minimum else "minimum"] = self.minimum
            if self.maximum is not None:
                schema["exclusiveMaximum" if self.open_maximum else "maximum"] = self.maximum
            if self.choices is not None:
                schema["enum"] = list(self.choices)
        return schema

    def describe(self, name: str) -> str:
        bounds = ""
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else f"{'(' if self.open_minimum else ''}{self.minimum}"
            high = "" if self.maximum is None else f"{self.maximum}{')' if self.open_maximum else ''}"
            bounds = f" [{low}..{high}]"
        if self.choices is not None:
            bounds = f" {{{', '.join(map(str, self.choices))}}}"
        kind = f"operator -> {self.kind.__name__}" if self.per_operator else self.kind.__name__
        search = ""
        if isinstance(self.search, SearchRange):
            search = f"; tuned in [{self.search.low}, {self.search.high}]{' log' if self.search.log else ''}"
        elif isinstance(self.search, Choices):
            search = f"; tuned over {{{', '.join(map(str, self.search.values))}}}"
        if search and self.search_when:
            search += f" when {self.search_when[0]}={self.search_when[1]}"
        return f"{name} ({kind}, default {self.default!r}{bounds}{search}): {self.doc}"


@dataclass(frozen=True)
class Context:
    """What a rule may read besides the values: the topology's operators and the run's largest degree, when known
    (a configuration is first checked alone, then again for the run it is used in)."""

    operators: tuple[str, ...] | None = None
    max_degree: int | None = None


@dataclass(frozen=True)
class Rule:
    """A constraint across fields, checked after each field on its own.

    `holds(values, context)` returns True when the constraint is met, None when it cannot be judged yet (it
    needs the topology or the run's max degree), False when it is broken (then `message`, formatted with the
    values and `max_degree`, says why) or a text saying more precisely what is broken."""

    fields: tuple[str, ...]
    holds: Callable[[Mapping[str, Any], Context], bool | str | None]
    message: str

    def describe(self) -> str:
        """The rule in words, without values: "scale_down_ratio ({scale_down_ratio}) must be below ..." reads
        "scale_down_ratio must be below ..."."""
        text = re.sub(r" \(\{\w+\}\)", "", self.message)
        return re.sub(r"\{(\w+)\}", r"\1", text)


def check_params(owner: str, declared: Mapping[str, Param], values: Mapping[str, Any] | None,
                 rules: Iterable[Rule] = (), context: Context = Context()) -> dict[str, Any]:
    """`values` completed with defaults and checked field by field, then per-operator names against the topology,
    then the rules; raise ParamError naming the owner and the parameter."""
    values = dict(values or {})
    unknown = sorted(str(k) for k in set(values) - set(declared))
    if unknown:
        raise ParamError(f"{owner}: unknown parameter(s) {', '.join(unknown)}; "
                         f"expected: {', '.join(declared) or '(none)'}")
    checked = {key: spec.check(owner, key, values[key]) if key in values else spec.default
               for key, spec in declared.items()}
    if context.operators is not None:
        for key, spec in declared.items():
            if spec.per_operator:
                strange = sorted(set(checked[key]) - set(context.operators))
                if strange:
                    raise ParamError(f"{owner}: parameter {key!r} names unknown operator(s) {', '.join(strange)}; "
                                     f"operators: {', '.join(context.operators)}")
    for rule in rules:
        verdict = rule.holds(checked, context)
        if verdict is False:
            raise ParamError(f"{owner}: " + rule.message.format(**checked, max_degree=context.max_degree))
        if isinstance(verdict, str):
            raise ParamError(f"{owner}: {verdict}")
    return checked


def describe_params(declared: Mapping[str, Param], indent: str = "  ") -> list[str]:
    return [indent + spec.describe(key) for key, spec in declared.items()]


def search_space(declared: Mapping[str, Param]) -> dict[str, SearchRange | Choices]:
    """The tunable parameters and their declared ranges."""
    return {key: spec.search for key, spec in declared.items() if spec.search is not None}


def flag(name: str) -> str:
    """The command-line flag of a run setting: slo_latency_s -> --slo-latency."""
    return "--" + name.removesuffix("_s").replace("_", "-")
