"""Burst sizing on real Spark: the batch that reads a burst runs with the degrees sized for it when it started."""
import json

import pandas as pd
import pytest
from mlflow.artifacts import download_artifacts

from tests.support import run_cli

pytestmark = pytest.mark.spark


def test_the_batch_that_reads_a_burst_runs_with_degrees_sized_for_it(tracking_uri, mlflow_client, tmp_path):
    workload = tmp_path / "w.yaml"
    # 600 ev/s, and at 12 s a spike of about 30,000 events within a second and a half, which one batch reads: at
    # degree 1 its stages would take about 5 s, past the 3 s catch-up budget (SLO 5 s less the 2 s trigger)
    workload.write_text("name: spike-it\nprofile: flash_crowd\nparams: {base: 600, peak: 40000, at_s: 12, "
                        "rise_s: 0.5, decay_s: 0.5}\nduration_s: 22\nseed: 4\n")
    proc = run_cli(["--controller", "ds2", "--param", "guards=true", "--param", "min_records=100",
                    "--workload", str(workload), "--tracking-uri", tracking_uri, "--experiment", "it-burst",
                    "--output-dir", str(tmp_path / "job"), "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("it-burst").experiment_id])
    m = run.data.metrics
    assert run.info.status == "FINISHED" and m["records_lost"] == 0 and m["records_duplicated"] == 0
    decisions = [json.loads(line) for line in open(download_artifacts(
        run_id=run.info.run_id, artifact_path="decisions.jsonl", tracking_uri=tracking_uri))]
    bursts = [d for d in decisions if d["reason"].startswith("at batch start: burst") and d["changed"]]
    assert bursts, [d["reason"] for d in decisions]
    assert m["batch_start_actions"] == len(bursts)
    batches = pd.read_parquet(download_artifacts(run_id=run.info.run_id, artifact_path="batches.parquet",
                                                 tracking_uri=tracking_uri)).set_index("batch_id")
    burst = bursts[0]
    raised = {op: p for op, p in burst["after"].items() if p > burst["before"][op]}
    reading = batches.loc[burst["batch_id"] + 1]  # the batch that started when the burst was sized
    # what Spark ran: the raised operators' stages had the raised task counts, in the batch that read the burst
    assert all(reading[f"tasks_{op}"] == p for op, p in raised.items()), (raised, reading.to_dict())
    assert reading["records_read"] >= 5000
    ledger = pd.read_csv(download_artifacts(run_id=run.info.run_id, artifact_path="ledger.csv",
                                            tracking_uri=tracking_uri))
    row = ledger[ledger["reason"].str.startswith("at batch start")].iloc[0]
    assert row["predicted_records"] >= 5000 and row["realised_batch_s"] > 0
