"""A streaming-aware executor autoscaler: the number of executors of a running query from its micro-batches, meant
as the alternative to dynamic allocation a Spark user lacks (how it fares against it: docs/multilevel.md).

Spark's dynamic allocation reacts to tasks waiting (backlog timeout) and to idle executors (idle timeout): signals
of batch jobs. A micro-batch query that falls behind shows it first in its batches — a batch longer than the
trigger, a backlog that grows — while its tasks may never wait long, and its executors are never idle long enough
to go between batches one trigger apart. Spark's proposal for a streaming-aware allocation (SPARK-24815) was never
merged. This controller decides the executor count from what each batch shows:

- work: the batch's task time (the operators' busy seconds: core-seconds, whatever the executors) and its fixed
  cost (batch duration less the stages' wall time), averaged over `window_batches`;
- demand: the arrival rate plus the backlog drained within `catch_up_s`, as events per trigger interval;
- wanted executors: the least n with fixed + work x demand / read / (n x cores) <= target_utilization x trigger,
  i.e. batch duration / trigger at the target after the change (linear speed-up in executors, the model's
  simplification; the characterisation in docs/benchmarks.md bounds where it holds);
- backlog trend: while the backlog has grown over `window_batches` batches and the last batch ran longer than the
  trigger, at least one more executor whatever the estimate (the estimate was wrong: the query is falling behind);
- scale-out at once; scale-in only after fewer were wanted for `stabilisation_s` without a break, to the most wanted
  during it (Flink's scale-down rule), and within [min_executors, max_executors];
- nothing before `warmup_s` (10 s, the project's choice; Flink's autoscaler waits out a stabilisation interval after
  a job starts for the same reason): a fresh executor's first batches run slow while the JVM and its Python workers
  warm up (measured on the step workload: 736-1,442 ev/s processed of 1,500 in the first three batches), and sizing
  for them would hold executors the load never needs.

Degrees: `degree` 0 (the project's choice) gives every operator as many tasks as the executors in force have
cores — the tasks the slots can run at once, so an added executor is used at the next batch and a removed one
leaves no second wave; a positive `degree` fixes every operator's degree, as a user's query with fixed shuffle
partitions has (compare with spark-dynamic-allocation at the same degree).

Which executors go: the job's executor actuator kills the newest surplus executors between two micro-batches (the
control loop runs after a batch has completed and before the next is planned). No executor then holds anything a
later batch needs: each batch's shuffle files are read within that batch, and the job's operator state lives on the
driver (jobs/query_runtime.py), not in executors' state stores. So on standalone, with no external shuffle service,
a release loses nothing; Spark's dynamic allocation has to track shuffle files to know the same.
"""
from __future__ import annotations

import math
from collections import deque

from controllers.base import Controller, Param, register
from controllers.common_params import EXECUTOR_BOUNDS, at_most_max_degree
from controllers.scale_in import ScaleInHold
from controllers.slots import EXECUTOR_CORES
from controllers.types import Decision, Snapshot
from params.declare import SearchRange


@register
class ExecutorAutoscaler(Controller):
    name = "executor-autoscaler"
    summary = ("executors from batch duration / trigger and the backlog's trend (scale-out at once, scale-in after "
               "stabilisation); degrees follow the slots")
    PARAMS = {
        "degree": Param(int, 0, "degree of every operator; 0: the executors' cores in force (one task per slot)", 0),
        "min_executors": Param(int, 1, "never fewer executors", 1),
        "max_executors": Param(int, 4, "never more executors (project's choice: 4, twice this machine's cores)", 1,
                               search=SearchRange(1, 8)),
        "initial_executors": Param(int, 1, "executors in the first batch", 1),
        "target_utilization": Param(float, 0.7, "batch duration / trigger interval to size for", 0.05, 1.0,
                                    search=SearchRange(0.4, 0.95)),
        "catch_up_s": Param(float, 10.0, "drain the backlog within this many seconds", 0.001, open_minimum=True,
                            search=SearchRange(2.0, 60.0)),
        "window_batches": Param(int, 3, "batches averaged, and over which the backlog's trend is read", 1,
                                search=SearchRange(1, 10)),
        "stabilisation_s": Param(float, 30.0, "release executors only after fewer were wanted this long", 0.0,
                                 search=SearchRange(0.0, 120.0)),
        "warmup_s": Param(float, 10.0, "no scale-out before this (the run's start-up transient; project's choice)",
                          0.0, search=SearchRange(0.0, 30.0)),
    }
    RULES = (
        EXECUTOR_BOUNDS,
        at_most_max_degree("degree"),
    )

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        self._window: deque[Snapshot] = deque(maxlen=self.params["window_batches"])
        self._hold = ScaleInHold(self.params["stabilisation_s"])
        self._executors = self.params["initial_executors"]

    def initial_executors(self) -> int | None:
        return self.params["initial_executors"]

    def initial_degrees(self) -> dict[str, int]:
        return self._degrees(self._executors * EXECUTOR_CORES)

    def _degrees(self, slots: int) -> dict[str, int]:
        degree = self.params["degree"] or max(1, min(self.max_degree, slots))
        return {op: degree for op in self.operators}

    def wanted(self, snapshot: Snapshot) -> tuple[int, dict[str, float], str]:
        """Executors the next batches need, the numbers behind it, and why."""
        p = self.params
        window = list(self._window)
        trigger = snapshot.trigger_interval_s
        interval = sum(s.interval_s for s in window)
        read = sum(s.records_read for s in window)
        if interval <= 0 or read <= 0:
            return self._executors, {}, "nothing read yet"
        work = sum(sum(op.busy_s for op in s.operators) for s in window) / read  # core-seconds per event
        fixed = sum(max(0.0, s.batch_duration_s - sum(op.span_s for op in s.operators)) for s in window) / len(window)
        arrival_rate = sum(s.arrivals for s in window) / interval
        demand = (arrival_rate + snapshot.backlog / p["catch_up_s"]) * trigger  # events per trigger interval
        budget = p["target_utilization"] * trigger - fixed
        cores_needed = work * demand / budget if budget > 0 else math.inf
        n = math.ceil(cores_needed / EXECUTOR_CORES - 1e-9) if math.isfinite(cores_needed) else p["max_executors"]
        why = f"{demand:.0f} events per trigger at {work * 1e3:.3f} ms each, {fixed:.2f} s fixed: {n} executor(s)"
        growing = (len(window) == p["window_batches"] and window[-1].backlog > window[0].backlog
                   and snapshot.batch_duration_s > trigger)
        if growing and n <= self._executors:
            n = self._executors + 1
            why = (f"backlog grew {window[0].backlog} -> {window[-1].backlog} over {len(window)} batches with a batch "
                   f"of {snapshot.batch_duration_s:.2f} s > the {trigger:g} s trigger: one more executor")
        details = {"demand_events": demand, "work_s_per_event": work, "fixed_s": fixed, "wanted_executors": n,
                   "utilization": snapshot.batch_duration_s / trigger if trigger > 0 else 0.0,
                   "predicted.arrival_eps": arrival_rate, "predicted.records": demand,
                   "predicted.batch_s": fixed + work * demand / max(1, n * EXECUTOR_CORES)}
        return n, details, why

    def decide(self, snapshot: Snapshot) -> Decision:
        p = self.params
        self._window.append(snapshot)
        wanted, details, why = self.wanted(snapshot)
        wanted = min(p["max_executors"], max(p["min_executors"], wanted))
        t = snapshot.time_s
        self._hold.note(t, wanted)
        current = self._executors
        if t < p["warmup_s"]:
            wanted = current
            why = f"warming up until t={p['warmup_s']:g} s ({why})"
        if wanted > current:
            self._hold.reset()
            target, reason = wanted, f"scale-out {current} -> {wanted}: {why}"
        elif wanted == current:
            self._hold.reset()
            target, reason = current, f"{current} executor(s) fit: {why}"
        else:
            target, waited = self._hold.lower(wanted, current, t)
            if target < current:
                reason = f"scale-in {current} -> {target} after {waited:.0f} s of fewer wanted: {why}"
            else:
                reason = f"{current} kept: {wanted} wanted for {waited:.0f}/{p['stabilisation_s']:g} s ({why})"
        self._executors = target
        # tasks for the slots the next batch can count on: those registered, and on a scale-in those that remain
        registered = snapshot.slots or current * EXECUTOR_CORES
        degrees = self._degrees(min(registered, target * EXECUTOR_CORES))
        return Decision(degrees, reason, executors=target, details=details)
