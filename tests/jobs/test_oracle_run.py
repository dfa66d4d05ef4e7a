"""The oracle on real Spark: calibrate the job's costs with `jobs.calibrate`, then run the oracle from the config it
wrote; it plans every batch from the schedule and the run records its calibration."""
import pytest
import json

import yaml
from mlflow.artifacts import download_artifacts

from jobs.calibrate import main as calibrate_main
from tests.support import run_cli

pytestmark = pytest.mark.spark


def test_calibrate_then_run_the_oracle(tracking_uri, mlflow_client, tmp_path, capsys):
    out = tmp_path / "oracle.yaml"
    code = calibrate_main(["--master", "local[2]", "--trigger", "1", "--duration", "14", "--peak-rate", "3000",
                           "--tracking-uri", tracking_uri, "--experiment", "it-oracle", "--out", str(out)])
    assert code == 0, capsys.readouterr().err[-3000:]
    config = yaml.safe_load(out.read_text())
    params = config["params"]
    assert config["controller"] == "oracle" and set(params["service_s"]) == {"parse", "enrich", "aggregate", "sink"}
    # enrich waits 150 us per record by design: the fit must see it as by far the most expensive operator
    assert params["service_s"]["enrich"] > 1e-4 and params["service_s"]["enrich"] == max(params["service_s"].values())
    calibration = mlflow_client.get_run(params["calibration_run"])
    assert calibration.data.tags["kind"] == "calibration" and "calibration.service_s.enrich" in calibration.data.params

    workload = tmp_path / "w.yaml"
    workload.write_text("name: step-it\nprofile: step\nparams: {low: 800, high: 3000, at_s: 6}\nduration_s: 14\n"
                        "seed: 4\n")
    proc = run_cli(["--controller-config", str(out), "--workload", str(workload), "--trigger", "1",
                    "--master", "local[2]", "--tracking-uri", tracking_uri, "--experiment", "it-oracle",
                    "--output-dir", str(tmp_path / "job")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    exp = mlflow_client.get_experiment_by_name("it-oracle")
    [run] = mlflow_client.search_runs([exp.experiment_id], "tags.controller = 'oracle'")
    assert run.info.status == "FINISHED" and run.data.params["controller.calibration_run"] == params["calibration_run"]
    assert run.data.metrics["infeasible_decisions"] == 0 and run.data.metrics["records_lost"] == 0
    path = download_artifacts(run_id=run.info.run_id, artifact_path="decisions.jsonl", tracking_uri=tracking_uri)
    decisions = [json.loads(line) for line in open(path)]
    assert decisions and all(d["reason"].startswith("least-cost vector") for d in decisions)
    # it sizes ahead of the step: a higher enrich degree once the 3000 ev/s batches are due
    assert max(d["after"]["enrich"] for d in decisions if d["time_s"] > 6) >= \
        max(d["after"]["enrich"] for d in decisions if d["time_s"] < 5)
