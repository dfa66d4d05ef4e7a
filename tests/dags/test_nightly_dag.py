"""The nightly regression DAG on real Airflow, Spark and MLflow: it fails loudly, with a listing, when tonight's runs
are worse than the baseline, and passes when they are the same."""
import time

import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from tests.dags.dag_runs import EXPERIMENT, assert_state, run_dag, sqlite_uri, states, task_failure

pytestmark = pytest.mark.spark  # the DAG submits real Spark jobs


def fabricate_suite(client: MlflowClient, experiment_id: str, metrics_by_seed: dict[int, dict]) -> str:
    """A finished suite of static-on-step runs with the given summary metrics per seed; its parent's id."""
    parent = client.create_run(experiment_id, tags={"kind": "fabricated"}).info.run_id
    now = int(time.time() * 1000)
    for seed, metrics in metrics_by_seed.items():
        run = client.create_run(experiment_id, tags={"mlflow.parentRunId": parent, "config": "static",
                                                     "controller": "static", "workload": "step",
                                                     "seed": str(seed)}).info.run_id
        client.log_batch(run, metrics=[Metric(key, value, now, 0) for key, value in metrics.items()])
        client.set_terminated(run, "FINISHED")
    client.set_terminated(parent, "FINISHED")
    return parent


def test_nightly_fails_with_a_listing_on_a_regression_and_passes_on_identical_results(tmp_path):
    uri = sqlite_uri(tmp_path)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT).experiment_id
    suite = tmp_path / "suite.yaml"
    # one Spark run tonight against 39 fabricated ones: enough for the permutation test to call a difference
    # significant (p = 1/40 when the new run is worse than all 39), at one Spark run (a Spark run in a DAG costs
    # about 45 s here; a fabricated run, milliseconds)
    suite.write_text("controllers: [static]\nworkloads: [step]\nseeds: [1]\nduration_s: 4\n"
                     "slo_latency_s: 6\ntolerance: {cost_slot_seconds: 0.1, latency_p99_s: 0.2}\n")
    far_better = fabricate_suite(client, exp, {s: {"slo_attainment": 1.0, "cost_slot_seconds": 1.0 + s / 1000,
                                                   "latency_p99_s": 0.1} for s in range(1, 40)})
    home = tmp_path / "airflow"
    allow = {"ELASTIC_SUITE_DIRS": str(tmp_path)}  # the deployment allows this folder besides suites/
    night = run_dag(home, "elastic_nightly_regression", {"suite": str(suite), "baseline_run_id": far_better}, uri,
                    extra_env=allow)
    assert_state(night, "failed")
    assert set(states(night, "run_case").values()) == {"success"}
    assert "REGRESSION static on step: cost_slot_seconds 1.02 ->" in task_failure(night, "compare")
    [tonight] = client.search_runs([exp], "tags.kind = 'nightly'")
    assert tonight.data.tags["nightly.verdict"] == "REGRESSION"
    # the same results as a baseline: nothing regressed, the re-check passes
    same = fabricate_suite(client, exp, {
        int(r.data.tags["seed"]): {k: r.data.metrics[k] for k in ("slo_attainment", "cost_slot_seconds",
                                                                  "latency_p99_s")}
        for r in client.search_runs([exp], f"tags.mlflow.parentRunId = '{tonight.info.run_id}'")})
    recheck = run_dag(home, "elastic_nightly_regression", {"suite": str(suite), "baseline_run_id": same,
                                                           "suite_run_id": tonight.info.run_id}, uri, extra_env=allow)
    assert_state(recheck, "success")
    assert states(recheck, "run_case") in ({}, {-1: "skipped"}), "a re-check runs no Spark job"
    assert client.get_run(tonight.info.run_id).data.tags["nightly.verdict"] == "pass"
