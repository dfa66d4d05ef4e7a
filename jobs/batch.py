"""The foreachBatch function of an experiment run: run the operators at their current degrees, measure the batch,
hand the snapshot to the control loop.

A decision taken after batch k is in force in batch k+1: the degree actuator gives the degrees once when a batch
starts and the loop's actuators apply the answer for the next one, so no query restart is ever needed to change
parallelism. What each batch reads is told by the run's input account: a contiguous range of events from the replay
source (jobs.batch_input), offsets per partition from Kafka (jobs.kafka_input).
"""
from __future__ import annotations

import threading
from dataclasses import replace
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from controllers.loop import ControlLoop
from controllers.placement import PlacementController
from controllers.types import Snapshot, arrival_profile
from jobs.actuators import RunActuators
from jobs.actuators.placement import placement_snapshot
from jobs.batch_input import ReplayAccount
from jobs.config import RunConfig
from jobs.errors import RunFailed
from jobs.metrics import OperatorStats, PlacementStats, ProcessSampler, StageTasks
from jobs.operators import apply_query, chains
from jobs.query_runtime import QueryState, batch_context
from jobs.recording.recorder import RunRecorder
from jobs.recording.summary import LatencyHistogram
from jobs.sink import FINAL, commit_batch
from jobs.trigger_grid import batch_trigger_us
from workloads import Schedule

from params.units import US


class BatchProcessor:
    """The foreachBatch function: run the operators at their current degrees, measure, decide."""

    def __init__(self, config: RunConfig, spark, schedule: Schedule, loop: ControlLoop, output: Path,
                 recorder: RunRecorder, progress: Callable[[dict], None], actuators: RunActuators,
                 placement_factory: Callable[[], PlacementController] | None = None, account=None):
        self.config = config
        self.query = config.job_query
        self.ops = self.query.names
        self.state = QueryState(self.query)  # a stateful operator's state between batches (jobs.query_runtime)
        self.context = batch_context(config.spec, schedule.state())
        self.spark = spark
        self.schedule = schedule
        self.loop = loop
        self.anchor_us: int | None = None  # set once the query is up (schedule time 0)
        # what each batch reads: the replay source's ranges unless the run reads Kafka (jobs.kafka_input)
        self.account = account if account is not None else ReplayAccount(schedule)
        self.output = output
        self.recorder = recorder
        self.progress = progress
        self.degrees = actuators.degrees
        self.executors = actuators.executors  # on a cluster: observed every batch (set by the loop's actuators)
        self.stats = OperatorStats(spark.sparkContext, self.ops)
        self.stage_tasks = StageTasks(spark.sparkContext)
        self.sampler = ProcessSampler()
        self.sampler.sample()
        self.histogram = LatencyHistogram()
        self.within_slo = 0
        # events whose batch is fully recorded (row, decision, metrics queued): what the driver may stop on. Set last,
        # after next_event, so that stopping the query never cuts a batch between its commit and its record
        self.events_recorded = 0
        self.prev_end_s = None
        self.due_at_prev_end = 0
        # the Python workers' last activity (wall time a batch ended) and whether one runs now: jobs.keep_warm
        self.last_batch_end: float | None = None
        self.batch_running = False
        self.rows: list[dict[str, Any]] = []
        self.startup_batches = 0
        self.first_spark_batch: int | None = None
        self.committed: dict[int, Any] = {}  # batch -> what it read (jobs.batch_input, jobs.kafka_input)
        self.lock = threading.Lock()
        # a placement controller beside the parallelism one (--placement): its table, figures and record
        self.routing = actuators.placement
        self.placement_factory = placement_factory
        self.placement = placement_factory() if placement_factory is not None and self.routing is not None else None
        self.placement_stats = PlacementStats(spark.sparkContext) if self.placement is not None else None
        self.placement_log: list[dict[str, Any]] | None = [] if self.placement is not None else None
        self.keyed = next((op.name for op in self.query.operators if op.keyed), None)
        self.batch_assignment: tuple[int, ...] = ()

    def __call__(self, df, spark_batch_id: int) -> None:
        self.batch_running = True
        try:
            self._batch(df, spark_batch_id)
        finally:
            self.batch_running, self.last_batch_end = False, time.time()

    @property
    def next_event(self) -> int:
        """Events read by the batches so far."""
        return self.account.events_read

    def next_batch_in_s(self) -> float | None:
        """Seconds until the next unread event is due (None: none left), so about when the next batch runs."""
        next_us = self.account.next_arrival_us() if self.anchor_us is not None else None
        return None if next_us is None else (next_us + self.anchor_us) / US - time.time()

    def _batch(self, df, spark_batch_id: int) -> None:
        if self.anchor_us is None:
            # Spark always runs a first batch when a query starts, before the clock (anchor) exists. The source
            # serves no events until the anchor file is written, and the anchor is set here before that file,
            # so this batch is empty by construction: nothing to measure or decide. It still runs the operators
            # and the writer once, on no rows, so that the first measured batch does not pay their start-up.
            self.startup_batches += 1
            apply_query(df, self.query, self.degrees.degrees, chaining=self.config.chain_operators,
                        context=self.context, state=self.state.payload()).toArrow()
            return
        if self.first_spark_batch is None:
            self.first_spark_batch = spark_batch_id
            # the query's tasks know the clock now: an event's time in the run is its arrival less the anchor
            self.context = replace(self.context, anchor_us=self.anchor_us)
        # Measured batches are numbered from 0, like the plant model's: the controller sees the same ids either way.
        batch_id = spark_batch_id - self.first_spark_batch
        if self.config.fail_at_batch is not None and batch_id >= self.config.fail_at_batch:
            raise RunFailed(f"induced failure at batch {batch_id} (--fail-at-batch {self.config.fail_at_batch})")
        start = time.time()
        # what this batch reads is known before it runs: what the source planned at its trigger (counted now, a
        # burst's events due since then would be sized for but read by the next batch; jobs/trigger_grid.py)
        now_us = int(start * US) - self.anchor_us
        planned = self.account.planned(spark_batch_id)
        if planned is not None:
            pending, oldest_us = planned
        else:  # no plan (a processor built without one): the events due at the trigger, as the grid places it
            prev_end_us = None if self.prev_end_s is None else int(self.prev_end_s * US)
            trigger_us = batch_trigger_us(now_us, self.anchor_us, self.config.trigger_s, prev_end_us)
            pending, oldest_us = self.schedule.count_due(trigger_us) - self.next_event, self.account.next_arrival_us()
        if self.config.max_events_per_batch:  # the source's admission cap: the batch reads no more than that
            pending = min(pending, self.config.max_events_per_batch)
        # how long the oldest of them has waited: after a batch that overran its trigger, longer than one interval
        oldest_wait_s = (now_us - oldest_us) / US if pending > 0 and oldest_us is not None else None
        now_s = now_us / US
        since = self.prev_end_s if self.prev_end_s is not None else max(0.0, now_s - self.config.trigger_s)
        self.loop.at_batch_start(batch_id - 1, start - self.anchor_us / US, max(0, pending), oldest_wait_s,
                                 arrival_profile(self._due_by, since, now_s))
        degrees = self.degrees.batch_started(start - self.anchor_us / US)
        routing = self._placement_started(batch_id, degrees) if self.placement is not None else None
        self.stats.reset()
        group = self.stage_tasks.start(spark_batch_id)
        out = apply_query(df, self.query, degrees, self.stats.accumulators, self.config.chain_operators,
                          routing=routing,
                          placement_stats=self.placement_stats.accumulator if routing is not None else None,
                          context=self.context, state=self.state.payload(),
                          observations=self.stats.observations).toArrow()
        self.stats.absorb()
        raw = self.stats.raw(self.ops[0])  # the events the first operator's tasks read, and the sum of their ids
        read = self.account.read(spark_batch_id, raw[0], raw[3])
        self.account.advance(read)
        # every event up to this time has been read: what that time closed is committed with the batch
        table = self.state.after_batch(out, self.account.watermark_us(read))
        # one folder per Spark batch id, replaced as a whole: a batch replayed from the checkpoint rewrites its own
        # output instead of adding to it (idempotent sink); it records the events it stands for
        commit_batch(self.output, spark_batch_id, table, marker=read.marker())
        end = time.time()
        self._after_batch(batch_id, spark_batch_id, start, end, degrees, group, read)

    def _due_by(self, time_s: float) -> int:
        """Events due by run time `time_s` (seconds from the anchor): the arrival profiles' source."""
        return self.schedule.count_due(int(time_s * US))

    def finish(self) -> None:
        """After the stream: what the query still holds and emits at the end (windows still open), committed as
        the output's last folder."""
        if not self.state.active:
            return
        closed = self.state.flush()
        if closed is not None:
            commit_batch(self.output, FINAL, closed, marker={"first": self.next_event, "events": 0})

    def _after_batch(self, batch_id: int, spark_batch_id: int, start: float, end: float, degrees: dict[str, int],
                     group: str, read) -> None:
        ops = self.stats.read(degrees)
        n = read.events
        sink_raw = self.stats.raw(self.ops[-1])
        self.committed[spark_batch_id] = read

        end_us = int(end * US) - self.anchor_us
        arrivals_us = self.account.arrival_us(read)
        latencies = (end_us - arrivals_us) / US
        self.histogram.add(latencies)
        within = int(np.count_nonzero(latencies <= self.config.slo_latency_s))
        self.within_slo += within
        due_now = self.schedule.count_due(end_us)
        time_s = end_us / US
        interval = time_s - self.prev_end_s if self.prev_end_s is not None else end - start
        cpu, mem = self.sampler.sample()
        active = self.executors.observe() if self.executors is not None else None
        p50, p95, p99 = (np.percentile(latencies, [50, 95, 99]) if n else (None, None, None))
        snapshot = Snapshot(
            batch_id=batch_id, time_s=time_s, trigger_interval_s=self.config.trigger_s,
            batch_duration_s=end - start, interval_s=interval, arrivals=due_now - self.due_at_prev_end,
            records_read=n, backlog=self.account.backlog(due_now),
            latency_p50_s=_f(p50), latency_p95_s=_f(p95), latency_p99_s=_f(p99),
            operators=ops, max_degree=self.config.max_degree, cpu_percent=cpu, memory_mb=mem,
            cpu_cores=self.sampler.cores, executors=None if active is None else len(active),
            slots=None if active is None else sum(v.cores for v in active),
            arrival_profile=arrival_profile(self._due_by, time_s - interval, time_s),
        )
        new_degrees = self.loop.step(snapshot)  # decided, validated, applied by the actuators, recorded
        decision = self.loop.log[-1]
        row: dict[str, Any] = {
            "batch_id": batch_id, "spark_batch_id": spark_batch_id, "start_s": start - self.anchor_us / US, "time_s": time_s,
            "batch_duration_s": end - start, "interval_s": interval, "first_event": self.next_event - n,
            "records_read": n, "records_out": int(sink_raw[2]), "arrivals": snapshot.arrivals,
            "backlog": snapshot.backlog, "offered_rate": snapshot.arrivals / interval if interval > 0 else None,
            "processed_rate": n / interval if interval > 0 else None,
            "latency_p50_s": _f(p50), "latency_p95_s": _f(p95), "latency_p99_s": _f(p99),
            "latency_max_s": float(latencies.max()) if n else None, "within_slo": within,
            "cpu_percent": cpu, "memory_mb": mem,
            "decision_changed": int(decision.changed), "decision_accepted": int(decision.accepted),
        }
        if active is not None:  # what Spark ran this batch with, and what the controller asked for the next ones
            row.update({"executors": len(active), "executor_cores": sum(v.cores for v in active),
                        "next_executors": decision.executors})
        for op in ops:
            row[f"degree_{op.name}"] = op.degree
            row[f"tasks_{op.name}"] = op.tasks  # replaced by the stages' task counts once looked up
            row[f"records_in_{op.name}"] = op.records_in
            row[f"records_out_{op.name}"] = op.records_out
            row[f"busy_s_{op.name}"] = op.busy_s
            row[f"span_s_{op.name}"] = op.span_s
            row[f"max_task_s_{op.name}"] = op.max_task_s
            row[f"next_degree_{op.name}"] = new_degrees[op.name]
        if self.placement is not None:
            row.update(self._place(batch_id, time_s, interval, degrees))
        with self.lock:
            self.rows.append(row)
        self.prev_end_s = time_s
        self.due_at_prev_end = due_now
        stages_of = [tuple(op.name for op in chain)
                     for chain in chains(self.query, degrees, self.config.chain_operators)]
        self.stage_tasks.per_operator_later(group, stages_of, lambda observed: self._observed(row, observed))
        # per-batch metrics are named batch.*, apart from the run's summary metrics (latency_p99_s, records_out...)
        # that MLflow would otherwise show as the last batch's value
        self.recorder.log_metrics_async({f"batch.{k}": v for k, v in row.items()
                                         if k not in ("batch_id", "spark_batch_id") and not k.startswith("tasks_")
                                         and isinstance(v, (int, float))}, step=batch_id)
        self.progress(row)
        self.events_recorded = self.next_event

    def _placement_started(self, batch_id: int, degrees: dict[str, int]) -> list[int]:
        """The key groups' routing values for the batch starting now; a degree change of the keyed operator resets
        the table and the placement controller (its history was of partitions that are gone)."""
        assignment, reset = self.routing.batch_started(degrees[self.keyed])
        if reset:
            self.placement = self.placement_factory()
            self.placement_log.append({"batch_id": batch_id, "reset": f"{self.keyed} degree {degrees[self.keyed]}: "
                                       "table back to round robin, placement controller restarted"})
        self.batch_assignment = assignment
        self.placement_stats.reset()
        return self.routing.route_by_group()

    def _place(self, batch_id: int, time_s: float, interval: float, degrees: dict[str, int]) -> dict[str, Any]:
        """The placement controller's step after the parallelism controller's: what this batch showed of the keyed
        operator's partitions and key groups, its decision, the moves put in the table for the next batch."""
        stats = self.placement_stats.read()
        misplaced = {g: p for g, p in stats.get("where", {}).items() if p != self.batch_assignment[g]}
        if misplaced:  # the routing is exact by construction (jobs.actuators.placement): say so if it is not
            g, p = next(iter(misplaced.items()))
            raise RunFailed(f"batch {batch_id}: key group {g} ran on partition {p} (-1: on several), the placement "
                            f"table said {self.batch_assignment[g]}; {len(misplaced)} key group(s) misplaced")
        snapshot = placement_snapshot(stats, self.batch_assignment, degrees[self.keyed], time_s, interval)
        decision = self.placement.decide(snapshot)
        moved = self.routing.apply(decision)
        self.placement_log.append({"batch_id": batch_id, "time_s": time_s, "reason": decision.reason,
                                   "moves": moved, "details": dict(decision.details),
                                   "partition_busy_s": list(snapshot.latency_s)})
        busy = [b for b in snapshot.latency_s if b > 0]
        return {"placement_moves": len(moved), "slowest_partition_s": max(busy, default=0.0),
                "partition_busy_mean_s": sum(busy) / len(busy) if busy else 0.0,
                "balanced_partition_s": snapshot.balanced_busy_s()}

    def _observed(self, row: dict[str, Any], observed: dict[str, int]) -> None:
        """The number of tasks Spark ran for each operator's stage: the degree actually in force."""
        with self.lock:
            for op, tasks in observed.items():
                row[f"tasks_{op}"] = tasks
        self.recorder.log_metrics_async({f"batch.tasks_{op}": t for op, t in observed.items()}, step=row["batch_id"])

    def close(self) -> None:
        """Wait for the background lookups, so the rows are complete."""
        self.stage_tasks.wait()


def _f(x) -> float | None:
    return None if x is None else float(x)


def format_progress(row: dict[str, Any], ops: tuple[str, ...]) -> str:
    degrees = " ".join(f"{op}={row[f'degree_{op}']}" for op in ops)
    nxt = {op: row[f"next_degree_{op}"] for op in ops if row[f"next_degree_{op}"] != row[f"degree_{op}"]}
    change = ("  -> " + " ".join(f"{k}={v}" for k, v in nxt.items())) if nxt else ""
    return (
        f"batch {row['batch_id']:>4}  t={row['time_s']:6.1f}s  arrival {row['offered_rate'] or 0:8.0f}/s  "
        f"processed {row['processed_rate'] or 0:8.0f}/s  backlog {row['backlog']:>7}  "
        f"latency p50 {row['latency_p50_s'] or 0:6.2f}s p99 {row['latency_p99_s'] or 0:6.2f}s  "
        f"degrees {degrees}{change}"
    )
