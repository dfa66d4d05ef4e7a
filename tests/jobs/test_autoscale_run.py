"""AUTOSCALE from the run entry point on real Spark, as a user runs it (the guard layer on): one decision of its own
per iteration, changes between iterations only by the guards, and a registry predictor that is not there falls back
to the paper's predictor with the reason recorded on the MLflow run."""
import pytest
import json

from mlflow.artifacts import download_artifacts

from tests.support import run_cli

pytestmark = pytest.mark.spark

PERIOD_S = 2.0


def test_autoscale_run_with_an_empty_registry_records_its_fallback(tracking_uri, mlflow_client, tmp_path):
    workload = tmp_path / "w.yaml"
    # 2 s iterations of two 1 s batches: at least 4 iterations fit in 14 s with room for a slow start
    workload.write_text("name: ramp-it\nprofile: ramp\nparams: {start: 500, end: 6000, ramp_end_s: 12}\n"
                        "duration_s: 14\nseed: 2\n")
    proc = run_cli(["--controller", "autoscale", "--param", f"period_s={PERIOD_S:g}", "--param", "predictor=registry",
                    "--workload", str(workload), "--trigger", "1", "--tracking-uri", tracking_uri,
                    "--experiment", "it-autoscale", "--output-dir", str(tmp_path / "job")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "warning: load predictor 'load-predictor' is not a registered model" in proc.stdout
    exp = mlflow_client.get_experiment_by_name("it-autoscale")
    [run] = mlflow_client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.tags["predictor"] == "paper-ols-extrapolated"
    assert "is not a registered model" in run.data.tags["predictor.warning"]
    assert run.data.params["controller.predictor"] == "registry"
    path = download_artifacts(run_id=run.info.run_id, artifact_path="decisions.jsonl", tracking_uri=tracking_uri)
    decisions = [json.loads(line) for line in open(path)]
    iterations = [d for d in decisions if d["reason"].startswith("iteration of")]
    assert len(iterations) >= 4, [d["reason"] for d in decisions]
    assert all("predictor paper-ols-extrapolated [load predictor" in d["reason"] for d in iterations)
    # one decision per 2 s iteration, not per 1 s batch: the batches in between keep the degrees
    times = [d["time_s"] for d in iterations]
    assert all(later - earlier >= PERIOD_S - 0.002 for earlier, later in zip(times, times[1:])), times  # (ms rounding)
    in_progress = [d for d in decisions if d["reason"].startswith("iteration in progress")]
    at_starts = [d for d in decisions if d["reason"].startswith("at batch start")]  # the guards' burst sizing
    assert in_progress and len(in_progress) + len(iterations) + len(at_starts) == len(decisions), \
        [d["reason"] for d in decisions]
    # AUTOSCALE's own degrees change only at the end of an iteration; in between, only the guards change them
    assert all(d["before"] == d["after"] or "guards:" in d["reason"] for d in in_progress), \
        [d["reason"] for d in in_progress]
    assert all("burst:" in d["reason"] for d in at_starts), [d["reason"] for d in at_starts]
    assert run.data.params["controller.guards"] == "True"
