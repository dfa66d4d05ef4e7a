"""The placement suite's goal read-out on fabricated runs with known answers (no Spark, no store)."""
import pandas as pd

from benchmarks.placement_goals import goals, split_label

HASH = "static:degrees={aggregate: 4}"


def runs(rows):
    return pd.DataFrame([{"workload": "skewed", "status": "FINISHED", "config": c, "seed": s,
                          "keyed_max_task_s_mean": t, "latency_p99_s": p, "slo_attainment": 1.0,
                          "placement_moves": m, "records_lost": 0, "records_duplicated": d}
                         for c, s, t, p, m, d in rows])


def test_split_label_keeps_braces_whole():
    assert split_label(HASH + "+sousa:sensitivity=0.25") == (HASH, "sousa:sensitivity=0.25")
    assert split_label("seep-policy:policy={a: 1+2}") == ("seep-policy:policy={a: 1+2}", None)


def test_cuts_are_per_seed_against_the_hash_run_it_extends_and_lost_records_fail_the_goal():
    table = runs([(HASH, 1, 1.0, 4.0, None, 0), (HASH, 2, 2.0, 4.0, None, 0),
                  (HASH + "+sousa", 1, 0.5, 2.0, 6, 0), (HASH + "+sousa", 2, 1.0, 2.0, 4, 0),  # 50 % and 50 %
                  (HASH + "+souravlas", 1, 0.9, 3.9, 2, 0), (HASH + "+souravlas", 2, 1.0, 2.0, 2, 1)])
    text = "\n".join(goals(table))
    assert (f"{HASH}+sousa: slowest task cut 50 [50, 50] %, p99 latency cut 50 [50, 50] % against "
            f"{HASH} — goal >= 40% each, 0 lost/dup met") in text
    assert f"{HASH}+souravlas: slowest task cut 30 [10, 50] %" in text and text.count("MISSED") == 1
    assert "placement configurations meeting the goal: 1 of 2" in text


def test_the_hash_controller_is_the_baseline_and_its_bound_says_what_any_placement_could_cut():
    table = runs([(HASH + "+hash", 1, 1.0, 4.0, 0, 0), (HASH + "+hash", 2, 2.0, 4.0, 0, 0),
                  (HASH + "+sousa", 1, 0.8, 4.0, 3, 0), (HASH + "+sousa", 2, 1.6, 4.0, 3, 0)])
    table["keyed_balanced_task_s_mean"] = [0.75, 1.5, 0.7, 1.4]
    text = "\n".join(goals(table))
    assert f"under hash placement ({HASH}): a placement balanced in hindsight, batch by batch, would have cut " \
           "the slowest task by 25 [25, 25] %" in text
    assert f"{HASH}+sousa: slowest task cut 20 [20, 20] %, p99 latency cut 0 [0, 0] % against {HASH}" in text
    assert "placement configurations meeting the goal: 0 of 1" in text


def test_the_read_out_from_a_record_file_names_where_its_runs_come_from_and_a_bad_one_is_refused(tmp_path, capsys):
    from analysis.run_records import to_record, write_record
    from benchmarks.placement_goals import main

    table = runs([(HASH + "+hash", 1, 1.0, 4.0, 0, 0), (HASH + "+sousa", 1, 0.5, 2.0, 3, 0)])
    table["run_id"], table["controller"], table["start_time"] = ["r1", "r2"], "static", 1.78e12
    record = tmp_path / "runs.csv"
    write_record(record, to_record(table, "parent-1", "2 cores"))
    assert main(["--record", str(record)]) == 0
    out = capsys.readouterr().out
    assert f"{HASH}+sousa: slowest task cut 50 [50, 50] %" in out and "  parent-1: 2 runs, " in out
    assert main(["--record", str(record), "--exclude-run-id", "r2"]) == 0
    assert "placement configurations meeting the goal: 0 of 0" in capsys.readouterr().out
    record.write_text("run_id,status\nabc,FINISHED\n")
    assert main(["--record", str(record)]) == 2
    assert f"{record}: column(s) config, controller, workload, seed missing" in capsys.readouterr().err
