"""Reading a policy from YAML or JSON text safely, with errors that point at the line and column.

Why a hand-walked node tree: `yaml.safe_load` gives values without positions, and a user who wrote forty lines of
rules needs "line 12, column 9: rule 'drain': for_at_least: expected seconds ...", not a KeyError. The text is only
composed into YAML nodes (SafeLoader: no tags, no constructors, no imports, no eval) and interpreted field by field
against the model in `controllers.policy.model`. JSON is read by the same code (it is YAML's flow style).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import yaml

from controllers.policy.model import (
    ACTIONS,
    DURATION_OPTIONS,
    METRIC_ALIASES,
    METRICS,
    OPTION_RULES,
    OPTIONS,
    WILDCARD,
    Guard,
    Limit,
    Policy,
    PolicyOptions,
    Rule,
    ScaleFactor,
    Trigger,
)
from params.declare import ParamError, check_params


class PolicyError(ValueError):
    """A policy that cannot be used; the message names the source, line, column, rule and what was expected."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|second|seconds|min|mins|minute|minutes)?\s*$")


class _Reader:
    def __init__(self, source: str, positions: bool = True):
        self.source = source
        self.positions = positions  # off for text the user did not write (the builder's)

    def fail(self, node: yaml.Node | None, where: str, message: str) -> PolicyError:
        return self.located(node, f"{where}: {message}")

    def located(self, node: yaml.Node | None, message: str) -> PolicyError:
        """`message` (which names what is wrong) prefixed with the source and, when known, the node's position."""
        at = ""
        if node is not None and self.positions:
            at = f", line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"
        return PolicyError(f"policy {self.source}{at}: {message}")

    def mapping(self, node: yaml.Node, where: str, allowed: Sequence[str]) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, where, f"expected a mapping with keys {', '.join(allowed)}, got {_kind(node)}")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.fail(key, where, "expected a plain key")
            if key.value not in allowed:
                raise self.fail(key, where, f"unknown field {key.value!r}; expected one of {', '.join(allowed)}")
            if key.value in out:
                raise self.fail(key, where, f"field {key.value!r} given twice")
            out[key.value] = (key, value)
        return out

    def scalar(self, node: yaml.Node, where: str, expected: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
            raise self.fail(node, where, f"expected {expected}, got {_kind(node)}")
        return node.value

    def number(self, node: yaml.Node, where: str, *, minimum: float | None = None, above: float | None = None,
               integer: bool = False) -> float:
        expected = "an integer" if integer else "a number"
        if minimum is not None:
            expected += f" >= {minimum:g}"
        if above is not None:
            expected += f" > {above:g}"
        text = self.scalar(node, where, expected)
        try:
            value = float(text)
        except ValueError:
            raise self.fail(node, where, f"expected {expected}, got {text!r}") from None
        if value != value or value in (float("inf"), float("-inf")) or (integer and not value.is_integer()) or (
                minimum is not None and value < minimum) or (above is not None and value <= above):
            raise self.fail(node, where, f"expected {expected}, got {text!r}")
        return int(value) if integer else value

    def duration(self, node: yaml.Node, where: str, positive: bool = True) -> float:
        """Seconds; `positive=False` leaves the bound to the caller (a declared option checks its own)."""
        expected = "a duration in seconds (30, '30s', '5min', '5 minutes')" + (" greater than 0" if positive else "")
        text = self.scalar(node, where, expected)
        match = _DURATION.match(text)
        if not match or (positive and float(match.group(1)) <= 0):
            raise self.fail(node, where, f"expected {expected}, got {text!r}")
        unit = match.group(2) or "s"
        return float(match.group(1)) * (60.0 if unit.startswith("min") else 1.0)

    def choice(self, node: yaml.Node, where: str, choices: Sequence[str]) -> str:
        text = self.scalar(node, where, f"one of {', '.join(choices)}")
        if text not in choices:
            raise self.fail(node, where, f"expected one of {', '.join(choices)}, got {text!r}")
        return text


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == "tag:yaml.org,2002:null":
        return "nothing"
    return repr(node.value)


def parse_policy(text: str, source: str = "(inline)", operators: Sequence[str] | None = None,
                 positions: bool = True) -> Policy:
    """The policy in `text` (YAML or JSON). With `operators`, every rule's operator must be one of them (or '*')."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise PolicyError(f"policy {source}{at}: not valid YAML/JSON: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy {source}: not valid YAML/JSON: {exc}") from None
    r = _Reader(source, positions)
    if root is None:
        raise PolicyError(f"policy {source}: empty; expected a mapping with 'rules'")
    fields = r.mapping(root, "policy", ("name", "options", "rules"))
    if "rules" not in fields:
        raise r.fail(root, "policy", "missing field 'rules' (a list of rules; an empty list is a static policy)")
    name = r.scalar(fields["name"][1], "policy name", "a name") if "name" in fields else None
    options = _options(r, fields["options"][1]) if "options" in fields else PolicyOptions()
    rules_node = fields["rules"][1]
    if not isinstance(rules_node, yaml.SequenceNode):
        raise r.fail(rules_node, "rules", f"expected a list of rules, got {_kind(rules_node)}")
    rules = tuple(_rule(r, node, i, operators) for i, node in enumerate(rules_node.value, start=1))
    names = [rule.name for rule in rules]
    for i, node in enumerate(rules_node.value):
        if names.index(names[i]) != i:
            raise r.fail(node, f"rule {names[i]!r}", "a second rule with this name; rule names must be unique "
                                                   "(they name the rule in the decision log)")
    return Policy(rules, options, name)


def _options(r: _Reader, node: yaml.Node) -> PolicyOptions:
    """The options as declared in OPTIONS: the text is read as the declared type (durations with units), then
    checked by the declaration, then by the rules across options; each error points at the option's node."""
    f = r.mapping(node, "options", tuple(OPTIONS))
    values: dict[str, Any] = {}
    for name, (_, value_node) in f.items():
        spec, where = OPTIONS[name], f"options: {name}"
        if name in DURATION_OPTIONS:
            value: Any = r.duration(value_node, where, positive=False)
        elif spec.kind is float:
            value = r.number(value_node, where)
        else:
            value = r.scalar(value_node, where, f"one of {', '.join(spec.choices)}" if spec.choices else "a text")
        try:
            values[name] = spec.check("options", name, value)
        except ParamError as exc:
            raise r.located(value_node, str(exc)) from None
    for rule in OPTION_RULES:
        try:
            check_params("options", OPTIONS, values, (rule,))
        except ParamError as exc:
            given = [f[name][1] for name in rule.fields if name in f]
            raise r.located(given[0] if given else node, str(exc)) from None
    return PolicyOptions.from_dict(values)


RULE_FIELDS = ("name", "operator", "action", "by", "never_above", "never_below", "when", "with_no_scale_out_since",
               "with_no_scale_in_since")


def _rule(r: _Reader, node: yaml.Node, index: int, operators: Sequence[str] | None) -> Rule:
    where = f"rule #{index}"
    if isinstance(node, yaml.MappingNode):  # name the rule as soon as its name is known
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "name" and isinstance(value, yaml.ScalarNode):
                where = f"rule {value.value!r}"
    f = r.mapping(node, where, RULE_FIELDS)
    for required in ("operator", "action", "by", "when"):
        if required not in f:
            raise r.fail(node, where, f"missing field {required!r}")
    name = r.scalar(f["name"][1], where, "a rule name") if "name" in f else f"rule-{index}"
    operator = r.scalar(f["operator"][1], where + ": operator", f"an operator name or {WILDCARD!r}")
    if operators is not None and operator != WILDCARD and operator not in operators:
        raise r.fail(f["operator"][1], where + ": operator",
                     f"unknown operator {operator!r}; expected one of {', '.join(operators)} or {WILDCARD!r}")
    action = r.choice(f["action"][1], where + ": action", ACTIONS)
    factor = _factor(r, f["by"][1], where + ": by")
    wrong_limit = "never_below" if action == "scale-out" else "never_above"
    if wrong_limit in f:
        right = "never_above" if action == "scale-out" else "never_below"
        raise r.fail(f[wrong_limit][0], where, f"a {action} rule takes {right!r}, not {wrong_limit!r}")
    limit_key = "never_above" if action == "scale-out" else "never_below"
    limit = _limit(r, f[limit_key][1], f"{where}: {limit_key}") if limit_key in f else None
    when = f["when"][1]
    if isinstance(when, yaml.MappingNode):  # one trigger written without the list
        triggers: tuple[Trigger, ...] = (_trigger(r, when, where + ": when"),)
    elif isinstance(when, yaml.SequenceNode) and when.value:
        triggers = tuple(_trigger(r, t, f"{where}: when #{i}") for i, t in enumerate(when.value, start=1))
    else:
        raise r.fail(when, where + ": when", f"expected one trigger or a non-empty list of triggers (all must hold), "
                                             f"got {_kind(when)}")
    guards = tuple(Guard(kind, r.duration(f[key][1], f"{where}: {key}"))
                   for key, kind in (("with_no_scale_out_since", "scale-out"), ("with_no_scale_in_since", "scale-in"))
                   if key in f)
    return Rule(name, operator, action, factor, triggers, limit, guards)


def _one_of(r: _Reader, node: yaml.Node, where: str, keys: Sequence[str]) -> tuple[str, yaml.Node]:
    f = r.mapping(node, where, keys)
    if len(f) != 1:
        raise r.fail(node, where, f"expected exactly one of {', '.join(keys)}, got {len(f)}")
    (key, (_, value)), = f.items()
    return key, value


def _factor(r: _Reader, node: yaml.Node, where: str) -> ScaleFactor:
    kind, value = _one_of(r, node, where, ("absolute", "relative"))
    if kind == "absolute":
        return ScaleFactor(kind, r.number(value, f"{where}: absolute", minimum=1, integer=True))
    return ScaleFactor(kind, r.number(value, f"{where}: relative", above=1))


def _limit(r: _Reader, node: yaml.Node, where: str) -> Limit:
    kind, value = _one_of(r, node, where, ("nodes", "factor"))
    if kind == "nodes":
        return Limit(kind, r.number(value, f"{where}: nodes", minimum=1, integer=True))
    return Limit(kind, r.number(value, f"{where}: factor", above=0))


def _trigger(r: _Reader, node: yaml.Node, where: str) -> Trigger:
    f = r.mapping(node, where, ("metric", "above", "below", "for_at_least", "aggregate"))
    for required in ("metric", "for_at_least"):
        if required not in f:
            raise r.fail(node, where, f"missing field {required!r}")
    metric = r.scalar(f["metric"][1], where + ": metric", "a metric name")
    metric = METRIC_ALIASES.get(metric, metric)
    if metric not in METRICS:
        raise r.fail(f["metric"][1], where + ": metric",
                     f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    comparators = [c for c in ("above", "below") if c in f]
    if len(comparators) != 1:
        raise r.fail(node, where, "expected exactly one of 'above' or 'below' (the value threshold)")
    comparator = comparators[0]
    value = r.number(f[comparator][1], f"{where}: {comparator}")
    allowed = METRICS[metric][1]
    aggregate = r.choice(f["aggregate"][1], f"{where}: aggregate (of {metric})", allowed) if "aggregate" in f \
        else allowed[0]
    return Trigger(metric, comparator, value, r.duration(f["for_at_least"][1], where + ": for_at_least"), aggregate)
