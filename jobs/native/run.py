"""One run of a native query: the replayed workload into the user's Structured Streaming query, its partition
count steered by a controller, each change made by restart (jobs.native.rescale), everything recorded in one MLflow
run — restarts included, each a decision in the ledger with its measured phases.

The controller sees the query as one operator, `query`, whose degree is the query's shuffle and state partitions.
Its snapshots come from the sink's measurements (latency from scheduled arrival, backlog) and Spark's progress
(state rows and memory). The operator's busy time is the batch's duration on each of its partitions (its
utilisation: batch duration ÷ interval), the project's choice for a query whose stages it does not see one by one. Decisions are taken after each batch, in Spark's stream thread; a change is carried out by
the driver's main thread, between two batches, with the source held.
"""
from __future__ import annotations

import json
import shutil
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from controllers.actuation import Outcome
from controllers.loop import ControlLoop, DecisionRecord
from controllers.restart_cost import RestartCost
from controllers.types import OperatorMetrics, Snapshot
from jobs.calibrate_restart import this_masters_restart_cost
from jobs.config import RunConfig
from jobs.errors import RunFailed
from jobs.native import checkpoint as ck
from jobs.native.progress import StateProgress
from jobs.native.query import NATIVE_OPERATOR, NativeQueryError, Workload
from jobs.native.rescale import Restart, RestartingQuery
from jobs.native.sink import NativeSink
from jobs.native.stream import start_native_stream
from jobs.paths import OUTPUT_MARKER
from jobs.recording.recorder import LOCAL_STATE
from jobs.recording.run_record import open_run, record_controller_and_workload, write_jsonl
from jobs.sink_check import committed_from_checkpoint, verify_output
from jobs.stopping import StopSignals
from params.units import US
from workloads import Schedule

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
NATIVE_SETTINGS = {
    # the state lives in RocksDB: off the JVM heap, checkpointed incrementally, and repartitionable
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
}


class PartitionsActuator:
    """Turns an accepted change of the `query` degree into a pending restart; the run's main thread carries it
    out (a restart cannot happen inside the batch that decided it) and fills in the outcome's measurements."""

    name = "partitions"

    def __init__(self, partitions: int):
        self.target = partitions
        self.pending: Outcome | None = None
        self.wake = threading.Event()

    def apply(self, record: DecisionRecord) -> Outcome | None:
        wanted = record.after[NATIVE_OPERATOR]
        if wanted == self.target:
            return None
        self.target = wanted
        outcome = Outcome(self.name, "applied", wanted, record.time_s,
                          note="by restart: stop, repartition the state, start")
        self.pending = outcome
        self.wake.set()
        return outcome

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": True, "reason": "",
                "how": "stop at a batch boundary, StreamingCheckpointManager.repartition, restart"}


def run_native(config: RunConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run a validated config whose `native_query` is set, end to end; returns the summary. Raises on failure (the
    MLflow run is FAILED with the reason)."""
    from jobs.actuators import build_actuators
    from jobs.experiment import failure_reason, make_controller, ship_query_module
    from jobs.spark_session import controller_spark_settings, package_code, start_spark

    native = config.native_query
    stop = StopSignals()
    stop.install()
    schedule = Schedule(config.spec)
    controller = make_controller(config, schedule, log)
    recorder = open_run(config, controller, log)
    output = Path(config.output_dir) if config.output_dir else LOCAL_STATE / "runs" / recorder.run_id
    spark = restarting = actuators = None
    try:
        if output.exists():
            shutil.rmtree(output)
        (output / "sink").mkdir(parents=True)
        (output / OUTPUT_MARKER).write_text(recorder.run_id)
        checkpoint = output / "checkpoint"
        ck.claim(checkpoint, native.ref)
        initial = controller.initial_degrees()[NATIVE_OPERATOR]
        record_controller_and_workload(recorder, config, controller, schedule, output / "artifacts")
        recorder.log_params({"spark_query": native.ref, "initial_partitions": initial, "state_store": ROCKSDB,
                             "spark.master": config.master or "(spark-submit)"})
        # Spark's dynamic allocation, when it is the controller, is configured at start-up like any Spark setting
        spark = start_spark(config, package_code(output / "code.zip"),
                            {**controller_spark_settings(controller), **NATIVE_SETTINGS})
        stop.install()  # after PySpark's own SIGINT handler, which would raise inside a Py4J call
        ship_query_module(native.module)
        recorder.log_params({"spark.version": spark.version, "spark.master.effective": spark.sparkContext.master})
        progress = StateProgress()
        spark.streams.addListener(progress)
        restart_cost = this_masters_restart_cost(spark.sparkContext.master)
        recorder.log_params({"restart_cost": restart_cost.source if restart_cost else "none (python -m "
                             "jobs.calibrate_restart measures it)",
                             **({f"restart_cost.{k}": v for k, v in restart_cost.to_dict().items() if k != "source"}
                                if restart_cost else {})})
        actuator = PartitionsActuator(initial)
        # executors, live, where there are any (a cluster master): set when the controller decides them
        actuators = build_actuators(config, spark.sparkContext, controller, log, degrees=actuator)
        recorder.log_params({f"actuator.{a['actuator']}": "available" if a["available"] else
                             f"unavailable: {a['reason']}" for a in actuators.describe()})
        loop = ControlLoop(controller, actuators.chain)
        run = _NativeRun(config, schedule, loop, actuator, progress, recorder, log, restart_cost,
                         actuators.executors)
        sink = NativeSink(output / "sink", checkpoint, schedule, run.after_batch)
        run.sink = sink
        workload = Workload(config.spec, schedule.state())
        anchor_file, hold_file = output / "anchor.json", output / "hold"

        def start_stream():
            return start_native_stream(spark, native, workload, sink, checkpoint, config.trigger_s, hold_file,
                                       anchor_file=anchor_file, source_partitions=config.source_partitions,
                                       max_events_per_batch=config.max_events_per_batch,
                                       name=f"native_{recorder.run_id}")

        restarting = RestartingQuery(spark, start_stream, checkpoint, hold_file, sink.wait_for_batch_after,
                                     total_events=schedule.total_events)
        restarting.start(initial)  # NativeQueryError when Spark refuses the query (jobs.native.stream)
        anchor_us = int((time.time() + config.lead_in_s) * US)
        anchor_file.with_suffix(".tmp").write_text(json.dumps({"anchor_us": anchor_us}))
        anchor_file.with_suffix(".tmp").rename(anchor_file)  # the source never reads a half-written anchor
        sink.anchor_us = run.anchor_us = anchor_us
        actuators.anchor(anchor_us / US)
        log(f"streaming: {schedule.total_events} events over {config.spec.duration_s:g}s, native query "
            f"{native.ref}, trigger {config.trigger_s:g}s, controller {config.controller}, {initial} partition(s)")
        with stop.deferred():  # a stop signal is noted, and raises between two Spark calls (jobs.stopping)
            drained = run.steer(restarting, anchor_us / US + config.spec.duration_s, stop)
        if drained:  # the windows the stream's end closed are emitted by a last batch without new data
            restarting.settle(config.trigger_s)
        restarting.stop()
        time.sleep(0.5)  # the listener's last progress event
        actuators.wind_down()
        return run.finish(output, checkpoint, drained, actuators)
    except BaseException as exc:
        reason = failure_reason(exc)
        recorder.fail(reason, "".join(traceback.format_exception(exc)))
        exc.failure_line = reason
        if isinstance(exc, NativeQueryError) and ck.last_committed(output / "checkpoint") is None:
            # Spark refused the query before its first batch: nothing of it is worth keeping but the failed run
            shutil.rmtree(output, ignore_errors=True)
        raise
    finally:
        if restarting is not None:
            try:
                restarting.stop()
            except Exception:
                pass
        if actuators is not None:
            actuators.stop_watching()
        if spark is not None:
            spark.stop()
        if actuators is not None:
            actuators.release_hosts()  # the workers this run added go, whatever happened


class _NativeRun:
    """The run's measurements and decisions between the sink (stream thread) and the main thread."""

    def __init__(self, config: RunConfig, schedule: Schedule, loop: ControlLoop, actuator: PartitionsActuator,
                 progress: StateProgress, recorder, log: Callable[[str], None],
                 restart_cost: RestartCost | None = None, executors=None):
        self.config, self.schedule, self.loop, self.actuator = config, schedule, loop, actuator
        self.progress, self.recorder, self.log = progress, recorder, log
        self.restart_cost = restart_cost  # this master's calibration: each restart's expected downtime
        self.executors = executors  # on a cluster: observed every batch, set by the loop when the controller decides
        self.sink: NativeSink | None = None
        self.anchor_us: int | None = None
        self.batch_id = 0
        self.restarts: list[dict[str, Any]] = []
        self.within_slo = 0
        self.restarting = False  # a change is pending or being carried out: the controller waits for it
        self._due_before = 0  # events due when the previous batch committed

    def after_batch(self, row: dict[str, Any]) -> None:
        """Measure the batch for the controller and let it decide (in force after a restart, if it changes)."""
        if "time_s" not in row:  # the start-up batch before the clock: nothing read, nothing to decide
            return
        lat = self.sink.latencies[-1]
        within = int(np.count_nonzero(lat <= self.config.slo_latency_s))
        self.within_slo += within
        partitions = row["partitions"]
        state = self.progress.get(row["spark_batch_id"] - 1)  # the previous batch's progress has arrived by now
        interval = row["interval_s"] or row["batch_duration_s"]
        active = self.executors.observe() if self.executors is not None else None
        op = OperatorMetrics(NATIVE_OPERATOR, partitions, row["records_read"], row["records_out"],
                             row["batch_duration_s"] * partitions, partitions, row["batch_duration_s"],
                             row["batch_duration_s"])
        snapshot = Snapshot(
            batch_id=self.batch_id, time_s=row["time_s"], trigger_interval_s=self.config.trigger_s,
            batch_duration_s=row["batch_duration_s"], interval_s=interval,
            arrivals=self._arrivals(row), records_read=row["records_read"], backlog=row["backlog"],
            latency_p50_s=row.get("latency_p50_s"), latency_p95_s=row.get("latency_p95_s"),
            latency_p99_s=row.get("latency_p99_s"), operators=(op,), max_degree=self.config.max_degree,
            executors=None if active is None else len(active),
            slots=None if active is None else sum(v.cores for v in active))
        # a controller is asked again once its last change is in force (as in the laboratory, where a change is in
        # force from the next batch): a batch run while a restart is pending still ran at the old count
        changed = False
        if not (self.restarting or self.actuator.pending is not None):
            self.loop.step(snapshot)
            changed = self.loop.log[-1].changed
        row.update({"batch_id": self.batch_id, "within_slo": within, "arrivals": snapshot.arrivals,
                    "offered_rate": snapshot.arrivals / interval if interval > 0 else 0.0,
                    f"degree_{NATIVE_OPERATOR}": partitions,  # the report's timeline reads degree_<operator>
                    **({"executors": len(active), "executor_cores": sum(v.cores for v in active),
                        "next_executors": self.loop.log[-1].executors if self.loop.log else None}
                       if active is not None else {}),
                    "next_partitions": self.loop.degrees[NATIVE_OPERATOR], "decision_changed": int(changed),
                    **({f"state_{k}": v for k, v in state.items()} if state else {})})
        self.recorder.log_metrics_async({f"batch.{k}": v for k, v in row.items()
                                         if k not in ("batch_id", "spark_batch_id", "start", "end")
                                         and isinstance(v, (int, float))}, step=self.batch_id)
        if not self.config.quiet:
            self.log(f"batch {self.batch_id:>4}  t={row['time_s']:6.1f}s  read {row['records_read']:>7}  backlog "
                     f"{row['backlog']:>7}  latency p99 {row.get('latency_p99_s') or 0:6.2f}s  partitions "
                     f"{partitions}" + (f"  -> {row['next_partitions']}" if changed else ""))
        self.batch_id += 1

    def _arrivals(self, row: dict[str, Any]) -> int:
        """Events that became due since the previous batch committed: the offered load."""
        arrivals = row["due"] - self._due_before
        self._due_before = row["due"]
        return arrivals

    def steer(self, restarting: RestartingQuery, end_of_schedule: float, stop: StopSignals) -> bool:
        """Carry out the controller's restarts until every scheduled event is committed (True) or the drain timeout
        passed (False)."""
        while True:
            self.actuator.wake.wait(0.25)
            stop.raise_if_stopped()
            query = restarting.query
            if not query.isActive:
                query.awaitTermination()
                raise RunFailed("the streaming query stopped")
            if self.actuator.pending is not None:
                self._restart(restarting)
            now = time.time()
            if self.sink.events_done >= self.schedule.total_events and now >= end_of_schedule:
                return True
            if now > end_of_schedule + self.config.drain_timeout_s:
                self.log(f"drain timeout: {self.schedule.total_events - self.sink.events_done} events unprocessed")
                return False

    def _restart(self, restarting: RestartingQuery) -> None:
        self.restarting = True
        outcome, self.actuator.pending = self.actuator.pending, None
        self.actuator.wake.clear()
        try:
            self._carry_out(restarting, outcome)
        finally:
            self.restarting = False

    def _carry_out(self, restarting: RestartingQuery, outcome: Outcome) -> None:
        target = int(outcome.requested)
        if target == restarting.partitions:
            return
        due_before = self.schedule.count_due(int(time.time() * US) - self.anchor_us)
        state_mb = float((self.progress.latest() or {}).get("state_mb", 0.0))
        restart: Restart = restarting.rescale(target)
        backlog_built = self.schedule.count_due(int(time.time() * US) - self.anchor_us) - due_before
        record = {**restart.record(), "decided_at_s": outcome.requested_s,
                  "started_at_s": restart.started_at - self.anchor_us / US, "arrived_meanwhile": backlog_built,
                  "state_mb": state_mb,
                  **({"expected_downtime_s": self.restart_cost.rescale_s(state_mb)} if self.restart_cost else {})}
        outcome.effective_s = restart.started_at + restart.downtime_s - self.anchor_us / US
        outcome.measured = record
        self.restarts.append(record)
        expected = (f", {record['expected_downtime_s']:.2f}s expected at {state_mb:.1f} MB of state"
                    if "expected_downtime_s" in record else "")
        self.log(f"restart: {restart.from_partitions} -> {restart.to_partitions} partitions, downtime "
                 f"{restart.downtime_s:.2f}s (hold {restart.hold_s:.2f}, stop {restart.stop_s:.2f}, repartition "
                 f"{restart.repartition_s:.2f}, start {restart.start_s:.2f}, first batch {restart.first_batch_s:.2f})"
                 + expected)

    def finish(self, output: Path, checkpoint: Path, drained: bool, actuators) -> dict[str, Any]:
        committed = committed_from_checkpoint(checkpoint)
        _, lost, duplicated = verify_output(output / "sink", committed, counts_events=None)
        rows = [r for r in self.sink.rows if "time_s" in r]
        lat = self.sink.all_latencies()
        events_in = int(sum(r["records_read"] for r in rows))
        p50, p95, p99 = np.percentile(lat, [50, 95, 99]) if len(lat) else (np.nan,) * 3
        spans = [(r["time_s"] - (r["interval_s"] or r["batch_duration_s"]), r["time_s"], r["partitions"])
                 for r in rows]
        summary: dict[str, Any] = {
            "latency_p50_s": float(p50), "latency_p95_s": float(p95), "latency_p99_s": float(p99),
            "slo_attainment": self.within_slo / self.schedule.total_events if self.schedule.total_events else 1.0,
            "records_in": float(events_in), "records_out": float(sum(r["records_out"] for r in rows)),
            "records_lost": float(lost), "records_duplicated": float(duplicated),
            "scaling_actions": float(len(self.restarts)), "restarts": float(len(self.restarts)),
            "restart_downtime_s": float(sum(r["downtime_s"] for r in self.restarts)),
            **({"restart_downtime_expected_s": float(sum(r["expected_downtime_s"] for r in self.restarts))}
               if self.restart_cost else {}),
            # the cost every report ranks on: a native query's stages each run one task per partition, so its
            # partitions are the task slots it asks for (the project's choice while the executors are fixed)
            "cost_slot_seconds": float(sum((b - a) * p for a, b, p in spans)),
            "drained": float(drained), "batches": float(len(rows)),
            **{k: v for k, v in actuators.summary().items() if v is not None},
        }
        executors = [(a, b, r["executor_cores"]) for (a, b, _), r in zip(spans, rows) if "executor_cores" in r]
        if executors:  # on a cluster: what the executors held, as the laboratory's runs report it
            summary["cost_executor_core_seconds"] = float(sum((b - a) * c for a, b, c in executors))
            summary["executors_mean"] = float(np.mean([r["executors"] for r in rows if "executors" in r]))
        self.recorder.flush()
        self.recorder.log_summary(summary)
        artifacts = output / "artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(artifacts / "batches.parquet", index=False)
        write_jsonl(artifacts / "decisions.jsonl", [d.to_dict() for d in self.loop.log])
        write_jsonl(artifacts / "restarts.jsonl", self.restarts)
        (artifacts / "actuators.json").write_text(json.dumps(actuators.describe(), indent=2))
        result = {"run_id": self.recorder.run_id, "controller": self.config.controller,
                  "spark_query": self.config.native_query.ref, "workload": self.config.workload_label(),
                  "seed": self.schedule.spec.seed, "tracking_uri": self.recorder.tracking_uri, "status": "FINISHED",
                  "output_dir": str(output), **summary}
        (artifacts / "summary.json").write_text(json.dumps(result, indent=2))
        for name in ("batches.parquet", "decisions.jsonl", "restarts.jsonl", "actuators.json", "summary.json"):
            self.recorder.log_artifact(artifacts / name)
        self.recorder.finish("FINISHED")
        if self.config.summary_json:
            Path(self.config.summary_json).parent.mkdir(parents=True, exist_ok=True)
            Path(self.config.summary_json).write_text(json.dumps(result, indent=2))
        return result
