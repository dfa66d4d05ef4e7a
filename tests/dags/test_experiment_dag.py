"""The experiment DAG on real Airflow (dag.test()), real Spark (local) and real MLflow tracking and registry: end to
end on the servers docker-compose.yaml deploys (Airflow metadata, MLflow tracking and registry in PostgreSQL), and a
crashing job on the embedded default (SQLite). The embedded default's success path through a DAG, with Spark runs
analysed and promoted, is the tuning DAG's test (test_tuning_dag.py)."""
import pytest
from mlflow.tracking import MlflowClient

from tests.dags.dag_runs import (EXPERIMENT, EXPERIMENT_CONF, assert_state, check_experiment, run_dag, sqlite_uri,
                                 states, task_failure)
from tests.postgres import temporary_databases

pytestmark = pytest.mark.spark  # the DAG submits real Spark jobs


@pytest.fixture()
def postgres_databases():
    with temporary_databases("airflow", "mlflow") as names:
        yield [f"postgresql+psycopg2://postgres@127.0.0.1:5432/{n}" for n in names]


def test_experiment_dag_end_to_end_on_the_postgres_server(tmp_path, postgres_databases):
    """Two cases run, compared, reported and the winner promoted, with every task, record, link and the registry
    going through the server backends. (It ran on SQLite with two cases and again on the servers with one: a DAG
    run and a Spark run more, showing nothing more. SQLite's success path is the tuning DAG's test, its failure
    path the crash test below.)"""
    airflow_db, mlflow_db = postgres_databases
    MlflowClient(mlflow_db).create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    result = run_dag(tmp_path / "airflow", "elastic_experiment", EXPERIMENT_CONF, mlflow_db, database_url=airflow_db)
    check_experiment(result, mlflow_db)


def test_a_crashing_job_fails_its_task_leaves_a_failed_run_and_promotes_nothing(tmp_path):
    """The case runs a Nexmark query written with DataFrame operators (the `queries` param reaches the job: its
    first measured batch runs before the induced failure)."""
    uri = sqlite_uri(tmp_path)
    result = run_dag(tmp_path / "airflow", "elastic_experiment",
                     {**EXPERIMENT_CONF, "controllers": ["static"], "queries": ["nexmark:q2df"]}, uri,
                     extra_env={"ELASTIC_FAIL_AT_BATCH": "1"})
    assert_state(result, "failed")
    [case] = [t for t in result["tasks"] if t["task_id"] == "run_case"]
    assert case["state"] == "failed" and case["try_number"] == 1, "a run that failed (exit 1) is not retried"
    assert states(result, "analyse") == {-1: "success"} and states(result, "promote") == {-1: "upstream_failed"}
    assert "the suite did not complete" in task_failure(result, "close")
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    [child] = client.search_runs([exp.experiment_id], "tags.`airflow.case` = '0'")
    assert child.info.status == "FAILED" and "induced failure at batch 1" in child.data.tags["failure_reason"]
    assert child.data.tags["query"] == "nexmark:q2df" and child.data.tags["workload"] == "step.nexmark-q2df"
    [parent] = client.search_runs([exp.experiment_id], "tags.kind = 'experiment'")
    assert parent.info.status == "FAILED"
    assert client.search_registered_models() == [], "nothing promoted"
