"""The placement controller interface and its registry by name, apart from the parallelism controllers' registry
because the two answer different questions (which partition, not how many) and are composed, not interchanged."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping

from controllers.placement.types import PlacementDecision, PlacementSnapshot
from params.declare import Param, ParamError, Rule, check_params, describe_params

_REGISTRY: dict[str, type["PlacementController"]] = {}


class PlacementController(ABC):
    """Maps a keyed operator's report periods to key-group moves, keeping what it needs between calls.

    Subclasses declare PARAMS (and RULES) like the parallelism controllers; a configuration is checked once, before
    a run starts."""

    name: ClassVar[str]
    summary: ClassVar[str]
    PARAMS: ClassVar[Mapping[str, Param]] = {}
    RULES: ClassVar[tuple[Rule, ...]] = ()

    def __init__(self, params: Mapping[str, Any] | None = None):
        self.params = check_params(f"placement controller {self.name!r}", self.PARAMS, params, self.RULES)

    @abstractmethod
    def decide(self, snapshot: PlacementSnapshot) -> PlacementDecision:
        """The moves to make after this period (none is an answer too, with its reason)."""


def register(cls: type[PlacementController]) -> type[PlacementController]:
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[PlacementController]]:
    return dict(_REGISTRY)


def build_placement(name: str, params: Mapping[str, Any] | None = None) -> PlacementController:
    if name not in _REGISTRY:
        raise ParamError(f"unknown placement controller {name!r}; expected one of: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](params)


def placement_label(name: str, params: Mapping[str, Any] | None = None) -> str:
    """'sousa' or 'sousa:max_moves=2,sensitivity=0.25': the placement controller and the settings given, as a run's
    configuration label and a suite variant write it (after '+')."""
    settings = ",".join(f"{k}={v}" for k, v in sorted((params or {}).items()))
    return f"{name}:{settings}" if settings else name


def describe_placement(name: str) -> str:
    """A placement controller's parameters as a user reads them (`python -m jobs.run --describe sousa`)."""
    cls = _REGISTRY[name]
    lines = [f"{name} (placement controller, --placement): {cls.summary}", *describe_params(cls.PARAMS)]
    lines += [f"  rule: {rule.describe()}" for rule in cls.RULES]
    return "\n".join(lines)
