"""Pure decision logic: snapshots in, scaling decisions out. No Spark, MLflow, Airflow or I/O imports here.

Importing the package registers the built-in controllers, so `build_controller("threshold", ...)` works after
`import controllers`.
"""
from controllers import (  # noqa: F401  (registration)
    autoscale, ds2, executor_autoscaler, multilevel, oracle, scripted, seep, settle_controller, spark_dynamic, static,
    threshold)
from controllers.base import (ConfigError, Controller, Param, build_controller, config_id, config_label, describe, register,
                              registered, validate_config)
from controllers.actuation import Actuator, Outcome, Unavailable
from controllers.loop import ControlLoop, DecisionRecord
from controllers.types import Decision, OperatorMetrics, RunContext, Snapshot

__all__ = [
    "Actuator", "ConfigError", "Controller", "ControlLoop", "Decision", "DecisionRecord", "OperatorMetrics", "Outcome",
    "Param", "RunContext", "Unavailable",
    "Snapshot", "build_controller", "config_id", "config_label", "describe", "register", "registered", "validate_config",
]
