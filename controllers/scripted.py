"""Degrees (and executor counts) changed at given batches, whatever the metrics say.

A controller with known actions is how the pipeline measures itself: the reconfiguration delay (decision after
batch k, new degrees in force in batch k+1?), exactly-once output across changes of parallelism, and the cost of
a change, all without a feedback loop blurring cause and effect. Also useful to replay a hand-written plan.
The same holds one level down: scripted executor counts measure the process-level actuator's provisioning and
release delays on a cluster.
"""
from __future__ import annotations

from controllers.base import ConfigError, Controller, Param, Rule, register
from controllers.common_params import INITIAL_DEGREE, at_most_max_degree
from controllers.types import Decision, Snapshot


@register
class ScriptedController(Controller):
    name = "scripted"
    summary = "apply given degrees after given batches (e.g. {2: {enrich: 3}}); for measurements and replays"
    PARAMS = {
        "initial_degree": INITIAL_DEGREE,
        "changes": Param(dict, {}, "mapping: batch id -> {operator: degree}, applied after that batch"),
        "initial_executors": Param(int, 0, "executors in the first batch (0: executors not managed, Spark's grant)",
                                   0),
        "executor_changes": Param(dict, {}, "mapping: batch id -> executor count, applied after that batch "
                                            "(needs a cluster master and initial_executors >= 1)"),
    }
    RULES = (at_most_max_degree("initial_degree"),
             Rule(("executor_changes", "initial_executors"),
                  lambda v, c: not v["executor_changes"] or v["initial_executors"] >= 1,
                  "executor_changes need initial_executors >= 1 (the executors must be managed from the first "
                  "batch)"))

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self.changes: dict[int, dict[str, int]] = {}
        for batch_id, where, degrees in _plan("changes", self.params["changes"]):
            if not isinstance(degrees, dict):
                raise ConfigError(f"{where}: expected a mapping operator -> degree, got {degrees!r}")
            for op, d in degrees.items():
                if op not in operators:
                    raise ConfigError(f"{where}: unknown operator {op!r}; operators: {', '.join(operators)}")
                if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= max_degree:
                    raise ConfigError(f"{where}: degree of {op!r} must be an integer in [1, {max_degree}], got {d!r}")
            self.changes[batch_id] = dict(degrees)
        self.executor_changes: dict[int, int] = {}
        for batch_id, where, count in _plan("executor_changes", self.params["executor_changes"]):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ConfigError(f"{where}: executor count must be a positive integer, got {count!r}")
            self.executor_changes[batch_id] = count

    def initial_degrees(self) -> dict[str, int]:
        return {op: self.params["initial_degree"] for op in self.operators}

    def initial_executors(self) -> int | None:
        return self.params["initial_executors"] or None

    def decide(self, snapshot: Snapshot) -> Decision:
        degrees = snapshot.degrees
        change = self.changes.get(snapshot.batch_id, {})
        executors = self.executor_changes.get(snapshot.batch_id)
        if not change and executors is None:
            return Decision(degrees, "no change scripted after this batch")
        degrees.update(change)
        said = [f"{op}={d}" for op, d in change.items()] + ([f"executors={executors}"] if executors else [])
        return Decision(degrees, f"scripted after batch {snapshot.batch_id}: " + ", ".join(said), executors=executors)


def _plan(param: str, plan: dict):
    """(batch id, where, value) for each entry of a plan keyed by batch id; the ids must be integers."""
    for batch, value in plan.items():
        where = f"controller {ScriptedController.name!r}: parameter {param!r} at batch {batch!r}"
        try:
            batch_id = int(batch)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: batch ids must be integers") from None
        yield batch_id, where, value
