"""The reproduction page is generated from MLflow runs: measurements on fabricated suites with known answers."""
from mlflow.tracking import MlflowClient

from studies.reproduction import (
    AUTOSCALE_FROM_EXPT,
    AUTOSCALE_FROM_MIN,
    CLAIMS,
    CONF_EXPT,
    CONF_MIN,
    Reuse,
    _baselines,
    _preventive,
    page,
    reused_runs,
)
from tests.analysis.test_promotion_rule import suite


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
    # a claim that borrows its static baselines gets them from the latest finished suite that ran both
    parent, static = reused_runs(uri, "repro", Reuse((CONF_MIN, CONF_EXPT), ("autoscale-baselines",)))
    assert sorted(set(static["variant"])) == [CONF_MIN, CONF_EXPT] and len(static) == 4
    assert static.loc[static["variant"] == CONF_MIN, "slo_attainment"].tolist() == [0.3, 0.3]
    preventive_row = [line for line in text.splitlines() if line.startswith("| autoscale-preventive")][0]
    assert "not run yet" in preventive_row, "the controller exists, no suite has run"
    ds2_row = [line for line in text.splitlines() if line.startswith("| ds2-three-steps")][0]
    assert "not run yet" in ds2_row


def test_the_preventive_claim_needs_congestion_bounded_latency_and_savings():
    def measured(as_expt_cost, as_min_slo=0.9):
        runs = suite({CONF_MIN: [(0.2, 100)] * 3, CONF_EXPT: [(0.99, 300)] * 3,
                      AUTOSCALE_FROM_MIN: [(as_min_slo, 150)] * 3, AUTOSCALE_FROM_EXPT: [(0.98, as_expt_cost)] * 3})
        runs["variant"] = runs["config"]
        runs["slo_target"] = 0.95
        runs.loc[runs["variant"] == CONF_MIN, "latency_p99_s"] = 30.0
        return _preventive(runs)

    holds = measured(210)
    assert holds.verdict == "holds" and "30% fewer slot-seconds than ConfExpt (3 seeds)" in holds.text
    assert measured(280).verdict == "partly holds"  # bounded latency, but only 7 % saved
    runs = suite({CONF_MIN: [(0.2, 100)] * 3})
    runs["variant"] = runs["config"]
    runs["slo_target"] = 0.95
    assert _preventive(runs).verdict == "inconclusive"


def test_ds2_convergence_counts_changes_after_the_step_per_seed():
    import pandas as pd

    from studies.reproduction import _converges_within

    def log(*times):
        return [{"changed": True, "time_s": t} for t in times] + [{"changed": False, "time_s": 50.0}]

    runs = pd.DataFrame({"status": ["FINISHED"] * 3, "seed": [1, 2, 3],
                         "decisions": [log(4.0, 22.0, 26.0), log(6.0, 21.0), log(23.0, 25.0, 27.0)]})
    m = _converges_within(20.0, 3)(runs)
    assert m.verdict == "holds" and "seed 1: 2, seed 2: 1, seed 3: 3 (max 3, 3 seeds)" in m.text
    runs.at[2, "decisions"] = log(23.0, 25.0, 27.0, 29.0)
    assert _converges_within(20.0, 3)(runs).verdict == "does not hold"


def test_the_oracle_bound_holds_only_if_no_configuration_within_the_slo_is_cheaper():
    import pandas as pd

    from studies.reproduction import _oracle_bound
    from analysis.runs import with_cost_to_oracle

    def runs(ds2_cost, ds2_slo=0.99, oracle_slo=1.0, infeasible=0):
        rows = []
        for seed in (1, 2, 3):
            for controller, variant, cost, slo in (("oracle", "oracle:service_s={...}", 100.0, oracle_slo),
                                                   ("ds2", "ds2", ds2_cost, ds2_slo),
                                                   ("threshold", "threshold", 150.0, 0.9)):
                rows.append({"controller": controller, "variant": variant, "status": "FINISHED", "seed": seed,
                             "workload": "step", "cost_slot_seconds": cost, "slo_attainment": slo,
                             "slo_target": 0.95, "infeasible_decisions": infeasible if controller == "oracle" else 0})
        return with_cost_to_oracle(pd.DataFrame(rows))

    m = _oracle_bound(runs(120.0))
    assert m.verdict == "bound holds"
    assert m.text.startswith("cost / oracle: ds2 1.20x (SLO 99.0%); threshold 1.50x (SLO 90.0%); oracle SLO 100.0%")
    assert _oracle_bound(runs(80.0)).verdict == "does not hold"  # ds2 within the SLO and cheaper: no bound
    assert _oracle_bound(runs(80.0, ds2_slo=0.5)).verdict == "bound holds"  # cheaper, but missing the SLO
    assert "misses the SLO" in _oracle_bound(runs(120.0, oracle_slo=0.9)).text
    assert _oracle_bound(runs(120.0, infeasible=2)).verdict == "infeasible"


def test_a_claim_not_in_this_store_keeps_its_row_from_the_previous_page_marked_as_carried_over(tmp_path):
    uri = f"sqlite:///{tmp_path / 'empty.db'}"
    previous = ("| claim | paper | what the paper says | measured on Spark (this pipeline) | verdict | suite |\n"
                "|---|---|---|---|---|---|\n"
                "| ds2-three-steps | DS2 | three steps | changes after the step: seed 1: 1 (max 1, 1 seeds) | holds | "
                "`abcd1234`: step, 3 runs, seeds 1, 2, 3 |\n"
                "| oracle-bound-step | oracle | bound | not run yet | – | – |\n")
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "ds2-three-steps.png").write_bytes(b"png")
    text = page(uri, "repro", figures_dir=tmp_path / "figs", previous=previous)
    row = [line for line in text.splitlines() if line.startswith("| ds2-three-steps")][0]
    assert "| changes after the step: seed 1: 1 (max 1, 1 seeds) | holds |" in row
    assert row.endswith("`abcd1234`: step, 3 runs, seeds 1, 2, 3 — carried over from the previous page: not in this "
                        "MLflow store |")
    assert "![ds2-three-steps timelines](figs/ds2-three-steps.png)" in text
    oracle = [line for line in text.splitlines() if line.startswith("| oracle-bound-step")][0]
    assert "| not run yet | – | – |" in oracle, "nothing measured before: nothing to carry"
    again = page(uri, "repro", figures_dir=tmp_path / "figs", previous=text)
    assert again.count("carried over") == 1, "carrying twice does not stack the note"


def test_the_dynamic_allocation_peer_row_names_the_fewest_cores_within_the_slo():
    import pandas as pd

    from studies.reproduction import DYNAMIC_ALLOCATION, _peers_on_cluster

    def runs(da_slo):
        rows = []
        for seed in (1, 2):
            for variant, slo, cores, executors in (("static:degree=2", 0.99, 120.0, 2.0), ("ds2", 0.97, 118.0, 2.0),
                                                   (DYNAMIC_ALLOCATION, da_slo, 80.0, 1.3)):
                rows.append({"variant": variant, "status": "FINISHED", "seed": seed, "slo_attainment": slo,
                             "latency_p99_s": 2.0, "cost_slot_seconds": 200.0, "cost_executor_core_seconds": cores,
                             "executors_mean": executors, "slo_target": 0.95})
        return pd.DataFrame(rows)

    m = _peers_on_cluster(runs(0.96))
    assert m.verdict == f"fewest core-s within the SLO: {DYNAMIC_ALLOCATION}"
    assert m.text.startswith(f"{DYNAMIC_ALLOCATION}: SLO 96.0%, p99 2.0 s, 80 core-s, 200 slot-s, 1.30 executors; ds2")
    assert _peers_on_cluster(runs(0.5)).verdict == "fewest core-s within the SLO: ds2"
    assert _peers_on_cluster(runs(0.5)[lambda r: r["variant"] != DYNAMIC_ALLOCATION]).verdict == "inconclusive"


def test_a_claim_runs_a_subset_of_its_variants_only_if_they_are_its_own(tmp_path):
    import pytest

    from studies.reproduction import DYNAMIC_ALLOCATION_DEGREE_2, run_claim

    claim = next(c for c in CLAIMS if c.id == "spark-dynamic-allocation-peer")
    assert DYNAMIC_ALLOCATION_DEGREE_2 in claim.variants
    assert set(claim.reuse[0].variants) < set(claim.variants), "run alone, the claim runs every variant itself"
    with pytest.raises(SystemExit, match="has no variant"):
        run_claim(claim, f"sqlite:///{tmp_path / 'm.db'}", "x", "local[1]", ("threshold:cooldown_s=1",))
    assert not (tmp_path / "m.db").exists(), "nothing is recorded for a bad request"
