"""One experiment run: replay a workload through the benchmark topology on Spark, steered live by a controller.

Flow (ARCHITECTURE steps 2-6): the replay source serves due events per micro-batch; inside foreachBatch each
operator runs after a repartition to its current degree; after the sink has committed the batch, the control
loop builds a snapshot from Spark's metrics, asks the controller, validates and applies its decision, which is in
force from the next batch on. Every batch's metrics go to MLflow asynchronously; at the end the summary,
per-batch table, decision log and timeline are recorded, and the run ends FINISHED or FAILED with the reason.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

import controllers
from controllers.loop import ControlLoop
from controllers.types import Snapshot
from jobs.config import RunConfig
from jobs.metrics import OperatorStats, ProcessSampler, ProgressListener, StageTasks
from jobs.plots import timeline_png
from jobs.recorder import LOCAL_STATE, REPO_ROOT, RunRecorder, default_tracking_uri, flatten
from jobs.summary import LatencyHistogram, summarise
from jobs.topology import AGGREGATE_SCHEMA, ENRICHED_SCHEMA, PARSED_SCHEMA, Topology, make_operator
from workloads import Schedule

US = 1_000_000
PACKAGES = ("controllers", "jobs", "workloads")
OUTPUT_SCHEMAS = {"parse": PARSED_SCHEMA, "enrich": ENRICHED_SCHEMA, "window_aggregate": AGGREGATE_SCHEMA,
                  "sink": AGGREGATE_SCHEMA}


class RunFailed(RuntimeError):
    pass


def package_code(dest: Path) -> Path:
    """Zip the project's packages so Spark's Python workers (local or on a cluster) can import them."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in PACKAGES:
            for path in sorted((REPO_ROOT / pkg).rglob("*")):
                if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(REPO_ROOT))
    return dest


def spark_settings(config: RunConfig) -> dict[str, str]:
    """Settings the measurements depend on; recorded with the run."""
    return {
        # AQE would coalesce or split shuffle partitions and so override the controller's degrees
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": str(config.max_degree),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.python.worker.reuse": "true",
        "spark.sql.streaming.metricsEnabled": "true",
    }


def start_spark(config: RunConfig, code_zip: Path):
    # The Python workers must run this interpreter (with pyarrow, numpy) and import the project's packages,
    # including the data source planner process, which only sees PYTHONPATH and spark.submit.pyFiles.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [str(code_zip)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if (config.master or "").startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # a local run binds to loopback only
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"elastic-{config.controller}-{config.spec.name}")
    if config.master:
        builder = builder.master(config.master)
    for k, v in spark_settings(config).items():
        builder = builder.config(k, v)
    builder = builder.config("spark.submit.pyFiles", str(code_zip))
    log4j = Path(__file__).with_name("log4j2.properties")
    builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log4j.as_uri()}")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.addPyFile(str(code_zip))
    from jobs.replay_source import ReplayDataSource

    spark.dataSource.register(ReplayDataSource)
    return spark


def warm_up(spark, topology: Topology, degree: int) -> None:
    """Run the operators once on a few rows so Python workers are started before the clock starts."""
    from pyspark.sql import functions as F

    df = spark.range(0, 2000, numPartitions=degree).select(
        F.col("id").alias("event_id"),
        F.timestamp_seconds(F.lit(0)).alias("arrival_ts"),
        (F.col("id") % 10).cast("int").alias("key"),
        F.lit(b"\x00" * 8).cast("binary").alias("payload"),
    )
    for op in topology.operators:
        df = df.repartition(degree).mapInArrow(make_operator(op, topology.window_s), OUTPUT_SCHEMAS[op.kind])
    df.write.format("noop").mode("overwrite").save()


@dataclass
class BatchOutcome:
    row: dict[str, Any]
    snapshot: Snapshot


class BatchProcessor:
    """The foreachBatch function: run the operators at their current degrees, measure, decide."""

    def __init__(self, config: RunConfig, spark, schedule: Schedule, loop: ControlLoop, output: Path,
                 recorder: RunRecorder, progress: Callable[[dict], None]):
        self.config = config
        self.topology = config.topo
        self.ops = self.topology.names
        self.spark = spark
        self.schedule = schedule
        self.loop = loop
        self.anchor_us: int | None = None  # set once the query is up (schedule time 0)
        self.output = output
        self.recorder = recorder
        self.progress = progress
        self.stats = OperatorStats(spark.sparkContext, self.ops)
        self.stage_tasks = StageTasks(spark.sparkContext)
        self.sampler = ProcessSampler()
        self.sampler.sample()
        self.histogram = LatencyHistogram()
        self.within_slo = 0
        self.next_event = 0
        self.prev_end_s = None
        self.due_at_prev_end = 0
        self.rows: list[dict[str, Any]] = []
        self.startup_batches = 0
        self.first_spark_batch: int | None = None
        self.committed: dict[int, tuple[int, int]] = {}  # batch -> (first event, events read)
        self.lock = threading.Lock()

    def __call__(self, df, spark_batch_id: int) -> None:
        if self.anchor_us is None:
            # Spark always runs a first batch when a query starts, before the clock (anchor) exists. The source
            # serves no events until the anchor file is written, and the anchor is set here before that file,
            # so this batch is empty by construction: nothing to process, measure or decide.
            self.startup_batches += 1
            return
        if self.first_spark_batch is None:
            self.first_spark_batch = spark_batch_id
        # Measured batches are numbered from 0, like the plant model's: the controller sees the same ids either way.
        batch_id = spark_batch_id - self.first_spark_batch
        if self.config.fail_at_batch is not None and batch_id >= self.config.fail_at_batch:
            raise RunFailed(f"induced failure at batch {batch_id} (--fail-at-batch {self.config.fail_at_batch})")
        start = time.time()
        degrees = dict(self.loop.degrees)
        self.stats.reset()
        group = self.stage_tasks.start(spark_batch_id)
        out = df
        for op in self.topology.operators:
            d = degrees[op.name]
            out = out.repartition(d, "key") if op.keyed else out.repartition(d)
            out = out.mapInArrow(make_operator(op, self.topology.window_s, self.stats.accumulators[op.name]),
                                 OUTPUT_SCHEMAS[op.kind])
        # one folder per Spark batch id, overwritten as a whole: a batch replayed from the checkpoint rewrites
        # its own output instead of adding to it (idempotent sink)
        out.write.mode("overwrite").parquet(str(self.output / f"batch_id={spark_batch_id}"))
        end = time.time()
        self._after_batch(batch_id, spark_batch_id, start, end, degrees, group)

    def _after_batch(self, batch_id: int, spark_batch_id: int, start: float, end: float, degrees: dict[str, int],
                     group: str) -> None:
        ops = self.stats.read(degrees)
        first = self.next_event
        n = ops[0].records_in
        stop = first + n
        parse_raw, sink_raw = self.stats.raw(self.ops[0]), self.stats.raw(self.ops[-1])
        expected_id_sum = n * first + n * (n - 1) // 2
        if parse_raw[3] != expected_id_sum:
            raise RunFailed(f"batch {batch_id}: events read are not the contiguous range [{first}, {stop})")
        self.committed[spark_batch_id] = (first, n)
        self.next_event = stop

        end_us = int(end * US) - self.anchor_us
        arrivals_us = self.schedule.arrival_us(first, stop)
        latencies = (end_us - arrivals_us) / US
        self.histogram.add(latencies)
        within = int(np.count_nonzero(latencies <= self.config.slo_latency_s))
        self.within_slo += within
        due_now = self.schedule.count_due(end_us)
        time_s = end_us / US
        interval = time_s - self.prev_end_s if self.prev_end_s is not None else end - start
        observed = self.stage_tasks.per_operator(group, self.ops)
        cpu, mem = self.sampler.sample()
        p50, p95, p99 = (np.percentile(latencies, [50, 95, 99]) if n else (None, None, None))
        snapshot = Snapshot(
            batch_id=batch_id, time_s=time_s, trigger_interval_s=self.config.trigger_s,
            batch_duration_s=end - start, interval_s=interval, arrivals=due_now - self.due_at_prev_end,
            records_read=n, backlog=due_now - stop,
            latency_p50_s=_f(p50), latency_p95_s=_f(p95), latency_p99_s=_f(p99),
            operators=ops, max_degree=self.config.max_degree, cpu_percent=cpu, memory_mb=mem,
        )
        new_degrees = self.loop.step(snapshot)
        decision = self.loop.log[-1]
        row: dict[str, Any] = {
            "batch_id": batch_id, "spark_batch_id": spark_batch_id, "start_s": start - self.anchor_us / US, "time_s": time_s,
            "batch_duration_s": end - start, "interval_s": interval, "first_event": first,
            "records_read": n, "records_out": int(sink_raw[2]), "arrivals": snapshot.arrivals,
            "backlog": snapshot.backlog, "offered_rate": snapshot.arrivals / interval if interval > 0 else None,
            "processed_rate": n / interval if interval > 0 else None,
            "latency_p50_s": _f(p50), "latency_p95_s": _f(p95), "latency_p99_s": _f(p99),
            "latency_max_s": float(latencies.max()) if n else None, "within_slo": within,
            "cpu_percent": cpu, "memory_mb": mem,
            "decision_changed": int(decision.changed), "decision_accepted": int(decision.accepted),
        }
        for op in ops:
            row[f"degree_{op.name}"] = op.degree
            row[f"tasks_{op.name}"] = observed.get(op.name, op.tasks)
            row[f"records_in_{op.name}"] = op.records_in
            row[f"records_out_{op.name}"] = op.records_out
            row[f"busy_s_{op.name}"] = op.busy_s
            row[f"span_s_{op.name}"] = op.span_s
            row[f"max_task_s_{op.name}"] = op.max_task_s
            row[f"next_degree_{op.name}"] = new_degrees[op.name]
        with self.lock:
            self.rows.append(row)
        self.prev_end_s = time_s
        self.due_at_prev_end = due_now
        self.recorder.log_metrics_async({k: v for k, v in row.items() if k not in ("batch_id", "spark_batch_id") and isinstance(v, (int, float))}, step=batch_id)
        self.progress(row)


def failure_reason(exc: BaseException) -> str:
    """One line saying why a run failed. A streaming query's exception wraps the Python traceback of the
    foreachBatch function in Java text; the useful line is the innermost Python exception."""
    text = str(exc) or type(exc).__name__
    found = re.findall(r"^((?:[A-Za-z_][\w.]*\.)?(?:RunFailed|[A-Z]\w*(?:Error|Exception)): .*)$", text, re.MULTILINE)
    inner = [line for line in found if not line.startswith(("org.", "py4j.", "pyspark.errors"))]
    line = inner[-1] if inner else f"{type(exc).__name__}: {text.splitlines()[0]}"
    return line.strip()[:1000]


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


def wait_until_ready(query, timeout_s: float = 120.0) -> None:
    """Block until the query has initialised its source and waits for data, so start-up is not measured."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        status = query.status
        if not query.isActive:
            query.awaitTermination()  # raises the query's exception
            raise RunFailed("streaming query stopped during start-up")
        if status.get("message", "").startswith("Waiting"):
            return
        time.sleep(0.05)
    raise RunFailed(f"streaming query not ready after {timeout_s:.0f}s (status: {query.status})")


def _interrupt_on_sigterm() -> None:
    """Airflow stops a task with SIGTERM: turn it into KeyboardInterrupt so the run ends FAILED, not RUNNING."""
    if threading.current_thread() is threading.main_thread():
        def handler(signum, frame):
            raise KeyboardInterrupt(f"received signal {signum}")

        signal.signal(signal.SIGTERM, handler)


def run_experiment(config: RunConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run one validated config end to end; returns the summary. Raises on failure (the MLflow run is FAILED)."""
    assert config.spec is not None and config.topo is not None, "validate() the config first"
    _interrupt_on_sigterm()
    spec, topology = config.spec, config.topo
    controller = controllers.build_controller(config.controller, config.controller_params, topology.names,
                                              config.max_degree)
    loop = ControlLoop(controller)
    schedule = Schedule(spec)
    run_name = config.run_name or f"{config.controller}-{spec.name}-seed{spec.seed}"
    tracking_uri = config.tracking_uri or default_tracking_uri()
    recorder = RunRecorder(
        tracking_uri, config.experiment, run_name,
        tags={"controller": config.controller, "workload": spec.name, "seed": str(spec.seed), **config.tags},
        parent_run_id=config.parent_run_id,
    )
    log(f"MLflow run {recorder.run_id} ({run_name}) in experiment {config.experiment!r} at {tracking_uri}")
    output = Path(config.output_dir) if config.output_dir else LOCAL_STATE / "runs" / recorder.run_id
    spark = query = None
    try:
        recorder.log_params({
            **flatten("controller", {"name": config.controller, **controller.params}),
            **flatten("workload", spec.to_dict()),
            **flatten("topology", {op.name: {"kind": op.kind, "cpu_us": op.cpu_us, "wait_us": op.wait_us}
                                   for op in topology.operators}),
            "topology.window_s": topology.window_s,
            "slo.latency_s": config.slo_latency_s, "slo.target": config.slo_target,
            "trigger_s": config.trigger_s, "max_degree": config.max_degree,
            "source_partitions": config.source_partitions, "spark.master": config.master or "(spark-submit)",
            **{f"spark.conf.{k}": v for k, v in spark_settings(config).items()},
        })
        recorder.log_dict({"controller": config.controller, "params": controller.params}, "config/controller.json")
        recorder.log_dict(spec.to_dict(), "config/workload.json")
        recorder.log_dict(topology.to_dict(), "config/topology.json")

        if output.exists():
            shutil.rmtree(output)
        (output / "sink").mkdir(parents=True)
        code_zip = package_code(output / "code.zip")
        spark = start_spark(config, code_zip)
        sc = spark.sparkContext
        recorder.log_params({"spark.version": spark.version, "spark.default_parallelism": sc.defaultParallelism,
                             "spark.master.effective": sc.master})
        warm_up(spark, topology, min(config.max_degree, sc.defaultParallelism))

        listener = ProgressListener()
        spark.streams.addListener(listener)
        ops = topology.names
        show = (lambda row: None) if config.quiet else (lambda row: log(format_progress(row, ops)))
        processor = BatchProcessor(config, spark, schedule, loop, output / "sink", recorder, show)
        anchor_file = output / "anchor.json"
        stream = (
            spark.readStream.format("workload_replay")
            .option("spec", spec.to_json())
            .option("anchor_file", str(anchor_file))
            .option("partitions", str(config.source_partitions))
            .load()
        )
        query = (
            stream.writeStream.foreachBatch(processor)
            .trigger(processingTime=f"{config.trigger_s} seconds")
            .option("checkpointLocation", str(output / "checkpoint"))
            .queryName(f"replay_{recorder.run_id}")
            .start()
        )
        wait_until_ready(query)
        anchor_us = int((time.time() + config.lead_in_s) * US)
        processor.anchor_us = anchor_us
        tmp = anchor_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"anchor_us": anchor_us}))
        tmp.rename(anchor_file)  # atomic: the source never reads a half-written anchor
        log(f"streaming: {schedule.total_events} events over {spec.duration_s:g}s, trigger {config.trigger_s:g}s, "
            f"controller {config.controller}, initial degrees {loop.degrees}")
        end_of_schedule = anchor_us / US + spec.duration_s
        drained = False
        while True:
            if query.awaitTermination(0.25):
                break
            now = time.time()
            if processor.next_event >= schedule.total_events and now >= end_of_schedule:
                drained = True
                break
            if now > end_of_schedule + config.drain_timeout_s:
                log(f"drain timeout: {schedule.total_events - processor.next_event} events still unprocessed")
                break
        query.stop()
        exc = query.exception()
        if exc is not None:
            raise RunFailed(f"streaming query failed: {exc}")
        time.sleep(0.5)  # let the listener deliver the last progress event
        return _finish(config, recorder, processor, schedule, listener, output, drained,
                       sc.defaultParallelism, log)
    except BaseException as exc:
        reason = failure_reason(exc)
        recorder.fail(reason)
        log(f"run FAILED: {reason}")
        raise
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception:
                pass
        if spark is not None:
            spark.stop()


def _verify_output(sink_dir: Path, committed: dict[int, tuple[int, int]]) -> tuple[int, int, int]:
    """Read the committed output back and check it against what each batch read: (events out, lost, duplicated).

    A batch that read events [first, first + n) must have written partials that count n events whose ids sum to
    n*first + n(n-1)/2; a count below or above is loss or duplication, a wrong sum with the right count is both.
    Folders of batches that never committed are removed, so nothing half-written is left behind."""
    events_out = lost = duplicated = 0
    for folder in sink_dir.glob("batch_id=*"):
        if int(folder.name.split("=")[1]) not in committed or not (folder / "_SUCCESS").exists():
            shutil.rmtree(folder)
    for batch_id, (first, n) in sorted(committed.items()):
        table = pq.read_table(sink_dir / f"batch_id={batch_id}", columns=["events", "event_id_sum"])
        got, id_sum = pa_sum(table, "events"), pa_sum(table, "event_id_sum")
        events_out += got
        if got < n:
            lost += n - got
        elif got > n:
            duplicated += got - n
        elif id_sum != n * first + n * (n - 1) // 2:
            lost += 1
            duplicated += 1
    return events_out, lost, duplicated


def pa_sum(table, column: str) -> int:
    return int(pc.sum(table.column(column)).as_py() or 0)


def _finish(config: RunConfig, recorder: RunRecorder, processor: BatchProcessor, schedule: Schedule,
            listener: ProgressListener, output: Path, drained: bool,
            cores: int, log: Callable[[str], None]) -> dict[str, Any]:
    rows = list(processor.rows)
    batches = pd.DataFrame(rows)
    progress = listener.snapshot()
    if len(batches):
        extra = pd.DataFrame([{"spark_batch_id": b, **v} for b, v in progress.items()]) if progress else None
        if extra is not None:
            batches = batches.merge(extra, on="spark_batch_id", how="left")
        starts = batches["start_s"].to_numpy()
        in_force = np.append(np.diff(starts), batches["batch_duration_s"].iloc[-1])
        batches["interval_in_force_s"] = in_force
    events_out, lost, duplicated = _verify_output(output / "sink", processor.committed)
    # the span in which the degrees were in force: first batch start to last batch end
    wall_s = float(batches["time_s"].iloc[-1] - batches["start_s"].iloc[0]) if len(batches) else 0.0
    summary = summarise(
        batches, processor.loop.log, processor.histogram, operators=processor.ops,
        total_scheduled=schedule.total_events, within_slo=processor.within_slo,
        slo_latency_s=config.slo_latency_s, slo_target=config.slo_target, executor_cores=cores,
        wall_s=wall_s, records_out=events_out, lost=lost, duplicated=duplicated,
    )
    summary["drained"] = float(drained)
    errors = recorder.flush()
    summary["metric_logging_errors"] = len(errors)
    recorder.log_summary(summary)

    artifacts = output / "artifacts"
    artifacts.mkdir(exist_ok=True)
    batches.to_parquet(artifacts / "batches.parquet", index=False)
    with open(artifacts / "decisions.jsonl", "w") as fh:
        for record in processor.loop.log:
            fh.write(json.dumps(record.to_dict()) + "\n")
    title = f"{config.controller} on {schedule.spec.name} (seed {schedule.spec.seed})"
    timeline_png(batches, schedule.rate_per_second(), processor.ops, config.slo_latency_s, title,
                 artifacts / "timeline.png")
    result = {"run_id": recorder.run_id, "run_name": recorder.client.get_run(recorder.run_id).info.run_name,
              "controller": config.controller, "workload": schedule.spec.name, "seed": schedule.spec.seed,
              "experiment_id": recorder.experiment_id, "tracking_uri": recorder.tracking_uri,
              "artifact_uri": recorder.artifact_uri, "status": "FINISHED", **summary}
    (artifacts / "summary.json").write_text(json.dumps(result, indent=2))
    for name in ("batches.parquet", "decisions.jsonl", "timeline.png", "summary.json"):
        recorder.log_artifact(artifacts / name)
    if errors:
        log(f"warning: {len(errors)} per-batch metric writes failed, first: {errors[0]}")
    recorder.finish()
    if config.summary_json:
        Path(config.summary_json).parent.mkdir(parents=True, exist_ok=True)
        Path(config.summary_json).write_text(json.dumps(result, indent=2))
    return result
