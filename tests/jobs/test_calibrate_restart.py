"""The restart calibration on real Spark: a stateful native query restarted plainly and rescaled at two state sizes,
the fit written where native runs on the same master find it, and recorded in MLflow."""
import pytest
import yaml
from mlflow.tracking import MlflowClient

from jobs.calibrate_restart import calibrate_restart, this_masters_restart_cost

pytestmark = pytest.mark.spark


def test_the_calibration_fits_what_it_measured_and_a_run_on_the_same_master_reads_it(tmp_path, tracking_uri):
    out = tmp_path / "restart.yaml"
    cost = calibrate_restart("local[2]", [0.2, 2.0], out, tracking_uri, "restart-calibration",
                             sequence=[(2, False), (4, True)])
    written = yaml.safe_load(out.read_text())
    assert written["measured"]["master"] == "local[2]" and written["measured"]["restarts"] == 4
    assert written["restart_cost"] == cost.to_dict()
    assert cost.plain_restart_s > 0 and cost.rescale_s(2.0) > 0 and "local[2]" in cost.source
    assert this_masters_restart_cost("local[2]", out) == cost
    assert this_masters_restart_cost("local[4]", out) is None  # measured on another master: not this run's figure
    assert this_masters_restart_cost("local[2]", tmp_path / "none.yaml") is None
    client = MlflowClient(tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("restart-calibration").experiment_id],
                               "tags.kind = 'calibration-restart'")
    assert run.info.status == "FINISHED"
    assert float(run.data.params["restart_cost.rescale_fixed_s"]) == pytest.approx(cost.rescale_fixed_s)
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {"restarts.jsonl", "calibration"}
