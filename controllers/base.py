"""Controller interface and the registry by name.

Each controller declares its parameters (params.declare: type, default, bounds, meaning, per operator or not,
search range) in PARAMS and its cross-field constraints in RULES. A configuration is checked against that
declaration once, before a run starts, so "unknown controller", "unknown parameter", "out of range" and
"contradicts another parameter" are one-line errors instead of a failure minutes into a Spark job.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Mapping, Sequence

from controllers.slots import SlotFitter
from controllers.types import Decision, RunContext, Snapshot
from params.declare import Context, Param, ParamError, Rule, check_params, describe_params, search_space

__all__ = ["ConfigError", "Controller", "Param", "Rule", "build_controller", "config_id", "config_label", "describe",
           "register", "registered", "validate_config", "search_space_of"]


# one error type for every declared setting (params.declare); the message names the controller and the parameter
ConfigError = ParamError


class Controller(ABC):
    """Maps snapshots to decisions, keeping whatever state it needs between calls.

    Subclasses declare PARAMS (and RULES across them) and implement `decide`. `operators` is the topology in order
    from the source; `max_degree` is the largest degree the run allows for any operator (the loop clamps nothing:
    a decision outside [1, max_degree] is rejected and logged, so a buggy controller is visible, not silently
    corrected). What a run knows besides the configuration (its trigger, SLO, the workload's schedule, a loaded
    load predictor) reaches a controller through `bind`, once, before the first batch.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    PARAMS: ClassVar[Mapping[str, Param]] = {}
    RULES: ClassVar[tuple[Rule, ...]] = ()
    # slot-aware controllers (controllers/slots.py) have their degrees capped at the run's task slots and may manage
    # executors (they declare EXECUTOR_PARAMS); the control loop applies it after `decide` and `at_batch_start`
    SLOT_AWARE: ClassVar[bool] = False

    def __init__(self, params: Mapping[str, Any], operators: Sequence[str], max_degree: int):
        self.params = dict(params)
        self.operators = tuple(operators)
        self.max_degree = max_degree
        self.context: RunContext | None = None
        self.slot_fitter = SlotFitter(self.params) if self.SLOT_AWARE else None

    def bind(self, context: RunContext) -> None:
        """Receive the run's context before the first batch (the Spark job, the simulator and tests all call it).
        Controllers that plan with the run's settings or the workload's future override it and call super()."""
        self.context = context
        if self.slot_fitter is not None:
            self.slot_fitter.bind(context.slots)

    def fit_to_slots(self, decision: Decision, snapshot: Snapshot | None, executors: int | None,
                     time_s: float) -> Decision:
        """The decision as the run's task slots allow it (controllers/slots.py); unchanged for a controller that is
        not slot-aware. The control loop calls it after every decision, with the snapshot decided on (None at a
        batch start)."""
        if self.slot_fitter is None:
            return decision
        if snapshot is not None:
            self.slot_fitter.observe(snapshot)
        return self.slot_fitter.fit(decision, executors, time_s, plan_executors=snapshot is not None)

    def run_tags(self) -> dict[str, str]:
        """Tags this configuration adds to its run's record (which predictor it uses, say)."""
        return {}

    def run_params(self) -> dict[str, Any]:
        """Extra parameters worth recording with the run, beyond the configuration itself."""
        return {}

    def run_artifacts(self) -> dict[str, Any]:
        """Extra artifacts worth recording with the run: name -> text or JSON-able data (a policy as written and
        as understood, say)."""
        return {}

    @abstractmethod
    def initial_degrees(self) -> dict[str, int]:
        """Degrees for the first batch."""

    @abstractmethod
    def decide(self, snapshot: Snapshot) -> Decision:
        """Degrees for the next batch, given what the last one showed."""

    def at_batch_start(self, pending: int, time_s: float, degrees: Mapping[str, int],
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        """Degrees for the batch that is starting, now that it is known to read `pending` events (those arrived and
        not yet read: a consumer's lag; the oldest of them has waited `oldest_wait_s`, when known; `recent_arrivals`:
        what arrived since the last batch ended, by ARRIVAL_BIN_S bins, when known), or None to keep `degrees`. Most controllers decide only after a batch; the guard layer's burst sizing answers here
        (controllers/burst_sizing.py, Guards.batch_start)."""
        return None

    def initial_executors(self) -> int | None:
        """Executors for the first batch when this controller manages them (process level); None leaves the
        executors to Spark (all the cores the cluster grants, or Spark's own dynamic allocation)."""
        return self.slot_fitter.initial_executors() if self.slot_fitter is not None else None

    def spark_settings(self) -> dict[str, str]:
        """Spark settings this configuration needs at start-up (Spark's dynamic allocation is configured, not
        decided); recorded with the run."""
        return {}

    def needs_cluster(self) -> bool:
        """True when the configuration acts on executors, which a local[N] master does not have."""
        return self.initial_executors() is not None or bool(self.spark_settings())

    def check_run(self, context: RunContext) -> None:
        """Reject run settings this configuration cannot work with (raise ConfigError); called before Spark starts."""


_REGISTRY: dict[str, type[Controller]] = {}


def register(cls: type[Controller]) -> type[Controller]:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"controller name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[Controller]]:
    return dict(sorted(_REGISTRY.items()))


def _owner(name: str) -> str:
    return f"controller {name!r}"


def _declared(name: str) -> type[Controller]:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown controller {name!r}; known controllers: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def validate_config(name: str, params: Mapping[str, Any] | None, operators: Sequence[str] | None = None,
                    max_degree: int | None = None) -> dict[str, Any]:
    """Complete `params` with defaults and check every value and rule; raise ConfigError naming the culprit.
    Rules about operators or the run's max degree are checked once those are given."""
    cls = _declared(name)
    context = Context(tuple(operators) if operators is not None else None, max_degree)
    return check_params(_owner(name), cls.PARAMS, params, cls.RULES, context)


def build_controller(
    name: str, params: Mapping[str, Any] | None, operators: Sequence[str], max_degree: int
) -> Controller:
    """The one way to make a controller: validated config, then the registered class."""
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1, got {max_degree}")
    checked = validate_config(name, params, operators, max_degree)
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


def search_space_of(name: str) -> dict[str, Any]:
    """A controller's tunable parameters and their declared search ranges (what a tuning study searches)."""
    return search_space(_declared(name).PARAMS)


def describe(name: str) -> str:
    """A controller's parameters as a user reads them: type, default, bounds, search range, meaning; its rules."""
    cls = _declared(name)
    lines = [f"{name}: {cls.summary}", *describe_params(cls.PARAMS)]
    lines += [f"  rule: {rule.describe()}" for rule in cls.RULES]
    return "\n".join(lines)
