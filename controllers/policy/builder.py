"""The thesis' embedded DSL (§4.3.6, §4.4.3, pp. 50-58) in Python, for policies written in code:

    policy = rules(
        rule("Queue length is above 300 for 30 seconds")
            .scale_out("enrich").by(absolute(1)).but_never_above(nodes(2))
            .when("queue-length").is_(above(tuples(300))).for_at_least(seconds(30))
            .with_no_scale_out_since(minutes(5)),
    )

Each chain only records fields; `rules(...)` hands them to the YAML/JSON parser, so a builder policy is checked by
exactly the same code as a file and logs as the same canonical form.
"""
from __future__ import annotations

from typing import Any, Mapping

import yaml

from controllers.policy.model import Policy, PolicyOptions


def absolute(k: int) -> dict[str, Any]:
    return {"absolute": k}


def relative(f: float) -> dict[str, Any]:
    return {"relative": f}


def nodes(n: int) -> dict[str, Any]:
    return {"nodes": n}


def factor(x: float) -> dict[str, Any]:
    return {"factor": x}


def seconds(n: float) -> float:
    return float(n)


def minutes(n: float) -> float:
    return 60.0 * n


def above(value: float) -> tuple[str, float]:
    return ("above", value)


def below(value: float) -> tuple[str, float]:
    return ("below", value)


def tuples(n: float) -> float:
    return n


def percent(x: float) -> float:
    return x


def millis(x: float) -> float:
    return x


class RuleBuilder:
    def __init__(self, name: str | None):
        self._fields: dict[str, Any] = {"name": name} if name else {}
        self._triggers: list[dict[str, Any]] = []

    def _set(self, key: str, value: Any) -> "RuleBuilder":
        self._fields[key] = value
        return self

    def scale_out(self, operator: str) -> "RuleBuilder":
        return self._set("operator", operator)._set("action", "scale-out")

    def scale_in(self, operator: str) -> "RuleBuilder":
        return self._set("operator", operator)._set("action", "scale-in")

    def by(self, scale_factor: dict[str, Any]) -> "RuleBuilder":
        return self._set("by", scale_factor)

    def but_never_above(self, limit: dict[str, Any]) -> "RuleBuilder":
        return self._set("never_above", limit)

    def but_never_below(self, limit: dict[str, Any]) -> "RuleBuilder":
        return self._set("never_below", limit)

    def when(self, metric: str, aggregate: str | None = None) -> "RuleBuilder":
        self._triggers.append({"metric": metric, **({"aggregate": aggregate} if aggregate else {})})
        return self

    and_ = when

    def is_(self, threshold: tuple[str, float]) -> "RuleBuilder":
        self._current("is_")[threshold[0]] = threshold[1]
        return self

    def for_at_least(self, duration_s: float) -> "RuleBuilder":
        self._current("for_at_least")["for_at_least"] = duration_s
        return self

    def with_no_scale_out_since(self, duration_s: float) -> "RuleBuilder":
        return self._set("with_no_scale_out_since", duration_s)

    def with_no_scale_in_since(self, duration_s: float) -> "RuleBuilder":
        return self._set("with_no_scale_in_since", duration_s)

    def _current(self, step: str) -> dict[str, Any]:
        if not self._triggers:
            raise ValueError(f"rule {self._fields.get('name', '(unnamed)')!r}: .{step}() before .when(metric)")
        return self._triggers[-1]

    def build(self) -> dict[str, Any]:
        return {**self._fields, **({"when": list(self._triggers)} if self._triggers else {})}


def rule(name: str | None = None) -> RuleBuilder:
    return RuleBuilder(name)


def rules(*built: RuleBuilder | dict[str, Any], options: PolicyOptions | Mapping[str, Any] | None = None,
          name: str | None = None) -> Policy:
    """The policy of these rules. `options` is a PolicyOptions or a mapping by the options' written names (as
    `OPTIONS` declares them, e.g. a tuning study's sample {"sampling_period": 2.0}), checked like a file's."""
    from controllers.policy.parse import parse_policy

    document: dict[str, Any] = {"name": name} if name else {}
    if options is not None:
        document["options"] = options.to_dict() if isinstance(options, PolicyOptions) else dict(options)
    document["rules"] = [b.build() if isinstance(b, RuleBuilder) else b for b in built]
    return parse_policy(yaml.safe_dump(document, sort_keys=False), source="(builder)", positions=False)
