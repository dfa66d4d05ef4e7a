"""A placement controller beside a parallelism controller on real Spark: key groups go where the table says (the run
itself refuses a batch where one did not), moves take effect at the next batch, a degree change resets the table,
and the output stays exactly once."""
import json

import pytest
from mlflow.artifacts import download_artifacts

from tests.support import artifact_table, only_run, run_cli

pytestmark = pytest.mark.spark


def test_key_groups_move_between_partitions_live_and_nothing_is_lost(tracking_uri, mlflow_client, tmp_path):
    workload = tmp_path / "w.yaml"
    # skewed keys whose hot set moves every 8 s: partitions' loads differ and change
    workload.write_text("name: skew-it\nduration_s: 24\nseed: 5\nprofile: constant\nparams: {rate: 1500}\n"
                        "keys: {count: 500, distribution: zipf, zipf_s: 1.2, hot_key_drift_s: 8}\n")
    proc = run_cli(["--controller", "scripted", "--param", "initial_degree=1",
                    "--param", "changes={6: {aggregate: 3}}", "--workload", str(workload),
                    "--placement", "sousa-random", "--placement-param", "round_s=2",
                    "--placement-param", "seed=3", "--key-groups", "16",
                    "--tracking-uri", tracking_uri, "--experiment", "it-placement",
                    "--output-dir", str(tmp_path / "job"), "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = only_run(mlflow_client, "it-placement")
    m = run.data.metrics
    assert run.info.status == "FINISHED" and m["records_lost"] == 0 and m["records_duplicated"] == 0
    assert run.data.tags["placement"] == "sousa-random:round_s=2,seed=3"
    assert run.data.tags["config"].endswith("+sousa-random:round_s=2,seed=3")
    assert run.data.params["placement.key_groups"] == "16"
    log = [json.loads(line) for line in open(download_artifacts(
        run_id=run.info.run_id, artifact_path="placement.jsonl", tracking_uri=tracking_uri))]
    resets = [e for e in log if "reset" in e]
    assert [e["reset"].split(":")[0] for e in resets] == ["aggregate degree 3"]  # after batch 6, once
    moves = [mv for e in log for mv in e.get("moves", [])]
    assert moves and m["placement_moves"] == len(moves)
    assert all(0 <= mv["to"] < 3 and mv["from"] != mv["to"] for mv in moves)
    batches = artifact_table(mlflow_client, run, "batches.parquet", tmp_path)
    assert {"placement_moves", "slowest_partition_s"} <= set(batches.columns)
    assert m["keyed_max_task_s_mean"] == pytest.approx(batches["max_task_s_aggregate"].mean())
    assert m["keyed_max_task_s_p95"] == pytest.approx(batches["max_task_s_aggregate"].quantile(0.95))
    assert (batches["slowest_partition_s"] > 0).any()
