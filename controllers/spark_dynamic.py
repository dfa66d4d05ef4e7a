"""Spark's own dynamic allocation as a peer: what a Spark user gets today without any controller of ours.

Spark (not this controller) adds executors while tasks wait longer than the backlog timeout and removes executors
idle longer than the idle timeout; shuffle tracking keeps executors holding shuffle data until it is no longer
needed, which is what lets dynamic allocation run without an external shuffle service. This controller only
configures it and keeps the operators' degrees fixed (by default at max_degree, Spark's shuffle partitions, as a
Spark user leaves them), so a comparison isolates Spark's executor policy. The executor count over time is
recorded from Spark's status store by the job, as for every run on a cluster.

Project's choices where Spark's defaults do not suit a micro-batch job (all configurable): the backlog timeouts
are 1 s (Spark's default, shorter than any trigger here), the idle timeout 60 s (Spark's default), the shuffle
tracking timeout 30 s (Spark's default is infinite, which would never release an executor that served a
shuffle: with a stateless job every executor does, so nothing would ever scale in), executors of 1 core.
"""
from __future__ import annotations

from controllers.base import Controller, Param, register
from controllers.common_params import EXECUTOR_BOUNDS, at_most_max_degree
from controllers.types import Decision, Snapshot


@register
class SparkDynamicAllocation(Controller):
    name = "spark-dynamic-allocation"
    summary = "Spark's dynamic allocation of executors (shuffle tracking), fixed degrees; the peer a Spark user has"
    PARAMS = {
        "degree": Param(int, 0, "degree of every operator (0: max_degree, i.e. spark.sql.shuffle.partitions)", 0),
        "min_executors": Param(int, 1, "spark.dynamicAllocation.minExecutors", 0),
        "max_executors": Param(int, 8, "spark.dynamicAllocation.maxExecutors", 1),
        "initial_executors": Param(int, 1, "spark.dynamicAllocation.initialExecutors", 0),
        "backlog_timeout_s": Param(float, 1.0, "schedulerBacklogTimeout: tasks waiting this long add executors",
                                   0.001),
        "sustained_backlog_timeout_s": Param(float, 1.0, "sustainedSchedulerBacklogTimeout: later additions",
                                             0.001),
        "idle_timeout_s": Param(float, 60.0, "executorIdleTimeout: an executor idle this long is removed", 0.001),
        "shuffle_tracking_timeout_s": Param(float, 30.0, "shuffleTracking.timeout (project's choice; Spark: none)",
                                            0.001),
        "executor_cores": Param(int, 1, "spark.executor.cores", 1),
    }
    RULES = (
        EXECUTOR_BOUNDS,
        at_most_max_degree("degree"),
    )

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        p = self.params
        self._degree = p["degree"] or max_degree

    def initial_degrees(self) -> dict[str, int]:
        return {op: self._degree for op in self.operators}

    def decide(self, snapshot: Snapshot) -> Decision:
        return Decision(snapshot.degrees, "degrees fixed; Spark's dynamic allocation sizes the executors")

    def spark_settings(self) -> dict[str, str]:
        p = self.params
        return {
            "spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.enabled": "true",
            "spark.dynamicAllocation.shuffleTracking.timeout": f"{p['shuffle_tracking_timeout_s']:g}s",
            "spark.dynamicAllocation.minExecutors": str(p["min_executors"]),
            "spark.dynamicAllocation.maxExecutors": str(p["max_executors"]),
            "spark.dynamicAllocation.initialExecutors": str(p["initial_executors"]),
            "spark.dynamicAllocation.schedulerBacklogTimeout": f"{p['backlog_timeout_s']:g}s",
            "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout": f"{p['sustained_backlog_timeout_s']:g}s",
            "spark.dynamicAllocation.executorIdleTimeout": f"{p['idle_timeout_s']:g}s",
            "spark.executor.cores": str(p["executor_cores"]),
        }
