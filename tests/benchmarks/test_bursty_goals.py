"""The bursty suite's goals read-out, on fabricated runs with known answers (MLflow store, no Spark)."""
from benchmarks.bursty_goals import goals
from tests.benchmarks.suite_runs import fabricated_suite


def fabricate(tmp_path, runs, uri=None):
    """runs: (workload, config, seed, slo attainment, cost, scaling actions, infeasible decisions)."""
    return fabricated_suite(tmp_path, "b", (
        ({"config": config, "controller": config.split(":")[0], "workload": workload, "seed": str(seed)},
         {"slo_attainment": slo, "cost_slot_seconds": cost, "scaling_actions": actions,
          "infeasible_decisions": infeasible, "ledger_fell_behind_share": 0.25})
        for workload, config, seed, slo, cost, actions, infeasible in runs), uri)


def test_goals_per_workload_against_the_oracle_also_where_it_is_infeasible(tmp_path):
    rows = []
    for seed in (1, 2, 3):
        rows += [("calm", "oracle:service_s={a: 1}", seed, 1.0, 100.0, 5, 0),
                 ("calm", "ds2:guards=false", seed, 0.99, 150.0, 20, 0),
                 ("calm", "ds2", seed, 0.97, 120.0, 6, 0),   # 1.2x, 70 % fewer actions
                 ("calm", "threshold", seed, 0.80, 90.0, 4, 0),          # cheap but 20 points below the oracle
                 ("calm", "settle", seed, 0.98, 140.0, 2, 0),   # 1.4x, 90 % fewer actions
                 # the oracle keeps only 80 % on the bursts: its cost is the bound of what it reached
                 ("bursts", "oracle:service_s={a: 1}", seed, 0.80, 200.0, 9, 4),
                 ("bursts", "ds2:guards=false", seed, 0.50, 1000.0, 30, 0),
                 ("bursts", "ds2", seed, 0.78, 400.0, 20, 0),
                 ("bursts", "settle", seed, 0.70, 300.0, 18, 0)]
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    assert "calm: oracle SLO 100.0 [100.0, 100.0] %" in text
    assert ("best non-oracle within 5% points of the oracle's attainment: ds2 at 1.20x — goal <= 1.3x "
            "met") in text
    assert "DS2 with guards: 70% fewer scaling actions than without — goal >= 50% fewer met" in text
    assert "bursts: oracle SLO 80.0 [80.0, 80.0] %" in text
    assert "ds2 at 2.00x — goal <= 1.3x MISSED" in text
    assert "DS2 with guards: 2.00x the oracle — goal <= 1.6x MISSED" in text
    assert "DS2 with guards: 33% fewer scaling actions than without — goal >= 50% fewer MISSED" in text
    # the few-actions mode is read on its own: both goals on the calm workload, the cost only on the bursts
    settled = "settle (the few-actions controller)"
    assert f"{settled}: 1.40x the oracle — goal <= 1.6x met" in text
    assert f"{settled}: 90% fewer scaling actions than without — goal >= 50% fewer met" in text
    assert f"{settled}: 1.50x the oracle — goal <= 1.6x met" in text
    assert f"{settled}: 40% fewer scaling actions than without — goal >= 50% fewer MISSED" in text
    assert ("across workloads: best met on 1 of 2; guarded_cost met on 1 of 2; guarded_actions met on 1 of 2; "
            "settled_cost met on 2 of 2; settled_actions met on 1 of 2") in text
    # regret per SLO point on the infeasible workload: (1000 / 0.5) / (200 / 0.8) - 1 = 7
    assert "7.00 [7.00, 7.00]" in text
    # the before/after table the docs quote: a configuration a workload did not run is a dash
    assert ("| `calm` | 100.0 % | 99.0 % · 1.50× · 20.0 | 97.0 % · 1.20× · 6.0 | 80.0 % · 0.90× · 4.0 | "
            "98.0 % · 1.40× · 2.0 | — | — | 3 |") in text
    assert ("| `bursts` | 80.0 % | 50.0 % · 5.00× · 30.0 | 78.0 % · 2.00× · 20.0 | — | 70.0 % · 1.50× · 18.0 | — "
            "| — | 3 |") in text


def test_runs_of_one_suite_split_over_parents_are_compared_with_the_oracle_of_any_of_them(tmp_path):
    uri, first = fabricate(tmp_path, [("w", "ds2", 1, 0.5, 300.0, 10, 0)])
    _, second = fabricate(tmp_path, [("w", "oracle:x=1", 1, 1.0, 100.0, 5, 0)], uri=uri)
    text = "\n".join(goals(uri, [first, second]))
    assert "3.00 [3.00, 3.00]" in text  # ds2's cost / the oracle's, from the other parent
    assert "5.00 [5.00, 5.00]" in text  # regret per SLO: (300 / 0.5) / (100 / 1) - 1


def test_runs_superseded_by_a_rerun_can_be_left_out_by_id_and_an_unknown_id_is_refused(tmp_path):
    import pytest
    from mlflow.tracking import MlflowClient

    uri, parent = fabricate(tmp_path, [("w", "oracle:x=1", 1, 1.0, 100.0, 5, 0), ("w", "ds2", 1, 0.5, 300.0, 10, 0)])
    _, rerun = fabricate(tmp_path, [("w", "ds2", 1, 1.0, 120.0, 10, 0)], uri=uri)
    client = MlflowClient(uri)
    old = [r.info.run_id for r in client.search_runs(
        [client.get_run(parent).info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent}' and tags.config = 'ds2'")]
    both = "\n".join(goals(uri, [parent, rerun]))
    assert "2.10 [1.20, 3.00]" in both  # the two runs of ds2 on seed 1, averaged
    only_rerun = "\n".join(goals(uri, [parent, rerun], exclude=tuple(old)))
    assert "1.20 [1.20, 1.20]" in only_rerun and "3.00" not in only_rerun.split("ds2")[1].split("\n")[0]
    with pytest.raises(SystemExit, match="not a run of the given parents"):
        goals(uri, [parent], exclude=("nonesuch",))


def test_a_record_keeps_the_runs_for_a_later_read_out_without_the_store_and_merges_by_run_id(tmp_path):
    from analysis.run_records import read_record

    record = tmp_path / "runs.csv"
    rows = [("w", "oracle:x=1", 1, 1.0, 100.0, 5, 0), ("w", "ds2", 1, 0.9, 120.0, 6, 0)]
    uri, first = fabricate(tmp_path, rows)
    from_store = "\n".join(goals(uri, [first], record=record))
    assert len(read_record(record)) == 2
    # another session: a new store holds seed 2 only; the read-out covers both seeds, the record grows
    other = tmp_path / "other"
    other.mkdir()
    uri2, second = fabricate(other, [("w", "oracle:x=1", 2, 1.0, 100.0, 5, 0), ("w", "ds2", 2, 0.9, 140.0, 6, 0)])
    both = "\n".join(goals(uri2, [second], record=record))
    assert "1.30 [1.20, 1.40]" in both  # ds2's cost / the oracle's over seeds 1 (1.2) and 2 (1.4)
    assert len(read_record(record)) == 4
    # the same parent merged again replaces its rows; the record alone gives the same read-out
    again = "\n".join(goals(uri2, [second], record=record))
    assert len(read_record(record)) == 4 and again == both
    assert "\n".join(goals(None, [], record=record)) == both
    assert "measured: 4 runs from 2 suite(s)" in both and f"  {second}: 2 runs, " in both
    assert from_store != both
    # a run left out is left out of the record too
    ds2_seed2 = read_record(record).query("config == 'ds2' and seed == 2")["run_id"].iloc[0]
    goals(None, [], exclude=(ds2_seed2,), record=record)
    assert ds2_seed2 not in set(read_record(record)["run_id"])


def test_a_bad_record_is_refused_naming_the_file_and_line(tmp_path, capsys):
    from benchmarks.bursty_goals import main

    bad = tmp_path / "runs.csv"
    bad.write_text("run_id,status\nabc,FINISHED\n")
    assert main(["--record", str(bad)]) == 2
    assert f"{bad}: column(s) config, controller, workload, seed missing" in capsys.readouterr().err
    bad.write_text("run_id,status,config,controller,workload,seed\na,FINISHED,ds2,ds2,w,1\n"
                   "b,FINISHED,ds2,ds2,w,2\na,FINISHED,ds2,ds2,w,3\n")
    assert main(["--record", str(bad)]) == 2
    assert f"{bad}, line 4: run a is recorded twice" in capsys.readouterr().err


def test_where_runs_met_the_oracles_trigger_phase_the_attainment_test_reads_the_paired_difference(tmp_path):
    """Runs at seeded trigger phases carry their seed's phase: a configuration is judged against the oracle run at the
    same phase. Free-phase runs (no phase recorded) are compared as before, by the means over every seed."""
    from analysis.run_records import RECORD_COLUMNS

    def row(run_id, config, seed, slo, cost, phase):
        return {"run_id": run_id, "parent_run_id": "p", "status": "FINISHED", "config": config,
                "controller": config.split(":")[0], "workload": "w", "seed": seed, "slo_attainment": slo,
                "cost_slot_seconds": cost, "scaling_actions": 3, "infeasible_decisions": 4, "trigger_phase_s": phase}

    import pandas as pd

    rows = []
    # the phase decides what anyone keeps: 36 % at seed 1's phase, 76 % at seed 2's
    for seed, phase, att in ((1, 1.236068, 0.36), (2, 0.472136, 0.76)):
        rows += [row(f"o{seed}", "oracle:x=1", seed, att, 100.0, phase),
                 row(f"t{seed}", "threshold", seed, att - 0.01, 110.0, phase)]
    # threshold's free-phase runs of an earlier stop met unlucky phases on a dearer day: by the means alone it would
    # miss on both counts (0.43 against 0.56; 1.55x)
    rows += [row(f"f{seed}", "threshold", seed, 0.30, 200.0, None) for seed in (1, 2)]
    # ds2 ran at free phases only: the means decide, 0.40 against the oracle's 0.56
    rows += [row(f"d{seed}", "ds2", seed, 0.40, 105.0, None) for seed in (1, 2)]
    # settled DS2: 1.5x the oracle beside it at the same phase, 2.5x the cheapest oracle on a dearer day's runs
    rows += [row(f"s{seed}", "settle", seed, att - 0.05, 150.0, phase)
             for seed, phase, att in ((1, 1.236068, 0.36), (2, 0.472136, 0.76))]
    rows += [row(f"S{seed}", "settle", seed, 0.30, 350.0, None) for seed in (1, 2)]
    record = tmp_path / "runs.csv"
    pd.DataFrame(rows).reindex(columns=list(RECORD_COLUMNS)).to_csv(record, index=False)
    text = "\n".join(goals(None, [], record=record))
    assert ("threshold                            against the oracle at the same seed and trigger phase: "
            "-1.0 [-1.0, -1.0] points, 1.10 [1.10, 1.10]x its cost (2 seeds; the best-non-oracle test reads these)"
            ) in text
    assert "ds2                                  against the oracle" not in text
    assert ("best non-oracle within 5% points of the oracle's attainment: threshold at 1.10x (paired) — goal <= 1.3x "
            "met") in text
    # the DS2 cost goal reads the same pairs where there are any; the unpaired means are 2.50x
    assert ("settle (the few-actions controller): 1.50x the oracle (paired: the oracle at the same seed and "
            "trigger phase, 2 seeds, 1.50 [1.50, 1.50]x; against the cheapest oracle run of each seed 2.50x) — goal "
            "<= 1.6x met") in text
    assert "DS2 with guards: 1.05x the oracle — goal <= 1.6x met" in text  # no pairs: the cheapest oracle, as before


def test_the_before_after_table_of_the_results_page_is_the_read_out_of_the_record(tmp_path):
    """docs/bursty.md quotes the before/after table the read-out prints over docs/bursty/runs.csv: it
    must hold it line for line, so a record that grows without the docs following fails here."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    record = tmp_path / "runs.csv"
    shutil.copy(root / "docs" / "bursty" / "runs.csv", record)  # the read-out may write the record back
    lines = goals(None, [], record=record)
    start = next(i for i, line in enumerate(lines) if line.startswith("| workload | oracle SLO |"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    assert len(table) >= 7, table  # the heading, the rule and the five traces of the suite
    for page in ("docs/bursty.md",):
        text = (root / page).read_text()
        assert "\n".join(table) in text, f"{page}: the before/after table is not the read-out's:\n" + "\n".join(table)
