"""Catalogue workloads replayed by the run entry point on real Spark: a real trace and a multi-stream workload
arrive in full, exactly once, and the run records the workload's plot and summary."""
import json

import pytest
from mlflow.artifacts import download_artifacts

from tests.support import run_cli
from workloads import Schedule, load_workload
from workloads.traces import available_traces, traces_dir

pytestmark = pytest.mark.spark


def replay(workload, tracking_uri, out, *extra):
    summary_path = out / "summary.json"
    proc = run_cli(["--controller", "static", "--param", "degree=2", "--workload", workload, *extra,
                    "--tracking-uri", tracking_uri, "--experiment", "it-workloads", "--output-dir", str(out / "job"),
                    "--summary-json", str(summary_path), "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(summary_path.read_text())


@pytest.mark.skipif("azure_llm_2023_conv" not in available_traces(),
                    reason=f"real trace azure_llm_2023_conv not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
def test_real_trace_replays_every_event_exactly_once(tracking_uri, mlflow_client, tmp_path):
    summary = replay("azure-llm-conv", tracking_uri, tmp_path, "--duration", "12")
    expected = Schedule(load_workload("azure-llm-conv").with_overrides(duration_s=12)).total_events
    assert summary["records_in"] == summary["records_out"] == expected > 5_000
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    run = mlflow_client.get_run(summary["run_id"])
    assert run.data.params["workload.trace.name"] == "azure_llm_2023_conv"
    assert len(run.data.params["workload.trace.sha256"]) == 64
    assert int(run.data.params["workload.total_events"]) == expected
    names = {a.path for a in mlflow_client.list_artifacts(summary["run_id"])}
    assert "workload.png" in names
    folder = download_artifacts(run_id=summary["run_id"], artifact_path="config", tracking_uri=tracking_uri,
                                dst_path=str(tmp_path / "dl"))
    recorded = json.loads((tmp_path / "dl" / "config" / "workload_summary.json").read_text())
    assert recorded["total_events"] == expected and folder


def test_multi_stream_workload_with_poisson_arrivals(tracking_uri, tmp_path):
    spec = tmp_path / "two.yaml"
    spec.write_text(
        "name: two-streams\nduration_s: 10\nseed: 5\narrivals: poisson\nstreams:\n"
        "  - {name: steady, profile: constant, params: {rate: 1200}, keys: {count: 100, distribution: zipf}}\n"
        "  - {name: bursty, profile: step, params: {low: 300, high: 2500, at_s: 5}, keys: {count: 50}}\n")
    summary = replay(str(spec), tracking_uri, tmp_path)
    expected = Schedule(load_workload(str(spec))).total_events
    assert summary["records_in"] == summary["records_out"] == expected
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0


@pytest.mark.skipif("google2011_task_events" not in available_traces(),
                    reason=f"real trace google2011_task_events not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
def test_google_task_event_rows_aggregate_per_machine(tracking_uri, mlflow_client, tmp_path):
    import pyarrow.parquet as pq

    summary = replay("google-task-records", tracking_uri, tmp_path, "--duration", "8")
    schedule = Schedule(load_workload("google-task-records").with_overrides(duration_s=8))
    assert summary["records_in"] == summary["records_out"] == schedule.total_events > 10_000
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    run = mlflow_client.get_run(summary["run_id"])
    assert run.data.params["topology.payload_format"] == "google_task_events_csv"
    # the sink holds per (window, machine) partials whose value sums come from the rows' real CPU requests
    out = pq.read_table(tmp_path / "job" / "sink").to_pandas()
    assert out["key"].nunique() > 100 and out["value_sum"].sum() > 0
