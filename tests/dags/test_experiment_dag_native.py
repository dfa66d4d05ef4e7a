"""A native Structured Streaming query through the experiment DAG on the embedded default (dag.test(), SQLite, real
Spark and MLflow): the case rescales it by restart, the analysis reports the restart, the promotion registers the
configuration for that query on that workload, and a production start with `--champion` gets it back. (Its own
module, so that the parallel test run puts it on a worker beside the other DAG modules' Spark runs.)"""
import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow.tracking import MlflowClient

import controllers
from jobs.run import build_parser, config_from_args
from tests.dags.dag_runs import EXPERIMENT, assert_state, run_dag, sqlite_uri, states
from workloads import Schedule, load_workload

pytestmark = pytest.mark.spark

RESCALE = "scripted:initial_degree=2,changes={3: {query: 4}}"  # one rescale by restart, 2 -> 4 partitions
NATIVE_CONF = {"controllers": [RESCALE], "workloads": ["constant"], "seeds": [2], "duration_s": 16,
               "slo_latency_s": 12, "spark_queries": ["native:windowed_count"], "include_champions": False}


def test_a_native_query_runs_rescales_reports_and_is_promoted_from_the_experiment_dag(tmp_path):
    uri = sqlite_uri(tmp_path)
    # this master's restart calibration (python -m jobs.calibrate_restart): each restart is recorded with the
    # downtime it expected
    calibration = tmp_path / "restart.yaml"
    calibration.write_text(yaml.safe_dump({"restart_cost": {"rescale_fixed_s": 2.0, "rescale_per_mb_s": 0.01,
                                                            "plain_restart_s": 1.5, "source": "test"},
                                           "measured": {"master": "local[2]"}}))
    result = run_dag(tmp_path / "airflow", "elastic_experiment", NATIVE_CONF, uri,
                     extra_env={"ELASTIC_RESTART_CALIBRATION": str(calibration)})
    assert_state(result, "success")
    assert states(result, "run_case") == {0: "success"}
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    [parent] = client.search_runs([exp.experiment_id], "tags.kind = 'experiment'")
    [child] = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    tags, metrics = child.data.tags, child.data.metrics
    assert child.info.status == "FINISHED" and tags["spark_query"] == "native:windowed_count"
    assert tags["workload"] == "constant.native-windowed_count"
    assert metrics["records_in"] == Schedule(load_workload("constant").with_overrides(duration_s=16, seed=2)
                                             ).total_events
    assert (metrics["records_lost"], metrics["records_duplicated"]) == (0, 0)
    assert metrics["restarts"] == 1 and metrics["restart_downtime_s"] > 0
    with tempfile.TemporaryDirectory() as tmp:
        restarts = pd.read_json(client.download_artifacts(child.info.run_id, "restarts.jsonl", tmp), lines=True)
        decisions = Path(client.download_artifacts(child.info.run_id, "decisions.jsonl", tmp)).read_text()
        decisions = [json.loads(line) for line in decisions.splitlines()]
        batches = pd.read_parquet(client.download_artifacts(child.info.run_id, "batches.parquet", tmp))
        report = Path(client.download_artifacts(parent.info.run_id, "report/report.html", tmp)).read_text()
    assert list(zip(restarts["from_partitions"], restarts["to_partitions"])) == [(2, 4)]
    assert restarts["repartition_s"][0] > 0 and restarts["downtime_s"][0] >= restarts["repartition_s"][0]
    assert restarts["state_mb"][0] > 0
    assert restarts["expected_downtime_s"][0] == pytest.approx(2.0 + 0.01 * restarts["state_mb"][0])
    assert metrics["restart_downtime_expected_s"] == pytest.approx(restarts["expected_downtime_s"][0])
    changed = [d for d in decisions if d["changed"]]
    assert len(changed) == 1 and changed[0]["outcomes"][0]["measured"]["to_partitions"] == 4
    assert set(batches["partitions"]) == {2, 4}  # as Spark ran them, read from its offsets log
    assert "Rescales by restart" in report and "2→4 at" in report and "s expected at" in report
    # promoted for this query on this workload; `--champion constant --spark-query ...` starts with it
    version = client.get_model_version_by_alias("controller-for-constant.native-windowed_count", "champion")
    assert version.tags["spark_query"] == "native:windowed_count"
    args = build_parser().parse_args(["--champion", "constant", "--spark-query", "native:windowed_count",
                                      "--tracking-uri", uri])
    config = config_from_args(args)
    assert (config.controller, config.workload, config.spark_query) == ("scripted", "constant",
                                                                        "native:windowed_count")
    assert controllers.config_id(config.controller, config.controller_params) == version.tags["config_id"]
    assert config.tags["champion.version"] == str(version.version)
