"""The predictor-training DAG on real Airflow and MLflow: candidates fitted on recorded runs, registered, and the
champion alias moved."""
import json

import pytest
from mlflow.tracking import MlflowClient

from tests.dags.dag_runs import EXPERIMENT, assert_state, run_dag, sqlite_uri, states, xcom

# a real Airflow run that submits no Spark job: it runs with the tests that need no Spark


def record_arrivals(uri: str, runs: int = 4, batches: int = 400) -> list[str]:
    """Finished experiment runs with per-batch arrivals, as the Spark job records them (a cycle plus noise), of two
    workloads; their ids. One batched write per run (as the job's recorder does), not 800 single ones."""
    import time

    import numpy as np
    from mlflow.entities import Metric

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    rng = np.random.default_rng(5)
    ids = []
    for r in range(runs):
        workload, period = ("cycle-a", 30) if r % 2 == 0 else ("cycle-b", 24)
        run = client.create_run(exp.experiment_id, tags={"workload": workload, "seed": str(r)}).info.run_id
        now, metrics = int(time.time() * 1000), []
        for step in range(batches):
            rate = 2000 + 1500 * np.sin(2 * np.pi * step / period) + rng.normal(0, 100)
            metrics += [Metric("batch.arrivals", float(max(0.0, rate) * 2.0), now, step),
                        Metric("batch.interval_s", 2.0, now, step)]
        for start in range(0, len(metrics), 1000):  # MLflow's limit per batch
            client.log_batch(run, metrics=metrics[start:start + 1000])
        client.set_terminated(run, "FINISHED")
        ids.append(run)
    return ids


def test_predictor_training_dag_registers_candidates_and_moves_the_champion(tmp_path):
    uri = sqlite_uri(tmp_path)
    run_ids = record_arrivals(uri)
    dataset = tmp_path / "dataset.yaml"  # recorded runs join only by explicit id; two workloads: two held-out groups
    dataset.write_text(json.dumps({"runs": run_ids}))
    result = run_dag(tmp_path / "airflow", "elastic_predictor_training",
                     {"dataset": str(dataset), "candidates": "quick"}, uri)
    assert_state(result, "success")
    for task_id in ("collect", "evaluate", "register", "choose_champion"):
        assert states(result, task_id) == {-1: "success"}, task_id
    collected = xcom(result, "collect", "return_value")
    assert sum(line.startswith("run:") for line in collected["series"]) == 4, collected
    verdict = xcom(result, "choose_champion", "return_value")
    client = MlflowClient(uri)
    versions = client.search_model_versions("name = 'load-predictor'")
    assert len(versions) == 2  # the selected model and its conformal variant
    assert verdict.startswith("champion -> version"), verdict  # a learnable cycle: a model beats the paper's OLS
    champion = client.get_model_version_by_alias("load-predictor", "champion")
    assert champion.tags["dataset"] == collected["digest"]
    [parent] = client.search_runs([client.get_experiment_by_name("load-predictors").experiment_id],
                                  "tags.kind = 'predictor-training'")
    assert parent.data.tags["champion_decision"] == verdict and f"version {champion.version}" in verdict
    assert result["links"]["choose_champion[-1]"]["MLflow run"].endswith(f"/runs/{parent.info.run_id}")
