"""A tuning study's search space: the controller's own declarations (params.declare: type, bounds, default, search
range), narrowed, widened or fixed per study by the user, and checked before any trial runs.

Why from the declarations: the ranges live beside the parameters they belong to (as Flink's AutoScalerOptions keep
each option's default and meaning in one place), so a new tunable parameter enters every study without a second
list to keep in step. A user changes a study's space with

    NAME=LOW:HIGH        a numeric range (NAME=LOW:HIGH:log for a log scale)
    NAME=A|B|C           the values tried for a categorical (or any) parameter
    and fixes a parameter for every trial with --set NAME=VALUE.

A range may be wider than the declared search range but never beyond the parameter's own bounds: every sampled
value must be one the controller accepts.

A placement controller joins a study as on Spark, after a '+': `threshold+sousa` searches threshold's parameters
and sousa's together, the placement's named after it (`sousa.sensitivity`, `--set sousa.max_moves=2`); the plant
then models the keyed operator's key groups (simulator/key_groups.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import yaml

import controllers
from params.declare import Choices, Param, ParamError, SearchRange


class SpaceError(ValueError):
    """A search space that cannot be searched; the message names the controller and the parameter."""


Dimension = SearchRange | Choices


def split_composite(controller: str) -> tuple[str, str | None]:
    """'threshold+sousa' -> ('threshold', 'sousa'); 'threshold' -> ('threshold', None)."""
    name, plus, placement = controller.partition("+")
    return name.strip(), (placement.strip() if plus else None)


def declared_params(controller: str) -> dict[str, Param]:
    """The parameters a study of `controller` (possibly 'name+placement') can search: the controller's, and the
    placement controller's prefixed with its name."""
    name, placement = split_composite(controller)
    declared = dict(controllers.registered()[name].PARAMS)
    if placement:
        from controllers.placement import registered as placements

        declared.update({f"{placement}.{k}": v for k, v in placements()[placement].PARAMS.items()})
    return declared


def split_values(controller: str, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A trial's values as (the parallelism controller's, the placement controller's unprefixed)."""
    _, placement = split_composite(controller)
    prefix = f"{placement}." if placement else None
    own = {k: v for k, v in values.items() if not (prefix and k.startswith(prefix))}
    placed = {k[len(prefix):]: v for k, v in values.items() if prefix and k.startswith(prefix)}
    return own, placed


@dataclass(frozen=True)
class SearchSpace:
    controller: str  # a parallelism controller, or 'name+placement'
    dimensions: Mapping[str, Dimension]
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def _ordered(self) -> list[str]:
        """Dimensions with the ones others depend on first, so a condition is known before what it conditions."""
        declared = declared_params(self.controller)
        return sorted(self.dimensions, key=lambda n: declared[n].search_when is not None)

    def active(self, name: str, values: Mapping[str, Any]) -> bool:
        """Whether dimension `name` matters given the values chosen so far (its condition's parameter sampled,
        fixed, or else at its default)."""
        declared = declared_params(self.controller)
        condition = declared[name].search_when
        if condition is None:
            return True
        other, wanted = condition
        return values.get(other, declared[other].default) == wanted

    def suggest(self, trial) -> dict[str, Any]:
        """The trial's configuration: fixed values plus one value per active dimension (Optuna's define-by-run
        API: a dimension whose condition does not hold is not sampled and stays at the controller's default)."""
        declared = declared_params(self.controller)
        values = dict(self.fixed)
        for name in self._ordered():
            dim = self.dimensions[name]
            if not self.active(name, values):
                continue
            if isinstance(dim, Choices):
                values[name] = trial.suggest_categorical(name, list(dim.values))
            elif declared[name].kind is int:
                values[name] = trial.suggest_int(name, int(dim.low), int(dim.high), log=dim.log)
            else:  # 3 significant digits: finer differences are noise in any run, and labels stay readable
                values[name] = float(f"{trial.suggest_float(name, float(dim.low), float(dim.high), log=dim.log):.3g}")
        return values

    def defaults(self) -> dict[str, Any] | None:
        """The declared defaults of the searched parameters, when every one lies in its dimension (a study tries
        them first, so it never recommends something worse than what a user runs without tuning); else None."""
        declared = declared_params(self.controller)
        values = dict(self.fixed)
        for name in self._ordered():
            dim = self.dimensions[name]
            if not self.active(name, values):
                continue
            value = declared[name].default
            inside = value in dim.values if isinstance(dim, Choices) else dim.low <= value <= dim.high
            if not inside:
                return None
            values[name] = value
        return {k: v for k, v in values.items() if k not in self.fixed}

    def to_dict(self) -> dict[str, Any]:
        """What identifies the space: a study resumed under the same name must search this same space."""
        declared = declared_params(self.controller)
        return {"controller": self.controller, "fixed": dict(sorted(self.fixed.items())),
                "dimensions": {k: {**d.to_dict(), **({"when": list(declared[k].search_when)}
                                                     if declared[k].search_when else {})}
                               for k, d in sorted(self.dimensions.items())}}

    def fingerprint(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, default=str)

    def describe(self) -> list[str]:
        declared = declared_params(self.controller)
        lines = []
        for name, dim in self.dimensions.items():
            spec = declared[name]
            if isinstance(dim, Choices):
                where = "{" + ", ".join(map(str, dim.values)) + "}"
            else:
                where = f"[{dim.low:g}, {dim.high:g}]{' log' if dim.log else ''}"
            when = f" (searched only when {spec.search_when[0]}={spec.search_when[1]})" if spec.search_when else ""
            lines.append(f"  {name:<20} {spec.kind.__name__:<5} {where:<28} default {spec.default!r:<10} "
                         f"{spec.doc}{when}")
        lines += [f"  {name:<20} fixed {value!r}" for name, value in self.fixed.items()]
        return lines


def tunable_controllers() -> list[str]:
    return [name for name, cls in controllers.registered().items()
            if any(p.search is not None for p in cls.PARAMS.values())]


def _parse_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _override(controller: str, name: str, spec: Param, text: str) -> Dimension:
    where = f"controller {controller!r}: --range {name}={text}"
    if spec.per_operator or spec.kind is dict:
        raise SpaceError(f"{where}: a per-operator parameter is not searched (fix it with --set)")
    if "|" in text or spec.kind in (bool, str):
        values = tuple(_parse_value(v.strip()) for v in text.split("|") if v.strip())
        if not values:
            raise SpaceError(f"{where}: no values to try")
        for value in values:
            try:
                spec.check(f"controller {controller!r}", name, value)
            except ParamError as exc:
                raise SpaceError(f"{where}: {exc}") from None
        return Choices(values)
    parts = text.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
        raise SpaceError(f"{where}: expected LOW:HIGH or LOW:HIGH:log (or A|B|C for values to try)")
    try:
        low, high = float(parts[0]), float(parts[1])
    except ValueError:
        raise SpaceError(f"{where}: LOW and HIGH must be numbers") from None
    if spec.kind is int and not (low.is_integer() and high.is_integer()):
        raise SpaceError(f"{where}: {name} is an integer parameter; LOW and HIGH must be integers")
    try:
        dim = SearchRange(low, high, log=len(parts) == 3)
        for bound in (low, high):  # every sampled value must be one the controller accepts
            spec.check(f"controller {controller!r}", name, int(bound) if spec.kind is int else bound)
    except ParamError as exc:
        raise SpaceError(f"{where}: {exc}") from None
    return dim


def build_space(controller: str, ranges: Sequence[str] = (), fixed: Sequence[str] | Mapping[str, Any] = ()
                ) -> SearchSpace:
    """The controller's declared space with the user's changes: `ranges` as NAME=LOW:HIGH[:log] or NAME=A|B,
    `fixed` as NAME=VALUE (or a mapping). Raises SpaceError naming what is wrong, before any trial."""
    known = controllers.registered()
    name, placement = split_composite(controller)
    if name not in known:
        raise SpaceError(f"unknown controller {name!r}; controllers with tunable parameters: "
                         f"{', '.join(tunable_controllers())}")
    if placement is not None:
        from controllers.placement import registered as placements

        if placement not in placements():
            raise SpaceError(f"unknown placement controller {placement!r} after '+' in {controller!r}; expected one "
                             f"of: {', '.join(sorted(placements()))}")
    declared = declared_params(controller)
    dims: dict[str, Dimension] = {name: spec.search for name, spec in declared.items() if spec.search is not None}
    if not dims and not ranges:
        raise SpaceError(f"controller {controller!r} declares no tunable parameter; controllers with tunable "
                         f"parameters: {', '.join(tunable_controllers())}")

    def split(item: str, flag: str) -> tuple[str, str]:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SpaceError(f"controller {controller!r}: {flag} {item!r}: expected NAME=...")
        if name not in declared:
            raise SpaceError(f"controller {controller!r}: {flag} {item!r}: unknown parameter {name!r}; "
                             f"parameters: {', '.join(declared)}")
        return name, text.strip()

    for item in ranges:
        name, text = split(item, "--range")
        dims[name] = _override(controller, name, declared[name], text)
    fixed_values: dict[str, Any] = {}
    items = fixed.items() if isinstance(fixed, Mapping) else [split(item, "--set") for item in fixed]
    for name, value in items:
        if name not in declared:
            raise SpaceError(f"controller {controller!r}: --set {name}: unknown parameter {name!r}; "
                             f"parameters: {', '.join(declared)}")
        value = _parse_value(value) if isinstance(value, str) else value
        try:
            fixed_values[name] = declared[name].check(f"controller {controller!r}", name, value)
        except ParamError as exc:
            raise SpaceError(f"--set {name}: {exc}") from None
        dims.pop(name, None)
    if not dims:
        raise SpaceError(f"controller {controller!r}: the search space is empty (every tunable parameter is fixed "
                         f"with --set)")
    return SearchSpace(controller, dims, fixed_values)
