"""The tuning DAG on real Airflow (dag.test()), real MLflow and real Spark (local): a tiny study screened in the
plant, its candidates confirmed on Spark, the winner promoted with its tuning provenance. Its own module, so the
parallel test run (pytest-xdist, one module per worker) runs it beside the other DAG tests. A budget too small for
one configuration is refused by the plan (tests/analysis/test_tuning_pipeline.py), which the open_suite task turns
into its failure before any submission."""
import pytest
import yaml
from mlflow.tracking import MlflowClient

from analysis.tuning.records import STUDY_KIND, tuning_experiment
from tests.analysis.test_tuning import CALIBRATION
from tests.dags.dag_runs import EXPERIMENT, assert_state, run_dag, sqlite_uri, states, xcom

pytestmark = pytest.mark.spark


def tuning_conf(tmp_path, **change) -> dict:
    calibration = tmp_path / "calibration.yaml"
    params = {k: v for k, v in CALIBRATION.items() if k != "calibration_run"}  # a hand-written one: named by its path
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": params}))
    return {"controllers": ["threshold"], "workloads": ["step"], "calibration": str(calibration), "trials": 4,
            "k": 1, "seeds": [1], "spark_minutes": 3, "duration_s": 8, "slo_latency_s": 6, **change}


def test_a_tiny_study_is_screened_confirmed_on_spark_and_its_winner_promoted_with_provenance(tmp_path):
    uri = sqlite_uri(tmp_path)
    result = run_dag(tmp_path / "airflow", "elastic_tuning", tuning_conf(tmp_path), uri)
    assert_state(result, "success")
    for task in ("validate", "screen", "open_suite", "analyse", "promote", "close"):
        assert states(result, task) == {-1: "success"}, task
    client = MlflowClient(uri)
    # the study: one run in the tuning experiment, its 4 trials nested under it, its figures
    tuning = client.get_experiment_by_name(tuning_experiment(EXPERIMENT))
    [study] = client.search_runs([tuning.experiment_id], f"tags.kind = '{STUDY_KIND}'")
    trials = client.search_runs([tuning.experiment_id], f"tags.mlflow.parentRunId = '{study.info.run_id}'")
    assert len(trials) == 4 and all(t.data.tags["tuning.study"] == study.data.tags["tuning.study"] for t in trials)
    assert {"figures/history.png", "figures/pareto.png"} <= {
        a.path for a in client.list_artifacts(study.info.run_id, "figures")}
    assert xcom(result, "screen", "mlflow_run_url").endswith(f"/runs/{study.info.run_id}")
    # the confirmation: the defaults and the best screened configuration (once if they are the same), on Spark
    exp = client.get_experiment_by_name(EXPERIMENT)
    [parent] = client.search_runs([exp.experiment_id], "tags.kind = 'tuning'")
    assert parent.info.status == "FINISHED" and parent.data.tags["tuning.calibration"] == str(tmp_path /
                                                                                             "calibration.yaml")
    cases = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert 1 <= len(cases) <= 2 and all(c.info.status == "FINISHED" for c in cases)
    assert len(states(result, "run_case")) == len(cases)
    assert {c.data.tags["tuning.role"] for c in cases} <= {"defaults", "top-1"}
    assert all(c.data.tags["tuning.study"] == study.data.tags["tuning.study"] for c in cases)
    assert "tuning/plan.json" in {a.path for a in client.list_artifacts(parent.info.run_id, "tuning")}
    # promoted, and the registry says where the configuration came from
    version = client.get_model_version_by_alias("controller-for-step", "champion")
    assert str(version.version) == "1" and version.tags["controller"] == "threshold"
    assert version.tags["tuning.study"] == study.data.tags["tuning.study"]
    assert version.tags["tuning.calibration"] == str(tmp_path / "calibration.yaml")
    assert version.tags["tuning.trial"].isdigit() and version.tags["tuning.study_run_id"] == study.info.run_id
