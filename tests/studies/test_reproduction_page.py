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
    assert "not run in this MLflow store" in preventive_row, "the controller exists, no suite has run"
    ds2_row = [line for line in text.splitlines() if line.startswith("| ds2-three-steps")][0]
    assert "not run in this MLflow store" in ds2_row


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


def _fabricated_suite(client, exp, claim_id, variant_results, tags=None, start_ms=None, status="FINISHED"):
    """A parent run tagged with the claim and a finished child per (variant, seed): {variant: (slo, cost)}."""
    parent = client.create_run(exp, start_time=start_ms, tags={"kind": "reproduction", "claim": claim_id,
                                                                **(tags or {})}).info.run_id
    for variant, (slo, cost) in variant_results.items():
        for seed in (1, 2):
            run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "variant": variant, "seed": str(seed),
                                               "config": variant, "controller": variant.split(":")[0],
                                               "workload": "autoscale-paper"}).info.run_id
            client.log_param(run, "slo.target", "0.95")
            client.log_param(run, "spark.version", "4.2.0")
            client.log_metric(run, "slo_attainment", slo)
            client.log_metric(run, "cost_slot_seconds", cost)
            client.set_terminated(run, "FINISHED")
    client.set_terminated(parent, status, end_time=None if start_ms is None else start_ms + 600_000)
    return parent


def row(text, claim_id):
    return next(line for line in text.splitlines() if line.startswith(f"| {claim_id} |"))


def test_the_page_is_written_from_the_store_alone_and_says_which_claims_were_not_run(tmp_path):
    from studies.reproduction import claims_to_run, runnable

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("repro", artifact_location=(tmp_path / "a").as_uri())
    machine = {"machine.cpus": "2", "machine.cpu_model": "Test CPU", "machine.memory_gib": "7.8",
               "machine.os": "Debian GNU/Linux 12 (bookworm), Linux 6.1", "machine.python": "3.11.9",
               "machine.spark": "4.2.0", "machine.java": "openjdk version 17.0.15", "machine.load_1min": "0.3",
               "code.revision": "0123456789abcdef"}
    start = 1_764_000_000_000  # 2025-11-24 UTC
    baselines = _fabricated_suite(client, exp, "autoscale-baselines", {CONF_MIN: (0.3, 100), CONF_EXPT: (1.0, 300)},
                                  machine, start)
    _fabricated_suite(client, exp, "ds2-three-steps", {"ds2": (1.0, 100)}, machine, start, status="FAILED")
    figures = tmp_path / "figs"
    figures.mkdir()
    (figures / "ds2-three-steps.png").write_bytes(b"an earlier page's figure")
    text = page(uri, "repro", figures_dir=figures)
    measured = row(text, "autoscale-baselines")
    assert "ConfMin: SLO attainment 30.0%" in measured and "| holds |" in measured
    assert f"`{baselines[:8]}` (2025-11-24, 10 min): autoscale-paper, 4 runs, seeds 1, 2" in measured
    # every other runnable claim is absent: a plain "not run" with the command, nothing from an earlier page
    for claim in CLAIMS:
        if runnable(claim) and claim.id != "autoscale-baselines":
            line = row(text, claim.id)
            assert "not run in this MLflow store" in line and "| not run | – |" in line
            assert f"`python -m studies.reproduction --run {claim.id}`" in line and "`make reproduce`" in line
    assert "did not finish: FAILED" in row(text, "ds2-three-steps"), "a failed attempt is said, not used"
    assert "carried over from the previous page" not in text and "not in this MLflow store |" not in text
    assert not (figures / "ds2-three-steps.png").exists(), "a figure the store cannot back is removed"
    # when and on what machine
    assert "**Measured** 2025-11-24 (UTC dates of the suites' runs), on:" in text
    assert ("- 2 cores (Test CPU), 7.8 GiB RAM, Debian GNU/Linux 12 (bookworm), Linux 6.1, Python 3.11.9, Spark "
            f"4.2.0, openjdk version 17.0.15: autoscale-baselines (2025-11-24, suite `{baselines[:8]}`, load average "
            "0.3 at start, code 0123456789ab)") in text
    # what make reproduce would run: everything runnable but the measured claim; its estimate is on the page
    assert [c.id for c in claims_to_run(uri, "repro")] == [c.id for c in CLAIMS
                                                          if runnable(c) and c.id != "autoscale-baselines"]
    assert [c.id for c in claims_to_run(uri, "repro", force=True)] == [c.id for c in CLAIMS if runnable(c)]
    assert "**Regenerate**: `make reproduce`" in text and "Total from an empty store: 57 Spark runs" in text


def test_a_measured_claim_is_kept_as_a_record_that_a_store_without_its_suite_shows(tmp_path):
    """A fresh clone has no MLflow store: the rows measured earlier come from the records the page wrote, with their
    provenance; a record of another definition of the claim is not used; make reproduce does not rerun a recorded
    claim unless forced."""
    import dataclasses
    import json

    from studies import reproduction
    from studies.claim_records import read_record
    from studies.reproduction import claims_to_run

    machine = {"machine.cpus": "2", "machine.cpu_model": "Test CPU", "machine.memory_gib": "7.8",
               "machine.os": "Debian", "machine.python": "3.11.9", "machine.spark": "4.2.0",
               "machine.load_1min": "0.4", "code.revision": "fedcba9876543210"}
    measured_uri = f"sqlite:///{tmp_path / 'measured.db'}"
    client = MlflowClient(measured_uri)
    exp = client.create_experiment("repro", artifact_location=(tmp_path / "a").as_uri())
    baselines = _fabricated_suite(client, exp, "autoscale-baselines", {CONF_MIN: (0.3, 100), CONF_EXPT: (1.0, 300)},
                                  machine, 1_764_000_000_000)
    records = tmp_path / "docs" / "reproduction"
    first = page(measured_uri, "repro", records_dir=records)
    record = json.loads((records / "autoscale-baselines.json").read_text())
    assert record["verdict"] == "holds" and record["measured"] in row(first, "autoscale-baselines")
    assert record["suites"][0]["run_id"] == baselines and record["suites"][0]["revision"] == "fedcba9876543210"
    assert sorted(p.name for p in records.iterdir()) == ["autoscale-baselines.json"], "only measured claims"

    fresh_uri = f"sqlite:///{tmp_path / 'fresh.db'}"
    MlflowClient(fresh_uri).create_experiment("repro", artifact_location=(tmp_path / "b").as_uri())
    text = page(fresh_uri, "repro", records_dir=records)
    line = row(text, "autoscale-baselines")
    assert "ConfMin: SLO attainment 30.0%" in line and "| holds |" in line
    assert f"`{baselines[:8]}` (2025-11-24, 10 min)" in line
    assert "from its record [reproduction/autoscale-baselines.json](reproduction/autoscale-baselines.json)" in line
    assert "**Measured** 2025-11-24" in text and "load average 0.4 at start, code fedcba987654" in text
    assert "autoscale-baselines" not in [c.id for c in claims_to_run(fresh_uri, "repro", records_dir=records)]
    assert "autoscale-baselines" in [c.id for c in claims_to_run(fresh_uri, "repro", force=True,
                                                                 records_dir=records)]
    assert "not run in this MLflow store" in row(page(fresh_uri, "repro"), "autoscale-baselines"), \
        "without the records folder, the store alone"

    # the claim defined otherwise (more seeds): its record measured another experiment
    by_id = {c.id: c for c in CLAIMS}
    changed = dataclasses.replace(by_id["autoscale-baselines"], seeds=(1, 2, 3, 4))
    assert read_record(records, by_id["autoscale-baselines"]) is not None
    original = reproduction.CLAIMS
    reproduction.CLAIMS = tuple(changed if c.id == changed.id else c for c in original)
    try:
        line = row(page(fresh_uri, "repro", records_dir=records), "autoscale-baselines")
    finally:
        reproduction.CLAIMS = original
    assert "| not run |" in line and "was measured under another definition of the claim" in line


def test_a_suite_recorded_before_the_machine_tags_gives_its_date_and_its_runs_spark_version(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("repro", artifact_location=(tmp_path / "a").as_uri())
    _fabricated_suite(client, exp, "autoscale-baselines", {CONF_MIN: (0.3, 100), CONF_EXPT: (1.0, 300)},
                      start_ms=1_764_000_000_000)
    text = page(uri, "repro")
    assert "- machine not recorded (suite run before studies recorded it); Spark 4.2.0: autoscale-baselines" in text


def test_the_estimate_adds_each_runs_duration_and_overhead(tmp_path):
    from studies.provenance import RUN_OVERHEAD_S
    from studies.reproduction import CALIBRATION_S, CLUSTER_S, estimate_s

    by_id = {c.id: c for c in CLAIMS}
    assert estimate_s(by_id["ds2-three-steps"]) == 3 * (60 + RUN_OVERHEAD_S)
    assert estimate_s(by_id["oracle-bound-step"]) == 12 * (60 + RUN_OVERHEAD_S) + CALIBRATION_S
    assert estimate_s(by_id["spark-dynamic-allocation-peer"]) == 15 * (60 + RUN_OVERHEAD_S) + CLUSTER_S


def test_the_machine_tags_describe_this_machine():
    from jobs.recording.machine import describe_machine, machine_tags

    tags = machine_tags()
    assert int(tags["machine.cpus"]) >= 1 and float(tags["machine.memory_gib"]) > 0
    assert tags["machine.python"].startswith("3.") and tags["machine.spark"][0].isdigit()
    assert describe_machine(tags).startswith(f"{tags['machine.cpus']} cores")


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
