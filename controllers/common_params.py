"""Declarations and rules that many controllers share, written once.

Degrees and their bounds mean the same in every parallelism controller, so they are declared here and a controller
takes them as they are or with its own default (`INITIAL_DEGREE.but(default=2)`). The rules tie them to the run
(the run's max degree is only known when the controller is built for a run).
"""
from __future__ import annotations

from params.declare import Param, Rule, SearchRange

INITIAL_DEGREE = Param(int, 1, "degree of every operator in the first batch", minimum=1)
# the project's choice: searched over [1, 8] (8 is the runs' default max degree) where tuning sizes the start —
# a workload that opens with a burst is lost in its first batches at degree 1, before any controller has seen it
SEARCHED_INITIAL_DEGREE = INITIAL_DEGREE.but(search=SearchRange(1, 8))
INITIAL_DEGREES = Param(int, {}, "per-operator first degrees overriding initial_degree, e.g. {enrich: 3}",
                        minimum=1, per_operator=True)
MIN_DEGREE = Param(int, 1, "never scale an operator below this", minimum=1)
PARALLEL_SLOTS = Param(int, 0, "tasks that can run at once (executor cores); 0: the run's slots where the job "
                                "knows them before it starts (local[N]: N; guards only), else the run's max degree",
                       minimum=0)
# a registered (learned) load predictor and its runtime guard, for every controller that can be steered by one
# (AUTOSCALE, multilevel): loaded by the run when the controller's `predictor` is 'registry' (jobs/predictors.py)
LEARNED_PREDICTOR_PARAMS = {
    "predictor_model": Param(str, "load-predictor", "registered model name used when predictor=registry"),
    "predictor_alias": Param(str, "champion", "registry alias used when predictor=registry"),
    "predictor_guard": Param(bool, True, "check a learned load predictor (predictor=registry, or any the run "
                                         "hands over) against the naive last value as the run goes, and set the "
                                         "model aside while it is worse (controllers.forecast_guard; AUTOSCALE "
                                         "forecasts naively then, multilevel by its trend); never applied to "
                                         "'paper' or 'last-value'"),
    "guard_window": Param(int, 5, "latest realised iterations over which the guard compares the model's and "
                                  "naive's mean absolute errors (project's choice)", 1,
                          search=SearchRange(2, 10)),
    "guard_margin": Param(float, 0.0, "how far the model's mean absolute error may exceed naive's, as a fraction "
                                      "of naive's, before naive is used (0: any worse)", 0.0,
                          search=SearchRange(0.0, 0.5)),
    "guard_min_scored": Param(int, 3, "realised iterations the guard needs before it may set the model aside "
                                      "(project's choice: one bad iteration is noise)", 1,
                              search=SearchRange(1, 10)),
}
COOLDOWN_S = Param(float, 10.0, "seconds after an action during which no other action is taken", minimum=0.0,
                   search=SearchRange(0.0, 60.0))


# executor bounds, for every controller that sets or configures executors
EXECUTOR_BOUNDS = Rule(("min_executors", "initial_executors", "max_executors"),
                       lambda v, c: v["min_executors"] <= v["initial_executors"] <= v["max_executors"],
                       "need min_executors <= initial_executors <= max_executors, got {min_executors}, "
                       "{initial_executors}, {max_executors}")


def at_most_max_degree(*fields: str) -> Rule:
    """Each named degree (a number, or a per-operator mapping) is within the run's max degree."""

    def holds(values, context):
        if context.max_degree is None:
            return None
        for field in fields:
            value = values[field]
            named = ({f"{field}[{op!r}]": v for op, v in value.items()} if isinstance(value, dict)
                     else {field: value})
            for name, v in named.items():
                if v > context.max_degree:
                    return f"{name} ({v}) must be <= max_degree ({context.max_degree})"
        return True

    shown = " and ".join(f"{f} ({{{f}}})" for f in fields)
    return Rule(fields, holds, f"{shown} must be <= max_degree ({{max_degree}})")


def below(low: str, high: str) -> Rule:
    """`low` must be strictly below `high` (a band, thresholds)."""
    return Rule((low, high), lambda v, c: v[low] < v[high], f"{low} ({{{low}}}) must be below {high} ({{{high}}})")


def uniform_initial_degrees(values, operators, max_degree: int) -> dict[str, int]:
    """Every operator at initial_degree, at least min_degree, at most the run's max degree."""
    return {op: min(max_degree, max(values["initial_degree"], values["min_degree"])) for op in operators}


def initial_degrees(values, operators) -> dict[str, int]:
    """The first degrees from initial_degree and the per-operator overrides in initial_degrees (when declared)."""
    overrides = values.get("initial_degrees", {})
    floor = values.get("min_degree", 1)
    return {op: max(int(overrides.get(op, values["initial_degree"])), floor) for op in operators}
