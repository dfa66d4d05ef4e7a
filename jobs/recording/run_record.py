"""What one experiment run records in MLflow, in one place: the run's identity and settings when it opens, and at
its end the summary, the per-batch table, the record of decisions and the timeline.

The record of decisions (decisions.jsonl) is written once, after the actuators have settled: every decision with
the controller's reason and details, what it asked, what was accepted and what each actuator did and when that
took effect. actuators.json says which actuators the run had on its backend, and why any was unavailable. The
decision ledger (ledger.csv, and the ledger_* summary metrics) sets each action's prediction against what followed
it (controllers/ledger.py).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

import controllers
from controllers.base import Controller
from controllers.ledger import LEDGER_COLUMNS, ledger_rows, ledger_summary
from controllers.loop import DecisionRecord
from jobs.config import RunConfig
from jobs.recording.plots import timeline_png
from jobs.recording.attempts import CASE_TAG, link_earlier_attempts
from jobs.recording.recorder import RunRecorder, default_tracking_uri, flatten, quiet_store_client_logs
from jobs.recording.summary import summarise
from jobs.sink_check import verify_output
from jobs.trigger_grid import batch_trigger_us, next_trigger_us
from params.units import US
from queries.api import describe_query
from jobs.spark_session import spark_settings
from workloads import Schedule
from workloads.plots import workload_png


def open_run(config: RunConfig, controller: Controller, log: Callable[[str], None]) -> RunRecorder:
    """The MLflow run, tagged so runs can be found by controller, workload, seed and configuration."""
    spec = config.spec
    run_name = config.run_name or f"{config.controller}-{config.workload_label()}-seed{spec.seed}"
    tracking_uri = config.tracking_uri or default_tracking_uri()
    # what the run loaded (model, version, a fallback's warning), then what the controller made of it: the name of
    # the predictor it forecasts with (AUTOSCALE: the guarded model; multilevel: its trend when the registry failed)
    predictor_tags = {**(config.predictor.tags if config.predictor is not None else {}), **controller.run_tags()}
    placed = f"+{config.placement_label()}" if config.placement else ""  # a placement controller makes another config
    recorder = RunRecorder(
        tracking_uri, config.experiment, run_name,
        tags={"controller": config.controller, "workload": config.workload_label(), "seed": str(spec.seed),
              **({"query": config.query} if config.query else {}),
              **({"spark_query": config.spark_query} if config.spark_query else {}),
              "config": controllers.config_label(config.controller, config.controller_params) + placed,
              "config_id": controllers.config_id(config.controller, config.controller_params) + placed,
              **({"placement": config.placement_label()} if config.placement else {}), **predictor_tags,
              **config.tags},
        parent_run_id=config.parent_run_id, log=log,
    )
    quiet_store_client_logs()
    case = config.tags.get(CASE_TAG)
    if config.parent_run_id and case is not None:
        retried = link_earlier_attempts(recorder.client, recorder.run_id, recorder.experiment_id,
                                        config.parent_run_id, case)
        if retried:
            log(f"a retry of case {case}: earlier attempt(s) {', '.join(retried)} (tags retry_of / retried_by)")
    log(f"MLflow run {recorder.run_id} ({run_name}) in experiment {config.experiment!r} at {tracking_uri}")
    return recorder


def record_configuration(recorder: RunRecorder, config: RunConfig, controller: Controller, schedule: Schedule,
                         controller_settings: dict[str, str], artifacts: Path) -> None:
    """Everything the run was asked to do, before it starts: parameters, workload, topology, Spark settings."""
    topology = config.topo
    recorder.log_params({
        **query_params(config),
        "source": config.source, "source_partitions": config.source_partitions,
        **({"kafka_bootstrap": config.kafka_bootstrap} if config.source == "kafka" else {}),
        "chain_operators": config.chain_operators,
        "max_events_per_batch": config.max_events_per_batch,
        "spark.master": config.master or "(spark-submit)",
        **{f"spark.conf.{k}": v for k, v in spark_settings(config, controller_settings).items()},
        "ledger_window_batches": config.ledger_window_batches,
        # what the guards size a batch with before they have measured one (jobs.cost_prior)
        "cost_prior": config.cost_prior.source if config.cost_prior is not None else "none",
        "host_scaling": config.host_scaling, "host_provisioning_delay_s": config.host_provisioning_delay_s,
    })
    if config.placement:
        recorder.log_params({**flatten("placement", {"name": config.placement, **config.placement_params}),
                             "placement.key_groups": config.key_groups})
    record_controller_and_workload(recorder, config, controller, schedule, artifacts)
    if config.query is None:
        recorder.log_dict(topology.to_dict(), "config/topology.json")
    recorder.log_dict(describe_query(config.job_query), "config/query.json")


def record_controller_and_workload(recorder: RunRecorder, config: RunConfig, controller: Controller,
                                   schedule: Schedule, artifacts: Path) -> None:
    """What every run records, a native query's too: the controller's full parameters (config/controller.json, which
    a promotion registers), the workload and its schedule, the SLO and the trigger."""
    spec = config.spec
    recorder.log_params({
        **flatten("controller", {"name": config.controller, **controller.params}),
        **flatten("workload", spec.to_dict()),
        "slo.latency_s": config.slo_latency_s, "slo.target": config.slo_target,
        "trigger_s": config.trigger_s, "max_degree": config.max_degree,
        **controller.run_params(),
    })
    recorder.log_dict({"controller": config.controller, "params": controller.params}, "config/controller.json")
    recorder.log_dict(spec.to_dict(), "config/workload.json")
    recorder.log_dict(schedule.summary(), "config/workload_summary.json")
    recorder.log_params({"workload.total_events": schedule.total_events,
                         "workload.sha256": hashlib.sha256(spec.to_json().encode()).hexdigest()})
    for name, content in controller.run_artifacts().items():
        if isinstance(content, str):
            recorder.log_text(content, name)
        else:
            recorder.log_dict(content, name)
    artifacts.mkdir(parents=True, exist_ok=True)
    recorder.log_artifact(workload_png(schedule, artifacts / "workload.png"))


def recorded_configuration(client, run_id: str, *names: str) -> dict[str, Any]:
    """{name: content} of the run's config/<name>.json artifacts as `record_configuration` wrote them (controller:
    {controller, params}; workload: the spec; topology), for re-running a recorded run elsewhere (the plant)."""
    with tempfile.TemporaryDirectory() as tmp:
        return {name: json.loads(Path(client.download_artifacts(run_id, f"config/{name}.json", tmp)).read_text())
                for name in names}


def recorded_trigger_phase(params: Mapping[str, str]) -> float | None:
    """The run's trigger phase (jobs.trigger_grid.trigger_phase_s) from its params; None for a run recorded before it
    was logged (before 2026-11-28)."""
    value = params.get("trigger_phase_s")
    return None if value is None else float(value)


def query_params(config: RunConfig) -> dict[str, Any]:
    """What the run computes: the benchmark topology's costs, or the user's query by reference and operators."""
    if config.query is None:
        topology = config.topo
        return {"query": "benchmark",
                **flatten("topology", {op.name: {"kind": op.kind, "cpu_us": op.cpu_us, "wait_us": op.wait_us}
                                       for op in topology.operators}),
                "topology.window_s": topology.window_s, "topology.payload_format": topology.payload_format}
    return {"query": config.query, **flatten("query", {op["name"]: {k: v for k, v in op.items() if k != "name"}
                                                        for op in describe_query(config.job_query)["operators"]})}


def batch_table(rows: list[dict[str, Any]], progress: dict[int, dict[str, Any]], trigger_s: float | None = None,
                anchor_us: int | None = None) -> pd.DataFrame:
    """The per-batch table: the batch function's rows joined with Spark's progress events (the listener's), and how
    long each batch's vector was in force (`interval_in_force_s`: to the next batch's start), of which
    `idle_after_s` came after the first trigger that could have run the next batch, i.e. Spark skipped triggers
    for want of data. The run's cost charges that idle time at the vector decided after the batch (what the
    controller held through the silence), not at the one the batch ran with. Without the trigger grid
    (`trigger_s`, `anchor_us`), no time counts as idle."""
    batches = pd.DataFrame(rows)
    if len(batches):
        if progress:
            extra = pd.DataFrame([{"spark_batch_id": b, **v} for b, v in progress.items()])
            batches = batches.merge(extra, on="spark_batch_id", how="left")
        starts = batches["start_s"].to_numpy()
        batches["interval_in_force_s"] = np.append(np.diff(starts), batches["batch_duration_s"].iloc[-1])
        batches["idle_after_s"] = (skipped_trigger_time(starts, batches["time_s"].to_numpy(), trigger_s, anchor_us)
                                   if trigger_s and anchor_us is not None else 0.0)
    return batches


def skipped_trigger_time(starts_s: np.ndarray, ends_s: np.ndarray, trigger_s: float, anchor_us: int) -> np.ndarray:
    """Per batch, the time from the first trigger after it that could have run the next batch (the next grid point
    after its own trigger, or its end if it overran: Spark's ProcessingTimeExecutor) to the trigger that did; 0 for
    the last batch. Triggers are placed as jobs.trigger_grid places them, from the batch function's start times: a
    batch that starts at once after an overrun but whose planning crosses a grid point is placed at that point, and
    the tenths of a second between are counted as idle (measured: 0.13 s, on one batch of a 180 s run)."""
    starts_us, ends_us = (np.round(starts_s * US)).astype(np.int64), (np.round(ends_s * US)).astype(np.int64)
    prev_ends = [None] + [int(e) for e in ends_us[:-1]]
    triggers = np.array([batch_trigger_us(int(s), anchor_us, trigger_s, p) for s, p in zip(starts_us, prev_ends)])
    first_possible = np.maximum(ends_us, next_trigger_us(triggers, anchor_us, trigger_s))
    idle = np.zeros(len(starts_us))
    idle[:-1] = np.maximum(0, triggers[1:] - first_possible[:-1]) / US
    return idle


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        for record in records:
            fh.write(json.dumps(record, default=str) + "\n")


def write_decisions(artifacts: Path, log: list[DecisionRecord], actuators: list[dict[str, Any]]) -> list[str]:
    """The record of decisions and of the run's actuators; returns the artifact names written."""
    write_jsonl(artifacts / "decisions.jsonl", [record.to_dict() for record in log])
    (artifacts / "actuators.json").write_text(json.dumps(actuators, indent=2, default=str))
    return ["decisions.jsonl", "actuators.json"]


def finish_run(config: RunConfig, recorder: RunRecorder, processor, schedule: Schedule, progress: dict,
               output: Path, drained: bool, cores: int, actuators, log: Callable[[str], None],
               pruned: str | None = None, extra_summary: dict[str, float] | None = None) -> dict[str, Any]:
    """Summarise the run, write its artifacts and end it FINISHED — or KILLED with tag `pruned` (the reason) when it
    was stopped early because its SLO target was out of reach: its figures are those of a partial run, recorded to
    show why it stopped, never compared as a complete one. Returns the summary."""
    batches = batch_table(list(processor.rows), progress, config.trigger_s, processor.anchor_us)
    events_out, lost, duplicated = verify_output(output / "sink", processor.committed, processor.query.counts_events)
    shutil.rmtree(output / "warm-up", ignore_errors=True)
    # the span in which the degrees were in force: first batch start to last batch end
    wall_s = float(batches["time_s"].iloc[-1] - batches["start_s"].iloc[0]) if len(batches) else 0.0
    decisions = processor.loop.log
    summary = summarise(
        batches, decisions, processor.histogram, operators=processor.ops,
        total_scheduled=schedule.total_events, within_slo=processor.within_slo,
        slo_latency_s=config.slo_latency_s, slo_target=config.slo_target, executor_cores=cores,
        wall_s=wall_s, records_out=events_out, lost=lost, duplicated=duplicated, keyed=processor.keyed,
    )
    summary["drained"] = float(drained)
    summary["pruned"] = float(pruned is not None)
    ledger = ledger_rows(decisions, processor.rows, config.ledger_window_batches)
    summary.update(ledger_summary(ledger))
    summary.update(actuators.summary())
    summary.update(extra_summary or {})
    errors = recorder.flush()
    summary["metric_logging_errors"] = len(errors)
    summary["metric_write_retries"] = recorder.write_retries
    summary["metric_values_unwritten"] = recorder.metrics_unwritten
    recorder.log_summary(summary)

    artifacts = output / "artifacts"
    artifacts.mkdir(exist_ok=True, parents=True)
    batches.to_parquet(artifacts / "batches.parquet", index=False)
    pd.DataFrame(ledger, columns=LEDGER_COLUMNS).to_csv(artifacts / "ledger.csv", index=False)
    logged = ["batches.parquet", "ledger.csv", "timeline.png", "summary.json"]
    logged += write_decisions(artifacts, decisions, actuators.describe())
    if processor.placement_log is not None:  # every placement decision, its moves and the table resets
        write_jsonl(artifacts / "placement.jsonl", processor.placement_log)
        logged.append("placement.jsonl")
    if actuators.executors is not None:  # the executors as Spark recorded them
        write_jsonl(artifacts / "executors.jsonl", [v.__dict__ for v in actuators.executors.ledger.views.values()])
        logged.append("executors.jsonl")
    title = f"{config.controller} on {config.workload_label()} (seed {schedule.spec.seed})"
    timeline_png(batches, schedule.rate_per_second(), processor.ops, config.slo_latency_s, title,
                 artifacts / "timeline.png")
    result = {"run_id": recorder.run_id, "run_name": recorder.client.get_run(recorder.run_id).info.run_name,
              "controller": config.controller, "workload": config.workload_label(), "seed": schedule.spec.seed,
              "experiment_id": recorder.experiment_id, "tracking_uri": recorder.tracking_uri,
              "artifact_uri": recorder.artifact_uri, "status": "KILLED" if pruned else "FINISHED", **summary}
    if pruned:
        result["pruned_reason"] = pruned
    (artifacts / "summary.json").write_text(json.dumps(result, indent=2))
    for name in logged:
        recorder.log_artifact(artifacts / name)
    if errors:
        log(f"warning: {recorder.metrics_unwritten} per-batch metric values could not be written (the run is tagged "
            f"metrics_incomplete), first error: {errors[0]}")
        recorder.set_tags({"metrics_incomplete": "true"})
    if pruned:
        recorder.set_tags({"pruned": pruned[:5000]})
    recorder.finish("KILLED" if pruned else "FINISHED")
    if config.summary_json:
        Path(config.summary_json).parent.mkdir(parents=True, exist_ok=True)
        Path(config.summary_json).write_text(json.dumps(result, indent=2))
    return result
