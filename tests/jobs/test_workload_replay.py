"""Catalogue workloads replayed by the run entry point on real Spark: a real trace and a multi-stream workload
arrive in full, exactly once, and the run records the workload's plot and summary.

The expected event counts are computed here from the inputs themselves, not by the `Schedule` code that drives the
replay: the trace's `rate.csv` and raw rows read with plain pandas, the synthetic streams' declared rates integrated
by hand. What reached the sink is counted from its Parquet files, so a bug in the schedule, the source or the
run's own bookkeeping each shows. The three runs go side by side: none of these checks depends on timing."""
import json
import math

import pandas as pd
import pytest
from mlflow.artifacts import download_artifacts
from mlflow.tracking import MlflowClient

from tests.support import run_cli_together
from workloads.traces import available_traces, traces_dir

pytestmark = pytest.mark.spark

TWO_STREAMS = ("name: two-streams\nduration_s: 10\nseed: 5\narrivals: poisson\nstreams:\n"
               "  - {name: steady, profile: constant, params: {rate: 1200}, keys: {count: 100, distribution: zipf}}\n"
               "  - {name: bursty, profile: step, params: {low: 300, high: 2500, at_s: 5}, keys: {count: 50}}\n")
TRACES = {"azure-llm-conv": "azure_llm_2023_conv", "google-task-records": "google2011_task_events"}


@pytest.fixture(scope="module")
def replays(tmp_path_factory, new_tracking_uri):
    """The three replays, side by side (each its own Spark and MLflow store; nothing here depends on timing):
    name -> (summary, output folder, tracking URI)."""
    spec = tmp_path_factory.mktemp("spec") / "two.yaml"
    spec.write_text(TWO_STREAMS)
    cases = {"azure-llm-conv": ("azure-llm-conv", "--duration", "12"), "two-streams": (str(spec),),
             "google-task-records": ("google-task-records", "--duration", "8")}
    cases = {name: args for name, args in cases.items() if TRACES.get(name, "") in ("", *available_traces())}
    runs = {}
    for name in cases:
        out = tmp_path_factory.mktemp(name)
        runs[name] = (out, new_tracking_uri())
    procs = run_cli_together([
        ["--controller", "static", "--param", "degree=2", "--workload", *args, "--tracking-uri", runs[name][1],
         "--experiment", "it-workloads", "--output-dir", str(runs[name][0] / "job"),
         "--summary-json", str(runs[name][0] / "summary.json"), "--quiet"] for name, args in cases.items()],
        timeout=600)
    results = {}
    for name, proc in zip(cases, procs):
        out, uri = runs[name]
        assert proc.returncode == 0, name + ": " + proc.stdout[-3000:] + proc.stderr[-3000:]
        results[name] = (json.loads((out / "summary.json").read_text()), out, uri)
    return results


def sink_partials(out):
    return pd.read_parquet(out / "job" / "sink")


def assert_every_event_once(partials, n):
    """Events 0..n-1 each reached the sink once: their count and the sum of their ids."""
    assert partials["events"].sum() == n
    assert partials["event_id_sum"].sum() == n * (n - 1) // 2


@pytest.mark.skipif("azure_llm_2023_conv" not in available_traces(),
                    reason=f"real trace azure_llm_2023_conv not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
def test_real_trace_replays_every_event_exactly_once(replays, tmp_path):
    summary, out, tracking_uri = replays["azure-llm-conv"]
    mlflow_client = MlflowClient(tracking_uri)
    # workloads/catalogue/azure-llm-conv.yaml: the trace from its first 1 s bucket, compression 1, rate_scale 500;
    # 12 s of replay = the first 12 rows of rate.csv, each count times 500
    rate = pd.read_csv(traces_dir() / "azure_llm_2023_conv" / "rate.csv")
    expected = 500 * int(rate["events"].iloc[:12].sum())
    assert expected > 5_000
    assert summary["records_in"] == summary["records_out"] == expected
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    assert_every_event_once(sink_partials(out), expected)
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


def test_multi_stream_workload_with_poisson_arrivals(replays):
    summary, out, _ = replays["two-streams"]
    n = summary["records_in"]
    assert summary["records_out"] == n == summary["records_scheduled"]
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    partials = sink_partials(out)
    assert_every_event_once(partials, n)
    # the declared rates integrated by hand: steady 1200/s x 10 s; bursty 300/s x 5 s + 2500/s x 5 s. Poisson
    # counts: within 4 standard deviations (sqrt of the mean) of these, per stream (seeded, so not a flaky bound).
    # Streams own consecutive key ranges: steady keys 0-99, bursty keys 100-149.
    per_stream = {"steady": partials.loc[partials["key"] < 100, "events"].sum(),
                  "bursty": partials.loc[partials["key"] >= 100, "events"].sum()}
    assert partials["key"].between(0, 149).all()
    for name, mean in (("steady", 1200 * 10), ("bursty", 300 * 5 + 2500 * 5)):
        assert abs(per_stream[name] - mean) <= 4 * math.sqrt(mean), (name, per_stream[name], mean)
    # zipf keys on the steady stream: its rank-1 key (0) is the most frequent, about twice rank 2 (key 1)
    steady = partials[partials["key"] < 100].groupby("key")["events"].sum()
    assert steady.idxmax() == 0 and steady[0] > 1.5 * steady[1]


@pytest.mark.skipif("google2011_task_events" not in available_traces(),
                    reason=f"real trace google2011_task_events not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")
def test_google_task_event_rows_aggregate_per_machine(replays):
    summary, out, tracking_uri = replays["google-task-records"]
    # workloads/catalogue/google-task-records.yaml: the raw rows from trace time 3600 s (timestamps in us, origin
    # 600 s), 300x faster, only rows naming a machine; 8 s of replay = trace time [3600, 6000) s
    start_s, stop_s = 3600, 3600 + 8 * 300
    expected, machines = 0, set()
    for part in sorted((traces_dir() / "google2011_task_events" / "raw" / "task_events").glob("part-*.csv.gz")):
        rows = pd.read_csv(part, header=None, usecols=[0, 4], names=["timestamp", "machine_id"])
        t = rows["timestamp"] / 1e6 - 600
        chosen = rows[(t >= start_s) & (t < stop_s) & rows["machine_id"].notna() & (rows["machine_id"] != 0)]
        expected += len(chosen)
        machines |= set(chosen["machine_id"])
        if t.iloc[-1] >= stop_s:  # the parts are in timestamp order
            break
    assert expected > 10_000
    assert summary["records_in"] == summary["records_out"] == expected
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    run = MlflowClient(tracking_uri).get_run(summary["run_id"])
    assert run.data.params["topology.payload_format"] == "google_task_events_csv"
    # the sink holds per (window, machine) partials whose value sums come from the rows' real CPU requests
    partials = sink_partials(out)
    assert_every_event_once(partials, expected)
    assert partials["key"].nunique() == len(machines) > 100 and partials["value_sum"].sum() > 0
