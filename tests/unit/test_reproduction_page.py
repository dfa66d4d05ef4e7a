"""The reproduction page is generated from MLflow runs: measurements on fabricated suites with known answers."""
from mlflow.tracking import MlflowClient

from analysis.reproduction import CLAIMS, CONF_EXPT, CONF_MIN, _baselines, page
from tests.unit.test_promotion_rule import suite


def baselines_suite(min_slo: float, expt_slo: float):
    runs = suite({CONF_MIN: [(min_slo, 100)] * 3, CONF_EXPT: [(expt_slo, 250)] * 3})
    runs["variant"] = runs["config"]
    runs["slo_target"] = 0.95
    return runs


def test_the_baselines_claim_holds_only_when_confmin_misses_and_confexpt_meets_the_slo():
    m = _baselines(baselines_suite(0.4, 0.99))
    assert m.verdict == "holds"
    assert m.text == ("ConfMin: SLO attainment 40.0% (p99 3.0 s, 3 seeds); ConfExpt: 99.0% (p99 3.0 s) at 2.50x "
                      "ConfMin's cost")
    assert _baselines(baselines_suite(0.99, 0.99)).verdict == "does not hold"
    assert _baselines(baselines_suite(0.4, 0.9)).verdict == "does not hold"


def test_the_page_reads_the_latest_finished_suite_of_each_claim(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("repro", artifact_location=(tmp_path / "a").as_uri())
    for min_slo, status in ((0.99, "FINISHED"), (0.3, "FINISHED"), (0.99, "FAILED")):  # the last one is ignored
        parent = client.create_run(exp, tags={"kind": "reproduction", "claim": "autoscale-baselines"}).info.run_id
        for variant, slo in ((CONF_MIN, min_slo), (CONF_EXPT, 1.0)):
            for seed in (1, 2):
                run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "variant": variant, "seed": str(seed),
                                                   "config": variant, "workload": "autoscale-paper"}).info.run_id
                client.log_param(run, "slo.target", "0.95")
                client.log_metric(run, "slo_attainment", slo)
                client.log_metric(run, "cost_slot_seconds", 100 if variant == CONF_MIN else 300)
                client.set_terminated(run, "FINISHED")
        client.set_terminated(parent, status)
    text = page(uri, "repro")
    row = [line for line in text.splitlines() if line.startswith("| autoscale-baselines")][0]
    assert "ConfMin: SLO attainment 30.0%" in row and "| holds |" in row and "4 runs, seeds 1, 2" in row
    assert len([line for line in text.splitlines() if line.startswith("| ")]) == len(CLAIMS) + 1
    assert "not measurable yet: needs controller autoscale, from issue #6" in text
    ds2_row = [line for line in text.splitlines() if line.startswith("| ds2-three-steps")][0]
    assert "needs its suite and measurement, from issue #8" in ds2_row, "the controller exists, its claim's suite not"
