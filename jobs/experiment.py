"""One experiment run: replay a workload through the benchmark topology on Spark, steered live by a controller.

Flow (ARCHITECTURE steps 2-6): the replay source serves due events per micro-batch (or, with --source kafka, the
run's producer writes them into a topic when due and Spark's Kafka source reads it: jobs.kafka_feed); inside
foreachBatch (jobs.batch) each operator runs after a repartition to its current degree; after the sink has committed
the batch, the control loop (controllers.loop) takes a snapshot of Spark's metrics, asks the controller, validates its
decision and hands it to the actuators (jobs.actuators), so it is in force from the next batch on. Every batch's
metrics go to MLflow asynchronously; at the end the recording room (jobs.recording.run_record) writes the summary,
per-batch table, record of decisions and timeline, and the run ends FINISHED or FAILED with the reason.
"""
from __future__ import annotations

import json
import re
import shutil
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import controllers
from controllers.loop import ControlLoop
from controllers.placement import build_placement
from jobs.actuators import build_actuators
from jobs.actuators.placement import CANDIDATES, KeyGroupRouting
from jobs.batch import BatchProcessor, format_progress
from jobs.batch_input import ReplayAccount
from jobs.config import RunConfig
from jobs.errors import RunFailed, disk_full_reason
from jobs.keep_warm import KeepWarm
from jobs.metrics import ProgressListener
from jobs.paths import OUTPUT_MARKER
from jobs.recording.recorder import LOCAL_STATE
from jobs.recording.run_record import finish_run, open_run, record_configuration
from jobs.recording.summary import slo_out_of_reach
from jobs.stopping import RunStopped, StopSignals
from jobs.spark_session import (PACKAGES as PROJECT_PACKAGES, controller_spark_settings, package_code,
                                run_query_once, start_spark, warm_up)
from jobs.trigger_grid import anchor_at_phase_us, trigger_phase_s
from params.units import US
from workloads import Schedule


KEEP_WARM_EVENTS = 100  # what a keep-warm ping runs through the query: a few milliseconds of work per task
KEEP_WARM_CLEARANCE_S = 2.0  # beyond the trigger: no ping when a batch is due sooner (a ping took 0.6-1.2 s)


def failure_reason(exc: BaseException) -> str:
    """One line saying why a run failed. A streaming query's exception wraps the Python traceback of the
    foreachBatch function in Java text; the useful line is the innermost Python exception."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, RunStopped):
        return text
    found = re.findall(r"^((?:[A-Za-z_][\w.]*\.)?(?:RunFailed|[A-Z]\w*(?:Error|Exception)): .*)$", text, re.MULTILINE)
    inner = [line for line in found if not line.startswith(("org.", "py4j.", "pyspark.errors"))]
    line = inner[-1] if inner else f"{type(exc).__name__}: {text.splitlines()[0]}"
    explained = next((what for cause, what in _KAFKA_FAILURES.items() if cause in text), None)
    return (f"{explained} ({line.strip()})" if explained else line.strip())[:1000]


# Kafka failures whose Java text does not say what happened to the run's data
_KAFKA_FAILURES = {
    "UnknownTopicOrPartitionException": "the run's Kafka topic is no longer on the broker: it was deleted while the "
                                        "run read it",
    "OffsetOutOfRangeException": "records the query had not read yet are gone from the run's Kafka topic (deleted or "
                                 "expired by retention)",
}


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


def make_controller(config: RunConfig, schedule: Schedule, log: Callable[[str], None]) -> controllers.Controller:
    """The configured controller, bound to this run (its settings, the schedule for the oracle, a registered
    load predictor when one was loaded)."""
    controller = controllers.build_controller(config.controller, config.controller_params, config.job_query.names,
                                              config.max_degree)
    controller.bind(config.context(schedule))
    if config.predictor is not None and config.predictor.warning:
        log(f"warning: {config.predictor.warning}")
    return controller


def run_experiment(config: RunConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run one validated config end to end; returns the summary. Raises on failure (the MLflow run is FAILED)."""
    assert config.spec is not None and config.topo is not None, "validate() the config first"
    stop = StopSignals()
    stop.install()
    for warning in config.warnings:
        log(f"warning: {warning}")
    schedule = Schedule(config.spec)
    controller = make_controller(config, schedule, log)
    recorder = open_run(config, controller, log)
    output = Path(config.output_dir) if config.output_dir else LOCAL_STATE / "runs" / recorder.run_id
    spark = query = actuators = feed = None
    controller_settings = controller_spark_settings(controller)
    try:
        if output.exists():
            shutil.rmtree(output)
        (output / "sink").mkdir(parents=True)
        (output / OUTPUT_MARKER).write_text(recorder.run_id)
        record_configuration(recorder, config, controller, schedule, controller_settings, output / "artifacts")
        schedule_state = schedule.state()
        if config.source == "kafka":  # the run's topic, and its producer getting ready while Spark starts
            from jobs.kafka_feed import KafkaFeed

            feed = KafkaFeed(config.kafka_bootstrap, f"elastic-{recorder.run_id}", config.source_partitions,
                             schedule, output, log)
            recorder.log_params({"kafka_topic": feed.topic})
            feed.start_producer(output / "anchor.json", schedule_state)
        spark = start_spark(config, package_code(output / "code.zip"), controller_settings)
        stop.install()  # after PySpark's own SIGINT handler, which would raise inside a Py4J call
        sc = spark.sparkContext
        recorder.log_params({"spark.version": spark.version, "spark.default_parallelism": sc.defaultParallelism,
                             "spark.master.effective": sc.master})
        actuators = build_actuators(config, sc, controller, log)
        placement_factory = None
        if config.placement:
            actuators.placement = key_group_routing(spark, config, controller)
            placement_factory = lambda: build_placement(config.placement, config.placement_params)  # noqa: E731
        recorder.log_params({f"actuator.{a['actuator']}": "available" if a["available"] else
                             f"unavailable: {a['reason']}" for a in actuators.describe()})
        loop = ControlLoop(controller, actuators.chain)
        ship_query_module(config.query_module)
        warm_up(spark, config.spec, schedule_state, config.job_query,
                min(config.max_degree, sc.defaultParallelism), output / "warm-up", config.chain_operators)
        keep_warm = make_keep_warm(config, controller, controller_settings, spark, schedule_state, recorder,
                                   min(config.max_degree, sc.defaultParallelism))
        listener = ProgressListener()
        spark.streams.addListener(listener)
        ops = config.job_query.names
        show = (lambda row: None) if config.quiet else (lambda row: log(format_progress(row, ops)))
        # what each batch reads: the replay source writes it as it plans a batch; Spark's offset log says it for Kafka
        account = feed.account if feed is not None else ReplayAccount(schedule, output / "planned.json")
        processor = BatchProcessor(config, spark, schedule, loop, output / "sink", recorder, show, actuators,
                                   placement_factory, account)
        query = start_query(spark, config, schedule_state, processor, output, recorder.run_id, feed)
        anchor_us = start_clock(query, processor, actuators, output / "anchor.json", config.lead_in_s,
                                config.trigger_s, config.phase_s)
        recorder.log_params({"trigger_phase": config.trigger_phase,
                             "trigger_phase_s": trigger_phase_s(anchor_us, config.trigger_s)})
        log(f"streaming: {schedule.total_events} events over {config.spec.duration_s:g}s, trigger "
            f"{config.trigger_s:g}s, controller {config.controller}, initial degrees {loop.degrees}")
        with stop.deferred():
            drained, pruned = wait_for_schedule(query, processor, schedule, anchor_us / US + config.spec.duration_s,
                                                config, log, stop, keep_warm, feed)
        stop.raise_if_stopped()
        query.stop()
        exc = query.exception()
        if exc is not None:
            raise RunFailed(f"streaming query failed: {exc}")
        time.sleep(0.5)  # let the listener deliver the last progress event
        processor.close()
        if drained:  # a stream cut short (pruned, drain timeout) leaves its open windows unemitted, not half-counted
            processor.finish()
        actuators.wind_down()
        extra = {**(keep_warm.summary() if keep_warm is not None else {}),
                 **(feed.finish() if feed is not None and drained else {})}
        return finish_run(config, recorder, processor, schedule, listener.snapshot(), output, drained,
                          sc.defaultParallelism, actuators, log, pruned=pruned, extra_summary=extra)
    except BaseException as exc:
        detail = "".join(traceback.format_exception(exc))
        reason = disk_full_reason(detail, {"run's output": str(output), "artifact store": recorder.artifact_uri,
                                           "tracking store": recorder.tracking_uri.removeprefix("sqlite:///")}
                                  ) or failure_reason(exc)
        recorder.fail(reason, detail)
        exc.failure_line = reason  # what the caller prints: the one line the MLflow run records (jobs.run)
        raise
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception:
                pass
        if actuators is not None:
            actuators.stop_watching()
        if spark is not None:
            spark.stop()
        if feed is not None:
            feed.close()
        if actuators is not None:
            actuators.release_hosts()  # the workers this run added go, whatever happened


def make_keep_warm(config: RunConfig, controller: controllers.Controller, controller_settings: dict[str, str],
                   spark, schedule_state: str, recorder, degree: int = 1) -> KeepWarm | None:
    """The keep-warm pings for this run (jobs.keep_warm), or None: off by --keep-warm 0, or because the
    controller changes executors (pings would keep every executor busy, so none would ever be idle to release).
    A ping runs at `degree` (the warm-up's: the slots), so that on a cluster its tasks reach every executor's
    workers, each executor's factory timing out on its own. The run records which, as the parameter `keep_warm`."""
    if config.keep_warm_s <= 0:
        recorder.log_params({"keep_warm": "off"})
        return None
    if controller.initial_executors() is not None or \
            controller_settings.get("spark.dynamicAllocation.enabled") == "true":
        recorder.log_params({"keep_warm": "off: the controller changes executors"})
        return None
    recorder.log_params({"keep_warm": f"every {config.keep_warm_s:g} s of no batch"})
    return KeepWarm(lambda: run_query_once(spark, config.spec, schedule_state, config.job_query, degree,
                                           KEEP_WARM_EVENTS, config.chain_operators),
                    interval_s=config.keep_warm_s, clearance_s=config.trigger_s + KEEP_WARM_CLEARANCE_S)


def ship_query_module(module) -> None:
    """A user's query module is not in the code the job ships to Spark's workers (jobs.spark_session.package_code):
    its functions go by value, inside each task's closure, as cloudpickle does for code defined in __main__."""
    if module is None or module.__name__.split(".")[0] in PROJECT_PACKAGES:
        return
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)


def key_group_routing(spark, config: RunConfig, controller: controllers.Controller) -> KeyGroupRouting:
    """The placement table, with Spark's own hashes of the routing candidates (the hash its partitioner uses)."""
    from pyspark.sql import functions as F

    rows = spark.range(CANDIDATES).select(F.hash(F.col("id").cast("int")).alias("h")).collect()
    keyed = next(op.name for op in config.topo.operators if op.keyed)
    return KeyGroupRouting(config.key_groups, [r["h"] for r in rows], controller.initial_degrees()[keyed])


def start_query(spark, config: RunConfig, schedule_state: str, processor: BatchProcessor, output: Path,
                run_id: str, feed=None):
    """The streaming query: the replay source (or the run's topic) into the batch function, on the run's trigger,
    checkpointed."""
    if feed is not None:
        from jobs.kafka_input import kafka_events

        stream = kafka_events(spark, feed.bootstrap, feed.topic, config.max_events_per_batch)
    else:
        stream = replay_stream(spark, config, schedule_state, output, processor.account.planned_file)
    query = (
        stream.writeStream.foreachBatch(processor)
        .trigger(processingTime=f"{config.trigger_s} seconds")
        .option("checkpointLocation", str(output / "checkpoint"))
        .queryName(f"replay_{run_id}")
        .start()
    )
    wait_until_ready(query)
    return query


def replay_stream(spark, config: RunConfig, schedule_state: str, output: Path, planned_file: Path | None):
    """The replay source's stream: the events served when due from the anchor file on; what each batch reads is
    written to `planned_file` as the source plans it."""
    reader = (
        spark.readStream.format("workload_replay")
        .option("spec", config.spec.to_json())
        .option("schedule_state", schedule_state)
        .option("anchor_file", str(output / "anchor.json"))
        .option("partitions", str(config.source_partitions))
    )
    if planned_file is not None:
        reader = reader.option("planned_file", str(planned_file))
    if config.max_events_per_batch:  # Spark's admission control: the source reads at most this many per batch
        reader = reader.option("max_events_per_batch", str(config.max_events_per_batch))
    return reader.load()


def start_clock(query, processor: BatchProcessor, actuators, anchor_file: Path, lead_in_s: float, trigger_s: float,
                phase_s: float | None) -> int:
    """Set the run's time 0 (the anchor) a lead-in after the query is ready, and up to a trigger interval later so
    that Spark's trigger grid falls at `phase_s` on the run's clock (None: no later); the source serves events from
    it."""
    anchor_us = anchor_at_phase_us(int((time.time() + lead_in_s) * US), trigger_s, phase_s)
    actuators.anchor(anchor_us / US)
    processor.anchor_us = anchor_us
    tmp = anchor_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"anchor_us": anchor_us}))
    tmp.rename(anchor_file)  # atomic: the source never reads a half-written anchor
    return anchor_us


def wait_for_schedule(query, processor: BatchProcessor, schedule: Schedule, end_of_schedule: float,
                      config: RunConfig, log: Callable[[str], None],
                      stop: StopSignals | None = None, keep_warm: KeepWarm | None = None, feed=None
                      ) -> tuple[bool, str | None]:
    """Wait until every scheduled event is processed (drained), the drain timeout passed, or — with
    config.stop_when_slo_unreachable — the SLO target is out of reach (pruned: the reason).
    Returns (drained, pruned). A stop signal noted meanwhile raises RunStopped here, between two Spark calls."""
    while True:
        if query.awaitTermination(0.25):
            return False, None
        if stop is not None:
            stop.raise_if_stopped()
        if feed is not None:
            feed.check_producer()
        if keep_warm is not None:
            keep_warm.tick(time.time(), processor.last_batch_end, processor.batch_running, processor.next_batch_in_s())
        if config.stop_when_slo_unreachable:
            pruned = slo_out_of_reach(processor.events_recorded, processor.within_slo, schedule.total_events,
                                      config.slo_target)
            if pruned:
                log(f"stopping early (pruned): {pruned}")
                return False, pruned
        now = time.time()
        if processor.events_recorded >= schedule.total_events and now >= end_of_schedule:
            return True, None
        if now > end_of_schedule + config.drain_timeout_s:
            log(f"drain timeout: {schedule.total_events - processor.events_recorded} events still unprocessed")
            return False, None
