"""A run that can no longer meet its SLO target stops early when asked (tuning's confirmation runs), on real Spark:
ended KILLED with the reason, its partial figures recorded, nothing lost, and never taken for a complete run."""
import json

import pytest
from mlflow.tracking import MlflowClient

from analysis.runs import PRUNED, load_runs
from jobs.recording.summary import slo_out_of_reach
from tests.support import run_cli

pytestmark = pytest.mark.spark


def test_the_rule_prunes_only_when_the_target_is_certainly_out_of_reach():
    # 1000 scheduled, target 95 %: at most 50 may be late
    assert slo_out_of_reach(processed=400, within_slo=350, total_scheduled=1000, slo_target=0.95) is None
    reason = slo_out_of_reach(processed=400, within_slo=349, total_scheduled=1000, slo_target=0.95)
    assert reason.startswith("SLO target 95.0% out of reach: 51 of 1000 scheduled events already late")
    assert "cannot exceed 94.9%" in reason
    assert slo_out_of_reach(processed=0, within_slo=0, total_scheduled=0, slo_target=0.99) is None


def test_a_run_that_cannot_meet_its_slo_stops_early_and_is_recorded_as_pruned(tmp_path, tracking_uri):
    # 0.2 s is below one batch's own duration: every event is late, so the target is lost within a few batches
    proc = run_cli(["--controller", "static", "--workload", "constant", "--duration", "20", "--slo-latency", "0.2",
                    "--slo-target", "0.95", "--stop-when-slo-unreachable", "--tracking-uri", tracking_uri,
                    "--experiment", "pruned", "--output-dir", str(tmp_path / "job"),
                    "--summary-json", str(tmp_path / "summary.json"), "--quiet"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "stopped early (pruned" in proc.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "KILLED" and summary["pruned"] == 1.0
    assert summary["records_in"] < summary["records_scheduled"] / 2, "it stopped long before the end"
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    run = MlflowClient(tracking_uri).get_run(summary["run_id"])
    assert run.info.status == "KILLED" and run.data.tags["pruned"].startswith("SLO target 95.0% out of reach")
    [row] = load_runs(tracking_uri, experiment="pruned").to_dict("records")
    assert row["status"] == PRUNED and row["failure_reason"] == run.data.tags["pruned"]
