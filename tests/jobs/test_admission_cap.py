"""The source's admission cap on real Spark (--max-events-per-batch, Kafka's maxOffsetsPerTrigger): no batch reads
more than the cap, the rest waits as backlog and is read later, nothing is lost or read twice."""
import pytest

from tests.support import artifact_table, only_run, run_cli

pytestmark = pytest.mark.spark


def test_no_batch_reads_more_than_the_cap_and_the_rest_is_read_later(tracking_uri, mlflow_client, tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text("name: cap-it\nduration_s: 10\nseed: 2\nprofile: constant\nparams: {rate: 1500}\n")
    proc = run_cli(["--controller", "static", "--workload", str(workload), "--max-events-per-batch", "2000",
                    "--tracking-uri", tracking_uri, "--experiment", "it-cap", "--output-dir", str(tmp_path / "job"),
                    "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = only_run(mlflow_client, "it-cap")
    m = run.data.metrics
    assert run.info.status == "FINISHED" and m["records_lost"] == 0 and m["records_duplicated"] == 0
    assert m["records_in"] == 15000 and run.data.params["max_events_per_batch"] == "2000"
    batches = artifact_table(mlflow_client, run, "batches.parquet", tmp_path)
    assert batches["records_read"].max() == 2000  # 3,000 due per 2 s batch: the cap binds
    assert batches["backlog"].max() > 0
