"""Reading an experiment's runs back from a real (SQLite) MLflow store and comparing them."""
import pytest
from mlflow.tracking import MlflowClient

from analysis.compare import compare, main
from analysis.runs import load_runs

CONFIGS = {  # config -> per-seed (slo_attainment, cost)
    "threshold": [(0.99, 200), (0.98, 205), (0.99, 198), (0.99, 202)],
    "static:degree=3": [(1.0, 360), (1.0, 362), (1.0, 359), (1.0, 361)],
    "static": [(0.2, 120), (0.21, 121), (0.19, 119), (0.2, 120)],
}


@pytest.fixture()
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("cmp", artifact_location=(tmp_path / "art").as_uri())
    parent = client.create_run(exp, run_name="suite").info.run_id
    for config, values in CONFIGS.items():
        for seed, (slo, cost) in enumerate(values):
            run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "config": config, "workload": "step",
                                               "controller": config.split(":")[0], "seed": str(seed)}).info.run_id
            client.log_param(run, "slo.target", "0.95")
            for key, value in {"slo_attainment": slo, "cost_slot_seconds": cost, "latency_p99_s": 3.0}.items():
                client.log_metric(run, key, value)
            client.set_terminated(run, "FINISHED")
    failed = client.create_run(exp, tags={"mlflow.parentRunId": parent, "config": "threshold", "workload": "step",
                                          "seed": "4", "failure_reason": "RunFailed: induced"}).info.run_id
    client.set_terminated(failed, "FAILED")
    other = client.create_run(exp, tags={"config": "unrelated", "workload": "step"}).info.run_id
    client.set_terminated(other, "FINISHED")
    return uri, parent


def test_load_runs_of_a_parent_includes_failed_ones(store):
    uri, parent = store
    runs = load_runs(uri, parent_run_id=parent)
    assert len(runs) == 13 and set(runs["config"]) == set(CONFIGS)
    assert (runs["status"] == "FAILED").sum() == 1
    assert runs.loc[runs["status"] == "FAILED", "failure_reason"].item() == "RunFailed: induced"


def test_compare_ranks_by_the_rule_and_reports_unfinished_runs(store, capsys):
    uri, parent = store
    text = compare(load_runs(uri, parent_run_id=parent))
    lines = text.splitlines()
    order = [line.split()[1] for line in lines if line.strip()[:1].isdigit()]
    assert order == ["threshold", "static:degree=3", "static"]
    assert "misses SLO" in [line for line in lines if " static " in line + " "][0]
    assert "Pareto front (cost vs SLO violations): static, threshold, static:degree=3" in text
    assert "NOT FINISHED: threshold seed 4" in text and "RunFailed: induced" in text
    assert main(["--tracking-uri", uri, "--parent-run-id", parent]) == 0
    assert "threshold" in capsys.readouterr().out


def test_unknown_experiment_is_a_one_line_error(store, capsys):
    uri, _ = store
    assert main(["--tracking-uri", uri, "--experiment", "nope"]) == 2
    assert "no MLflow experiment named 'nope'" in capsys.readouterr().err


def test_a_suite_compared_with_itself_has_no_regression_and_a_worse_one_is_listed(store, tmp_path):
    from analysis.regression import compare_suites, listing, main as regression_main

    uri, parent = store
    found, problems = compare_suites(uri, parent, parent)
    assert found == [] and problems == ["threshold on step seed 4: FAILED (RunFailed: induced)"]
    client = MlflowClient(uri)
    exp = client.get_run(parent).info.experiment_id
    worse = client.create_run(exp, run_name="worse").info.run_id
    for seed, cost in enumerate([260, 262, 258, 261]):  # threshold got 30 % dearer, same SLO
        run = client.create_run(exp, tags={"mlflow.parentRunId": worse, "config": "threshold", "workload": "step",
                                           "seed": str(seed)}).info.run_id
        client.log_metric(run, "slo_attainment", 0.99)
        client.log_metric(run, "cost_slot_seconds", cost)
        client.set_terminated(run, "FINISHED")
    found, problems = compare_suites(uri, parent, worse)
    assert [(r.config, r.metric) for r in found] == [("threshold", "cost_slot_seconds")] and problems == []
    assert listing(found, problems).startswith("REGRESSION threshold on step: cost_slot_seconds 201.2 -> 260.2")
    assert regression_main(["--tracking-uri", uri, "--before", parent, "--after", worse]) == 1
    assert regression_main(["--tracking-uri", uri, "--before", parent, "--after", worse,
                            "--tolerance", "cost_slot_seconds=0.5"]) == 0


def test_cost_to_oracle_is_the_ratio_to_the_oracle_run_of_the_same_workload_and_seed():
    import pandas as pd

    from analysis.runs import with_cost_to_oracle

    runs = pd.DataFrame({"controller": ["oracle", "threshold", "threshold", "oracle"],
                         "status": ["FINISHED", "FINISHED", "FINISHED", "FAILED"], "workload": ["step"] * 4,
                         "seed": [1, 1, 2, 2], "cost_slot_seconds": [100.0, 150.0, 170.0, 90.0],
                         "infeasible_decisions": [0, 0, 0, 0]})
    out = with_cost_to_oracle(runs)
    ratio = out["cost_to_oracle"].tolist()
    assert ratio[:2] == [1.0, 1.5] and pd.isna(ratio[2]), "seed 2's oracle run failed: no bound, no ratio"
    assert not out["oracle_infeasible"].any()
    # an oracle that could not keep the SLO at the maximum degree is no bound: the seed is marked, not scored
    runs.loc[0, "infeasible_decisions"] = 3
    out = with_cost_to_oracle(runs)
    assert out["cost_to_oracle"].isna().all() and out.loc[out["seed"] == 1, "oracle_infeasible"].all()


def test_regret_is_cost_per_unit_of_slo_above_the_oracles_also_where_the_oracle_is_infeasible():
    import pandas as pd

    from analysis.runs import with_cost_to_oracle

    runs = pd.DataFrame({"controller": ["oracle", "ds2", "threshold", "ds2"],
                         "status": ["FINISHED"] * 4, "workload": ["bursty"] * 3 + ["other"],
                         "seed": [1, 1, 1, 1], "cost_slot_seconds": [100.0, 300.0, 80.0, 50.0],
                         "slo_attainment": [0.8, 0.9, 0.4, 0.9],
                         "infeasible_decisions": [5, 0, 0, 0]})  # the oracle could not keep every peak
    out = with_cost_to_oracle(runs).set_index(["workload", "controller"])
    assert pd.isna(out.loc[("bursty", "ds2"), "cost_to_oracle"])  # no lower bound...
    # ...but per point of SLO: ds2 pays 300/0.9 = 333 against the oracle's 100/0.8 = 125
    assert out.loc[("bursty", "ds2"), "regret_to_oracle"] == pytest.approx((300 / 0.9) / 125 - 1)
    assert out.loc[("bursty", "threshold"), "regret_to_oracle"] == pytest.approx(200 / 125 - 1)
    assert out.loc[("bursty", "ds2"), "attainment_gap_to_oracle"] == pytest.approx(-0.1)
    assert out.loc[("bursty", "oracle"), "regret_to_oracle"] == pytest.approx(0.0)
    assert pd.isna(out.loc[("other", "ds2"), "regret_to_oracle"])  # no oracle run on that workload


def test_restarts_of_native_runs_are_compared_beside_the_ranking():
    import pandas as pd

    rows = [{"run_id": f"{config}-{seed}", "status": "FINISHED", "config": config, "config_id": config,
             "workload": "step.native-q5", "seed": seed, "slo_target": 0.95, "slo_attainment": 0.99,
             "cost_slot_seconds": cost + seed, "latency_p99_s": 2.0, "restarts": restarts + seed % 2,
             "restart_downtime_s": 2.5 * (restarts + seed % 2)}
            for config, cost, restarts in (("static:degree=2", 120, 0), ("threshold", 90, 2)) for seed in range(4)]
    rows = [{**r, "restarts": 0, "restart_downtime_s": 0.0} if r["config"].startswith("static") else r for r in rows]
    lines = compare(pd.DataFrame(rows)).splitlines()
    assert "restarts  downtime s" in lines[1]
    threshold = next(line for line in lines if " threshold " in line)
    assert threshold.split()[-2:] == ["2.5", "6.2"]  # 2, 3, 2, 3 restarts of 2.5 s each
    assert "restarts" not in compare(pd.DataFrame([{**r, "restarts": 0} for r in rows])).splitlines()[1]
