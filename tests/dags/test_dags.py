"""The DAGs on real Airflow (dag.test(), each DAG run in its own process with its own metadata database), real
Spark (local) and real MLflow tracking and registry. A variant runs against the PostgreSQL server, as
docker-compose.yaml deploys it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from deploy.airflow_env import airflow_env
from params.run import RUN_SETTINGS
from tests.dags.run_dag import DID_NOT_RUN, task_error, task_logs
from tests.postgres import temporary_databases

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = "elastic-streaming"
pytestmark = pytest.mark.spark  # the DAGs submit real Spark jobs


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


def test_dag_files_import_cleanly_and_stay_thin(tmp_path):
    script = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(known_pools={"default_pool", "elastic_streaming_runs"})
out = {"errors": {k: v[-300:] for k, v in bag.import_errors.items()}, "warnings": [w.message for w in bag.dag_warnings],
       "heavy": [m for m in ("mlflow", "pyspark", "pandas", "sklearn", "analysis", "jobs") if m in sys.modules],
       "dags": {d.dag_id: {"owner": d.owner, "tags": sorted(d.tags), "doc": bool(d.doc_md), "schedule": str(d.schedule),
                           "catchup": d.catchup, "max_active_runs": d.max_active_runs,
                           "retries": [t.retries for t in d.tasks], "pools": sorted({t.pool for t in d.tasks}),
                           "params": {k: {"default": p.value, "schema": p.schema, "description": p.description}
                                      for k, p in d.params.items()}}
                for d in bag.dags.values()}}
print(json.dumps(out))
"""
    env = {**os.environ, **airflow_env(home=tmp_path / "airflow", tracking_uri=f"sqlite:///{tmp_path}/m.db")}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["errors"] == {} and out["warnings"] == []
    assert out["heavy"] == [], "DAG files must not import the project's heavy modules at parse time"
    assert set(out["dags"]) == {"elastic_experiment", "elastic_nightly_regression", "elastic_predictor_training",
                                "elastic_tuning"}
    for dag in out["dags"].values():
        assert dag["owner"] == "elastic-streaming" and "elastic-streaming" in dag["tags"] and dag["doc"]
        assert "elastic_streaming_runs" in dag["pools"], "streaming runs share one pool"
    nightly = out["dags"]["elastic_nightly_regression"]
    assert "0 2 * * *" in nightly["schedule"] and nightly["catchup"] is False and nightly["max_active_runs"] == 1
    training = out["dags"]["elastic_predictor_training"]
    assert "0 3 * * 0" in training["schedule"] and training["catchup"] is False and training["max_active_runs"] == 1
    # the run settings' Params are the declarations of params/run.py: same default, bounds and meaning
    experiment = out["dags"]["elastic_experiment"]["params"]
    for name in ("slo_latency_s", "slo_target"):
        declared = RUN_SETTINGS[name]
        schema = {k: v for k, v in declared.json_schema().items() if k != "description"}
        assert experiment[name] == {"default": declared.default, "schema": schema, "description": declared.doc}, name
    # the predictors' declared horizon is one micro-batch of the runs' default trigger
    from analysis.predictors.dataset import load_spec
    assert load_spec().horizon.step_s == RUN_SETTINGS["trigger_s"].default
    assert set(training["params"]) == {"dataset", "seed", "coverage", "min_improvement", "candidates"}


def test_experiment_dag_end_to_end(tmp_path):
    uri = sqlite_uri(tmp_path)
    check_experiment(run_dag(tmp_path / "airflow", "elastic_experiment", EXPERIMENT_CONF, uri), uri)


def test_invalid_params_fail_before_anything_is_submitted(tmp_path):
    uri = sqlite_uri(tmp_path)
    home = tmp_path / "airflow"
    # the Params' schema (the run settings' declared bounds, params/run.py) rejects it before a run exists
    bad_schema = run_dag(home, "elastic_experiment", {**EXPERIMENT_CONF, "slo_target": 2}, uri,
                         expect_error="ParamValidationError")
    assert bad_schema["message"].startswith("Invalid input for param slo_target: 2 is greater than the maximum"), \
        bad_schema["message"]
    # what the schema cannot know fails the validate task, every problem at once
    bad = run_dag(home, "elastic_experiment", {**EXPERIMENT_CONF, "controllers": ["static", "nope"],
                                                "spark_conn_id": "missing"}, uri)
    assert_state(bad, "failed")
    error = task_failure(bad, "validate")
    assert error.startswith("airflow.sdk.exceptions.AirflowFailException: invalid request:"), error
    assert "params.controllers[1] 'nope': unknown controller 'nope'" in error
    assert "params.spark_conn_id: no Airflow connection 'missing'" in error
    assert states(bad, "open_suite") == {-1: "upstream_failed"}
    assert states(bad, "run_case").get(0) is None, "no Spark job was submitted"
    exp = MlflowClient(uri).get_experiment_by_name(EXPERIMENT)
    assert MlflowClient(uri).search_runs([exp.experiment_id]) == [], "no MLflow run was created"


def test_a_crashing_job_fails_its_task_leaves_a_failed_run_and_promotes_nothing(tmp_path):
    uri = sqlite_uri(tmp_path)
    result = run_dag(tmp_path / "airflow", "elastic_experiment", {**EXPERIMENT_CONF, "controllers": ["static"]}, uri,
                     extra_env={"ELASTIC_FAIL_AT_BATCH": "1"})
    assert_state(result, "failed")
    [case] = [t for t in result["tasks"] if t["task_id"] == "run_case"]
    assert case["state"] == "failed" and case["try_number"] == 1, "a run that failed (exit 1) is not retried"
    assert states(result, "analyse") == {-1: "success"} and states(result, "promote") == {-1: "upstream_failed"}
    assert "the suite did not complete" in task_failure(result, "close")
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    [child] = client.search_runs([exp.experiment_id], "tags.`airflow.case` = '0'")
    assert child.info.status == "FAILED" and "induced failure" in child.data.tags["failure_reason"]
    [parent] = client.search_runs([exp.experiment_id], "tags.kind = 'experiment'")
    assert parent.info.status == "FAILED"
    assert client.search_registered_models() == [], "nothing promoted"


@pytest.fixture()
def postgres_databases():
    with temporary_databases("airflow", "mlflow") as names:
        yield [f"postgresql+psycopg2://postgres@127.0.0.1:5432/{n}" for n in names]


def test_experiment_dag_end_to_end_on_the_postgres_server(tmp_path, postgres_databases):
    """The same DAG on the servers docker-compose.yaml deploys (Airflow metadata and MLflow tracking and registry
    in PostgreSQL), with one case: the SQLite run above already shows two cases compared; this one shows every
    task, record, link and the promotion going through the server backends."""
    airflow_db, mlflow_db = postgres_databases
    MlflowClient(mlflow_db).create_experiment(EXPERIMENT, artifact_location=(tmp_path / "artifacts").as_uri())
    result = run_dag(tmp_path / "airflow", "elastic_experiment", {**EXPERIMENT_CONF, "controllers": ["static"]},
                     mlflow_db, database_url=airflow_db)
    check_experiment(result, mlflow_db, controllers=("static",))


def fabricate_suite(client: MlflowClient, experiment_id: str, metrics_by_seed: dict[int, dict]) -> str:
    parent = client.create_run(experiment_id, tags={"kind": "fabricated"}).info.run_id
    for seed, metrics in metrics_by_seed.items():
        run = client.create_run(experiment_id, tags={"mlflow.parentRunId": parent, "config": "static",
                                                     "controller": "static", "workload": "step",
                                                     "seed": str(seed)}).info.run_id
        for key, value in metrics.items():
            client.log_metric(run, key, value)
        client.set_terminated(run, "FINISHED")
    client.set_terminated(parent, "FINISHED")
    return parent


def test_nightly_fails_with_a_listing_on_a_regression_and_passes_on_identical_results(tmp_path):
    uri = sqlite_uri(tmp_path)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT).experiment_id
    suite = tmp_path / "suite.yaml"
    # two Spark runs tonight against eight fabricated ones: enough for the permutation test to call a difference
    # significant (p = 1/45 when both new runs are worse than all eight), at half the Spark runs of four against four
    suite.write_text("controllers: [static]\nworkloads: [step]\nseeds: [1, 2]\nduration_s: 4\n"
                     "slo_latency_s: 6\ntolerance: {cost_slot_seconds: 0.1, latency_p99_s: 0.2}\n")
    far_better = fabricate_suite(client, exp, {s: {"slo_attainment": 1.0, "cost_slot_seconds": 1.0 + s / 100,
                                                   "latency_p99_s": 0.1} for s in range(1, 9)})
    home = tmp_path / "airflow"
    allow = {"ELASTIC_SUITE_DIRS": str(tmp_path)}  # the deployment allows this folder besides suites/
    night = run_dag(home, "elastic_nightly_regression", {"suite": str(suite), "baseline_run_id": far_better}, uri,
                    extra_env=allow)
    assert_state(night, "failed")
    assert set(states(night, "run_case").values()) == {"success"}
    assert "REGRESSION static on step: cost_slot_seconds 1.045 ->" in task_failure(night, "compare")
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


def record_arrivals(uri: str, runs: int = 4, batches: int = 400) -> list[str]:
    """Finished experiment runs with per-batch arrivals, as the Spark job records them (a cycle plus noise), of two
    workloads; their ids."""
    import numpy as np

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    rng = np.random.default_rng(5)
    ids = []
    for r in range(runs):
        workload, period = ("cycle-a", 30) if r % 2 == 0 else ("cycle-b", 24)
        run = client.create_run(exp.experiment_id, tags={"workload": workload, "seed": str(r)}).info.run_id
        for step in range(batches):
            rate = 2000 + 1500 * np.sin(2 * np.pi * step / period) + rng.normal(0, 100)
            client.log_metric(run, "batch.arrivals", float(max(0.0, rate) * 2.0), step=step)
            client.log_metric(run, "batch.interval_s", 2.0, step=step)
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
