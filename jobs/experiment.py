"""One experiment run: replay a workload through the benchmark topology on Spark, steered live by a controller.

Flow (ARCHITECTURE steps 2-6): the replay source serves due events per micro-batch; inside foreachBatch each
operator runs after a repartition to its current degree; after the sink has committed the batch, the control
loop builds a snapshot from Spark's metrics, asks the controller, validates and applies its decision, which is in
force from the next batch on. Every batch's metrics go to MLflow asynchronously; at the end the summary,
per-batch table, decision log and timeline are recorded, and the run ends FINISHED or FAILED with the reason.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

import controllers
from controllers.loop import ControlLoop
from jobs.batch import BatchProcessor, RunFailed, format_progress
from jobs.config import RunConfig
from jobs.actuators.executors import ExecutorActuator
from jobs.actuators.hosts import HostActuator
from jobs.metrics import ProgressListener
from jobs.recording.plots import timeline_png
from jobs.recording.recorder import LOCAL_STATE, RunRecorder, default_tracking_uri, flatten
from jobs.sink_check import verify_output
from jobs.spark_session import controller_spark_settings, package_code, spark_settings, start_spark, warm_up
from jobs.recording.summary import summarise
from workloads import Schedule
from workloads.plots import workload_png

from params.units import US


def failure_reason(exc: BaseException) -> str:
    """One line saying why a run failed. A streaming query's exception wraps the Python traceback of the
    foreachBatch function in Java text; the useful line is the innermost Python exception."""
    text = str(exc) or type(exc).__name__
    found = re.findall(r"^((?:[A-Za-z_][\w.]*\.)?(?:RunFailed|[A-Z]\w*(?:Error|Exception)): .*)$", text, re.MULTILINE)
    inner = [line for line in found if not line.startswith(("org.", "py4j.", "pyspark.errors"))]
    line = inner[-1] if inner else f"{type(exc).__name__}: {text.splitlines()[0]}"
    return line.strip()[:1000]


# what says that Spark itself could not run the job (not the job's or the controller's doing): a retry may help
_INFRASTRUCTURE = re.compile(r"Java gateway process exited|Py4JNetworkError|Connection refused|SparkContext was shut "
                             r"down|Lost executor|ExecutorLostFailure|All masters are unresponsive|"
                             r"Cannot call methods on a stopped SparkContext|OutOfMemoryError: Java heap")


def is_infrastructure_failure(exc: BaseException) -> bool:
    return isinstance(exc, (ConnectionError, TimeoutError)) or bool(_INFRASTRUCTURE.search(str(exc)))


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
    predictor_tags = {}
    if config.predictor is not None:
        controller.use_predictor(config.predictor.predictor, config.predictor.warning or "")
        predictor_tags = config.predictor.tags
        if config.predictor.warning:
            log(f"warning: {config.predictor.warning}")
    elif hasattr(controller, "predictor"):
        predictor_tags = {"predictor": controller.predictor.name}
    schedule = Schedule(spec)
    if hasattr(controller, "use_schedule"):  # the oracle plans with the workload's future
        controller.use_schedule(schedule, config.trigger_s, config.slo_latency_s)
    loop = ControlLoop(controller)
    run_name = config.run_name or f"{config.controller}-{spec.name}-seed{spec.seed}"
    tracking_uri = config.tracking_uri or default_tracking_uri()
    recorder = RunRecorder(
        tracking_uri, config.experiment, run_name,
        tags={"controller": config.controller, "workload": spec.name, "seed": str(spec.seed),
              "config": controllers.config_label(config.controller, config.controller_params),
              "config_id": controllers.config_id(config.controller, config.controller_params), **predictor_tags,
              **config.tags},
        parent_run_id=config.parent_run_id,
    )
    log(f"MLflow run {recorder.run_id} ({run_name}) in experiment {config.experiment!r} at {tracking_uri}")
    output = Path(config.output_dir) if config.output_dir else LOCAL_STATE / "runs" / recorder.run_id
    spark = query = executors = hosts = None
    controller_settings = controller_spark_settings(controller)
    try:
        recorder.log_params({
            **flatten("controller", {"name": config.controller, **controller.params}),
            **flatten("workload", spec.to_dict()),
            **flatten("topology", {op.name: {"kind": op.kind, "cpu_us": op.cpu_us, "wait_us": op.wait_us}
                                   for op in topology.operators}),
            "topology.window_s": topology.window_s, "topology.payload_format": topology.payload_format,
            "slo.latency_s": config.slo_latency_s, "slo.target": config.slo_target,
            "trigger_s": config.trigger_s, "max_degree": config.max_degree,
            "source_partitions": config.source_partitions, "spark.master": config.master or "(spark-submit)",
            **{f"spark.conf.{k}": v for k, v in spark_settings(config, controller_settings).items()},
            "host_scaling": config.host_scaling, "host_provisioning_delay_s": config.host_provisioning_delay_s,
        })
        recorder.log_dict({"controller": config.controller, "params": controller.params}, "config/controller.json")
        recorder.log_dict(spec.to_dict(), "config/workload.json")
        recorder.log_dict(schedule.summary(), "config/workload_summary.json")
        recorder.log_params({"workload.total_events": schedule.total_events,
                             "workload.sha256": hashlib.sha256(spec.to_json().encode()).hexdigest()})
        recorder.log_dict(topology.to_dict(), "config/topology.json")
        if hasattr(controller, "policy"):  # a scaling policy: as the user wrote it, and as it was understood
            recorder.log_text(str(controller.params["policy"]), "config/policy.txt")
            recorder.log_dict(controller.policy.to_dict(), "config/policy.json")
            recorder.log_params({"policy.name": controller.policy.name or "(unnamed)",
                                 "policy.rules": len(controller.policy.rules)})

        if output.exists():
            shutil.rmtree(output)
        (output / "sink").mkdir(parents=True)
        recorder.log_artifact(workload_png(schedule, output / "artifacts" / "workload.png"))
        code_zip = package_code(output / "code.zip")
        spark = start_spark(config, code_zip, controller_settings)
        sc = spark.sparkContext
        recorder.log_params({"spark.version": spark.version, "spark.default_parallelism": sc.defaultParallelism,
                             "spark.master.effective": sc.master})
        if not sc.master.startswith("local"):  # executors exist: record them, and set them if the controller does
            executors = ExecutorActuator(sc)
            if config.host_scaling:
                from deploy.spark_cluster import STATE, StandaloneCluster

                cluster = StandaloneCluster.load(Path(config.cluster_state) if config.cluster_state else STATE)
                hosts = HostActuator(cluster, config.host_provisioning_delay_s, log)
            if loop.executors is not None:
                _start_executors(executors, hosts, loop.executors, log)
        schedule_state = schedule.state()
        warm_up(spark, spec.to_json(), schedule_state, topology, min(config.max_degree, sc.defaultParallelism),
                output / "warm-up")

        listener = ProgressListener()
        spark.streams.addListener(listener)
        ops = topology.names
        show = (lambda row: None) if config.quiet else (lambda row: log(format_progress(row, ops)))
        processor = BatchProcessor(config, spark, schedule, loop, output / "sink", recorder, show, executors, hosts)
        anchor_file = output / "anchor.json"
        stream = (
            spark.readStream.format("workload_replay")
            .option("spec", spec.to_json())
            .option("schedule_state", schedule_state)
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
        if executors is not None:
            executors.ledger.started_s = anchor_us / US
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
                       sc.defaultParallelism, log, executors, hosts)
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
        if executors is not None:
            executors.close()
        if spark is not None:
            spark.stop()
        if hosts is not None:
            hosts.close()  # the workers this run added go, whatever happened


def _start_executors(executors: ExecutorActuator, hosts: HostActuator | None, n: int,
                     log: Callable[[str], None], timeout_s: float = 120.0) -> None:
    """Bring the application to the controller's initial executor count before the clock starts (a standalone
    master grants every free core at first; surplus executors are killed, missing ones come from new hosts)."""
    deadline = time.monotonic() + timeout_s
    while not (active := executors.observe()):  # the first executors register shortly after the application starts
        if time.monotonic() > deadline:
            raise RunFailed(f"no executor registered within {timeout_s:.0f} s: does the cluster have a free core?")
        time.sleep(0.25)
    free = hosts.cluster.free_cores() if hosts is not None else 0
    have = len(active)
    executors.set_total(n, record=False)
    if hosts is not None and n > have:
        hosts.grow_for(n - have, free)
    try:
        active = executors.wait_for(n, timeout_s)
    except TimeoutError as exc:
        raise RunFailed(f"initial executors: {exc} (the cluster has too few free cores; add workers or use "
                        "--host-scaling)") from None
    log(f"executors: {len(active)} active ({', '.join(v.id for v in active)}), set by the controller")


def _executor_delays(executors: ExecutorActuator, timeout_s: float = 30.0) -> None:
    """Give the last executor changes time to complete (an executor decided in the last batch may register after
    the stream ended), so their delays are measured rather than reported missing."""
    deadline = time.monotonic() + timeout_s
    while executors.ledger.pending() and time.monotonic() < deadline:
        executors.observe()
        time.sleep(0.25)


def _finish(config: RunConfig, recorder: RunRecorder, processor: BatchProcessor, schedule: Schedule,
            listener: ProgressListener, output: Path, drained: bool,
            cores: int, log: Callable[[str], None], executors: ExecutorActuator | None = None,
            hosts: HostActuator | None = None) -> dict[str, Any]:
    processor.close()
    if executors is not None:
        _executor_delays(executors)
        if hosts is not None:
            hosts.release_idle()
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
    events_out, lost, duplicated = verify_output(output / "sink", processor.committed)
    shutil.rmtree(output / "warm-up", ignore_errors=True)
    # the span in which the degrees were in force: first batch start to last batch end
    wall_s = float(batches["time_s"].iloc[-1] - batches["start_s"].iloc[0]) if len(batches) else 0.0
    summary = summarise(
        batches, processor.loop.log, processor.histogram, operators=processor.ops,
        total_scheduled=schedule.total_events, within_slo=processor.within_slo,
        slo_latency_s=config.slo_latency_s, slo_target=config.slo_target, executor_cores=cores,
        wall_s=wall_s, records_out=events_out, lost=lost, duplicated=duplicated,
    )
    summary["drained"] = float(drained)
    if executors is not None:
        summary.update(executors.ledger.summary())
    if hosts is not None:
        summary.update(hosts.summary())
    errors = recorder.flush()
    summary["metric_logging_errors"] = len(errors)
    recorder.log_summary(summary)

    artifacts = output / "artifacts"
    artifacts.mkdir(exist_ok=True, parents=True)
    batches.to_parquet(artifacts / "batches.parquet", index=False)
    with open(artifacts / "decisions.jsonl", "w") as fh:
        for record in processor.loop.log:
            fh.write(json.dumps(record.to_dict()) + "\n")
    logged = ["batches.parquet", "decisions.jsonl", "timeline.png", "summary.json"]
    if executors is not None:  # each executor change with its measured delays; the executors as Spark recorded
        _write_jsonl(artifacts / "executor_changes.jsonl", [c.to_dict() for c in executors.ledger.changes])
        _write_jsonl(artifacts / "executors.jsonl", [v.__dict__ for v in executors.ledger.views.values()])
        logged += ["executor_changes.jsonl", "executors.jsonl"]
    if hosts is not None:
        _write_jsonl(artifacts / "host_events.jsonl", [e.to_dict() for e in hosts.events])
        logged.append("host_events.jsonl")
    title = f"{config.controller} on {schedule.spec.name} (seed {schedule.spec.seed})"
    timeline_png(batches, schedule.rate_per_second(), processor.ops, config.slo_latency_s, title,
                 artifacts / "timeline.png")
    result = {"run_id": recorder.run_id, "run_name": recorder.client.get_run(recorder.run_id).info.run_name,
              "controller": config.controller, "workload": schedule.spec.name, "seed": schedule.spec.seed,
              "experiment_id": recorder.experiment_id, "tracking_uri": recorder.tracking_uri,
              "artifact_uri": recorder.artifact_uri, "status": "FINISHED", **summary}
    (artifacts / "summary.json").write_text(json.dumps(result, indent=2))
    for name in logged:
        recorder.log_artifact(artifacts / name)
    if errors:
        log(f"warning: {len(errors)} per-batch metric writes failed, first: {errors[0]}")
    recorder.finish()
    if config.summary_json:
        Path(config.summary_json).parent.mkdir(parents=True, exist_ok=True)
        Path(config.summary_json).write_text(json.dumps(result, indent=2))
    return result


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")
