"""The DAG files as Airflow parses them (cleanly, thin, with the declared Params), and a trigger with bad Params
refused before anything is submitted."""
import json
import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from deploy.airflow_env import airflow_env
from params.run import RUN_SETTINGS
from tests.dags.dag_runs import (EXPERIMENT, EXPERIMENT_CONF, ROOT, assert_state, run_dag, sqlite_uri, states,
                                 task_failure)

# real Airflow runs, and no Spark job is submitted (that is the point): they run with the tests that need no Spark


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
                           "trigger_rules": {t.task_id: getattr(t.trigger_rule, "value", str(t.trigger_rule))
                                             for t in d.tasks},
                           "gated": sorted(t.task_id for t in d.tasks  # a mapped task keeps its hook in partial_kwargs
                                           if getattr((getattr(t, "partial_kwargs", None) or {}).get("pre_execute"),
                                                      "__name__", "") == "budget_gate"),
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
                                "elastic_tuning", "elastic_multilevel_benchmark"}
    for dag in out["dags"].values():
        assert dag["owner"] == "elastic-streaming" and "elastic-streaming" in dag["tags"] and dag["doc"]
        assert "elastic_streaming_runs" in dag["pools"], "streaming runs share one pool"
    for name in ("elastic_experiment", "elastic_nightly_regression", "elastic_tuning"):
        # every Spark case passes the budget gate first, and a case it skipped does not stop the promotion
        dag = out["dags"][name]
        assert dag["gated"] == ["run_case"], name
        assert dag["trigger_rules"].get("promote", "none_failed") == "none_failed", name
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
    multilevel = out["dags"]["elastic_multilevel_benchmark"]
    assert multilevel["schedule"] == "None" and multilevel["max_active_runs"] == 1
    assert {"spark_conn_id", "cluster_state", "health_threshold", "period_s", "max_executors"} <= set(
        multilevel["params"])
    # the tuning DAG's screening margin and noise default to the screening's own (the DAG file may not import them)
    from analysis.tuning.screening import NOISE_DRAWS, RECHECK_DRAWS, RELIABLE_QUANTILE, SCREEN_HEADROOM
    tuning = out["dags"]["elastic_tuning"]["params"]
    assert tuning["screen_headroom"]["default"] == SCREEN_HEADROOM
    assert tuning["recheck_draws"]["default"] == RECHECK_DRAWS
    assert (tuning["noise_draws"]["default"], tuning["noise_quantile"]["default"]) == (NOISE_DRAWS, RELIABLE_QUANTILE)


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


def test_a_suite_file_replaces_the_request_and_its_oracle_needs_a_calibration(tmp_path):
    """Param `suite` replaces the request's fields (here: include_oracle comes from the file); a suite asking for
    the oracle on a store without a calibration fails the validate task, naming why, before anything runs. (A suite
    from outside the allowed folders: tests/analysis/test_suite_request.py.)"""
    uri = sqlite_uri(tmp_path)
    suite = tmp_path / "mine.yaml"
    suite.write_text("controllers: [static]\nworkloads: [step]\ninclude_oracle: true\n")
    no_oracle = run_dag(tmp_path / "airflow", "elastic_experiment", {**EXPERIMENT_CONF, "suite": str(suite)}, uri,
                        extra_env={"ELASTIC_SUITE_DIRS": str(tmp_path)})  # the deployment allows this folder
    error = task_failure(no_oracle, "validate")
    assert f"include_oracle: no calibration in {uri}" in error and "python -m jobs.calibrate" in error, error
    assert states(no_oracle, "run_case").get(0) is None, "no Spark job was submitted"
