"""Running a DAG for a test: dag.test() in a fresh process with its own Airflow home and metadata database (SQLite
by default, the PostgreSQL server when given), and reading its outcome: states, XComs, task logs, extra links.
Shared by the DAG test modules, which are split one DAG per module so the parallel test run (pytest-xdist, one
module per worker) spreads their Spark runs over both workers."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from deploy.airflow_env import airflow_env
from tests.dags.run_dag import DID_NOT_RUN, task_error, task_logs

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = "elastic-streaming"


def run_dag(home: Path, dag_id: str, conf: dict, tracking_uri: str, database_url: str | None = None,
            extra_env: dict | None = None, expect_error: str | None = None) -> dict:
    """One DAG run through dag.test() in a fresh process: its outcome (state, tasks, XComs, links), all it logged
    ("log") and each task's log ("task_logs"). When dag.test() itself raises (the conf does not match the Params,
    say), the test fails with that error, unless it is `expect_error`: then the outcome is {"error", "message",
    "trace"} and the caller asserts on the message."""
    env = {**os.environ, **airflow_env(home=home, database_url=database_url, tracking_uri=tracking_uri,
                                       spark_master="local[2]"), **(extra_env or {})}
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "dags" / "run_dag.py"), dag_id, json.dumps(conf)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if not isinstance(result, dict) or done.returncode not in (0, DID_NOT_RUN):
        pytest.fail(f"run_dag.py {dag_id} exited {done.returncode} without an outcome"
                    f"{': ' + json.dumps(result)[-3000:] if isinstance(result, dict) else ''}\n"
                    f"--- stdout (tail)\n{done.stdout[-3000:]}\n--- stderr (tail)\n{done.stderr[-5000:]}")
    result["log"] = done.stdout + done.stderr
    if done.returncode == DID_NOT_RUN:
        if result["error"] != expect_error:
            pytest.fail(f"{dag_id}: dag.test() raised {result['error']}: {result['message']}\n{result['trace']}")
        return result
    if expect_error is not None:
        pytest.fail(f"{dag_id}: expected dag.test() to raise {expect_error}, but the run went ahead and is "
                    f"{result['state']}")
    result["dag_id"], result["task_logs"] = dag_id, task_logs(done.stdout)
    return result


def failures(result: dict, tail: int = 3000) -> str:
    """Each failed task's error and the tail of its log, for an assertion message."""
    out = []
    for t in result["tasks"]:
        if t["state"] != "failed":
            continue
        key = f"{t['task_id']}[{t['map_index']}]"
        log = result["task_logs"].get(key, "")
        out.append(f"--- task {key} failed: {task_error(log) or '(no exception in its log)'}\n"
                   f"--- its log (tail):\n{log[-tail:]}")
    return "\n".join(out) or "(no task failed)"


def assert_state(result: dict, expected: str) -> None:
    assert result["state"] == expected, (f"DAG run {result['dag_id']} is {result['state']}, expected {expected}\n"
                                         f"{failures(result)}")


def task_failure(result: dict, task_id: str, map_index: int = -1) -> str:
    """The exception a failed task ended with (its full message)."""
    assert states(result, task_id).get(map_index) == "failed", f"{task_id}[{map_index}] did not fail"
    error = task_error(result["task_logs"].get(f"{task_id}[{map_index}]", ""))
    assert error, f"no exception in the log of {task_id}[{map_index}]"
    return error


def states(result: dict, task_id: str) -> dict[int, str]:
    return {t["map_index"]: t["state"] for t in result["tasks"] if t["task_id"] == task_id}


def xcom(result: dict, task_id: str, key: str, map_index: int = -1):
    return next((x["value"] for x in result["xcoms"]
                 if x["task_id"] == task_id and x["key"] == key and x["map_index"] == map_index), None)


def sqlite_uri(tmp_path: Path) -> str:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(uri).create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    return uri


# SLO 12 s: the DAG tests check that a suite runs, is analysed and promoted; with 6 s, two Spark-heavy test modules
# side by side on 2 cores left static:degree=2 at 82.5 % attainment and nothing promoted (measured)
EXPERIMENT_CONF = {"controllers": ["static", "static:degree=2"], "workloads": ["step"], "seeds": [1],
                   "duration_s": 6, "slo_latency_s": 12}


def check_experiment(result: dict, tracking_uri: str, controllers: tuple[str, ...] = ("static", "static:degree=2")
                     ) -> None:
    assert_state(result, "success")
    assert states(result, "run_case") == {i: "success" for i in range(len(controllers))}
    assert {states(result, t)[-1] for t in ("validate", "open_suite", "analyse", "promote", "close")} == {"success"}
    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    [parent] = client.search_runs([exp.experiment_id], "tags.kind = 'experiment'")
    assert parent.data.tags["airflow.dag_id"] == "elastic_experiment"
    assert parent.data.tags["airflow.run_id"] == result["run_id"] and parent.info.status == "FINISHED"
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert sorted(c.data.tags["config"] for c in children) == sorted(controllers)
    assert all(c.data.tags["airflow.run_id"] == result["run_id"] and c.info.status == "FINISHED" for c in children)
    assert "report/report.html" in {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    assert parent.data.tags["promotion.step"].startswith("step: PROMOTE static")
    assert str(client.get_model_version_by_alias("controller-for-step", "champion").version) == "1"
    # the "MLflow run" links: each case's own run, the analysis task's parent run
    by_case = {c.data.tags["airflow.case"]: c for c in children}
    for i in range(len(controllers)):
        assert xcom(result, "run_case", "mlflow_run_url", i) == (
            f"http://127.0.0.1:5000/#/experiments/{exp.experiment_id}/runs/{by_case[str(i)].info.run_id}")
    assert xcom(result, "analyse", "mlflow_run_url").endswith(f"/runs/{parent.info.run_id}")
    # ...and the buttons the Airflow UI shows, resolved through the plugin as the API server does
    last = len(controllers) - 1
    assert result["links"][f"run_case[{last}]"]["MLflow run"] == xcom(result, "run_case", "mlflow_run_url", last)
    assert result["links"]["analyse[-1]"]["MLflow run"].endswith(f"/runs/{parent.info.run_id}")
    assert not result["links"]["validate[-1]"]["MLflow run"], "no run, no link"
