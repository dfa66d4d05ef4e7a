"""Controller interface, parameter declarations and the registry by name.

Each controller declares its parameters (type, default, bounds, meaning). Configuration is checked against that
declaration once, before a run starts, so "unknown controller", "unknown parameter" and "out of range" are
one-line errors instead of a failure minutes into a Spark job.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, Sequence

from controllers.types import Decision, Snapshot


class ConfigError(ValueError):
    """A controller configuration that cannot be used; the message names the controller and the parameter."""


@dataclass(frozen=True)
class Param:
    kind: type  # int, float, bool, str or dict
    default: Any
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    # a text parameter that may also be given as a mapping or list (a policy written inline in YAML flow style or
    # JSON): kept as that structure's JSON text, so every way of writing it configures the same thing
    structured: bool = False
    # what the configuration's identity (config_id) sees of the value, when the text is not the thing itself: a
    # policy given by catalogue name is hashed as the rules it names, so editing the file makes a new configuration
    identity: Callable[[Any], Any] | None = None

    def check(self, controller: str, name: str, value: Any) -> Any:
        where = f"controller {controller!r}: parameter {name!r}"
        if self.structured and isinstance(value, (dict, list)):
            value = json.dumps(value, sort_keys=True)
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if (self.kind in (int, float) and isinstance(value, bool)) or not isinstance(value, self.kind):
            raise ConfigError(f"{where} must be of type {self.kind.__name__}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{where} must be >= {self.minimum}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{where} must be <= {self.maximum}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


class Controller(ABC):
    """Maps snapshots to decisions, keeping whatever state it needs between calls.

    Subclasses declare PARAMS and implement `decide`. `operators` is the topology in order from the source;
    `max_degree` is the largest degree the run allows for any operator (the loop clamps nothing: a decision
    outside [1, max_degree] is rejected and logged, so a buggy controller is visible, not silently corrected).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    PARAMS: ClassVar[Mapping[str, Param]] = {}

    def __init__(self, params: Mapping[str, Any], operators: Sequence[str], max_degree: int):
        self.params = dict(params)
        self.operators = tuple(operators)
        self.max_degree = max_degree

    @abstractmethod
    def initial_degrees(self) -> dict[str, int]:
        """Degrees for the first batch."""

    @abstractmethod
    def decide(self, snapshot: Snapshot) -> Decision:
        """Degrees for the next batch, given what the last one showed."""

    def initial_executors(self) -> int | None:
        """Executors for the first batch when this controller manages them (process level); None leaves the
        executors to Spark (all the cores the cluster grants, or Spark's own dynamic allocation)."""
        return None

    def spark_settings(self) -> dict[str, str]:
        """Spark settings this configuration needs at start-up (Spark's dynamic allocation is configured, not
        decided); recorded with the run."""
        return {}

    def needs_cluster(self) -> bool:
        """True when the configuration acts on executors, which a local[N] master does not have."""
        return self.initial_executors() is not None or bool(self.spark_settings())

    def check_run(self, trigger_s: float) -> None:
        """Reject run settings this configuration cannot work with (raise ConfigError); called before Spark starts."""


_REGISTRY: dict[str, type[Controller]] = {}


def register(cls: type[Controller]) -> type[Controller]:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"controller name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Controller]]:
    return dict(sorted(_REGISTRY.items()))


def validate_config(name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Complete `params` with defaults and check every value; raise ConfigError naming the culprit."""
    if name not in _REGISTRY:
        raise ConfigError(f"unknown controller {name!r}; known controllers: {', '.join(sorted(_REGISTRY))}")
    declared = _REGISTRY[name].PARAMS
    params = dict(params or {})
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ConfigError(
            f"controller {name!r}: unknown parameter(s) {', '.join(unknown)}; "
            f"expected: {', '.join(declared) or '(none)'}"
        )
    checked = {}
    for key, spec in declared.items():
        checked[key] = spec.check(name, key, params[key]) if key in params else spec.default
    return checked


def build_controller(
    name: str, params: Mapping[str, Any] | None, operators: Sequence[str], max_degree: int
) -> Controller:
    """The one way to make a controller: validated config, then the registered class."""
    checked = validate_config(name, params)
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1, got {max_degree}")
    controller = _REGISTRY[name](checked, operators, max_degree)
    for op, degree in controller.initial_degrees().items():
        if not 1 <= degree <= max_degree:
            raise ConfigError(
                f"controller {name!r}: initial degree {degree} of operator {op!r} is outside [1, {max_degree}]"
            )
    return controller


def config_label(name: str, params: Mapping[str, Any]) -> str:
    """A short readable name for a configuration: the controller and the parameters that differ from defaults
    (e.g. 'threshold:cooldown_s=6'), the same however the configuration was written."""
    checked = validate_config(name, params)
    declared = _REGISTRY[name].PARAMS
    changed = {k: v for k, v in checked.items() if v != declared[k].default}
    if not changed:
        return name
    return name + ":" + ",".join(f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}"
                                 for k, v in sorted(changed.items()))


def config_id(name: str, params: Mapping[str, Any]) -> str:
    """A stable identity for a configuration: a hash of its full, validated parameters."""
    checked = validate_config(name, params)
    declared = _REGISTRY[name].PARAMS
    checked = {k: declared[k].identity(v) if declared[k].identity else v for k, v in checked.items()}
    text = json.dumps({"controller": name, "params": checked}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(name: str) -> str:
    cls = _REGISTRY[name]
    lines = [f"{name}: {cls.summary}"]
    for key, p in cls.PARAMS.items():
        bounds = ""
        if p.minimum is not None or p.maximum is not None:
            bounds = f" [{'' if p.minimum is None else p.minimum}..{'' if p.maximum is None else p.maximum}]"
        lines.append(f"  {key} ({p.kind.__name__}, default {p.default!r}{bounds}): {p.doc}")
    return "\n".join(lines)

