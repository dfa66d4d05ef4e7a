"""The experiment job on a real Spark standalone cluster (master and workers as processes on this machine), and the
cluster's own life cycle: workers added and removed with their start-up time measured, everything stopped by id."""
import os

from tests.integration.conftest import run_cli


def test_the_job_runs_on_the_standalone_cluster_with_one_core_executors(standalone_cluster, tracking_uri,
                                                                         mlflow_client, tmp_path):
    assert [w["cores"] for w in standalone_cluster.alive_workers()] == [1, 1]
    proc = run_cli(["--master", standalone_cluster.master_url, "--controller", "static", "--param", "degree=2",
                    "--workload", "step", "--duration", "12", "--tracking-uri", tracking_uri,
                    "--experiment", "it-cluster", "--output-dir", str(tmp_path / "job"), "--quiet"], timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name("it-cluster").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["spark.master"] == standalone_cluster.master_url
    assert run.data.metrics["records_lost"] == 0 and run.data.metrics["records_duplicated"] == 0
    assert run.data.metrics["records_in"] == run.data.metrics["records_out"] > 0
    apps = standalone_cluster.state()["completedapps"]
    assert apps and apps[-1]["cores"] == 2, "the application ran on both 1-core workers"


def test_workers_are_added_and_removed_by_the_ids_the_cluster_started(standalone_cluster):
    name, took = standalone_cluster.add_worker()
    assert len(standalone_cluster.alive_workers()) == 3 and 0 < took < 90
    pid = standalone_cluster.workers[name]
    standalone_cluster.remove_worker(name)
    try:
        os.killpg(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive, "the worker's process group is gone"
    assert name not in standalone_cluster.workers
