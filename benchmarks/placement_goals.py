"""The placement goal on Spark, read from runs of the placement suite (suites/placement.yaml) in MLflow: do key-group
placement controllers cut the keyed operator's slowest task and the p99 latency against hash placement at the same
degrees?

    python -m benchmarks.placement_goals [--parent-run-id ID ...] [--record docs/placement/runs.csv]

Per workload, each configuration as mean [95 % bootstrap interval] over its seeds: the keyed operator's slowest
task per batch (`keyed_max_task_s_mean`), what a placement balanced in hindsight would have made it
(`keyed_balanced_task_s_mean`, runs with key groups only), p99 latency, SLO attainment, moves, records lost and
duplicated; and each placement configuration's cut against the hash-placement configuration it extends (the same
parallelism controller with `+hash`, or with no placement controller), as the mean over seeds of 1 - run / hash run
of the same seed. The hash runs' own bound says how much of the slowest task any placement could have cut. Goal:
both cuts >= 40 % with 0 lost and 0 duplicated.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from analysis.stats import bootstrap_mean
from analysis.suite import split_placement
from benchmarks.recorded_runs import collect, provenance, readout_main

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
CUT_GOAL = 0.4  # the slowest task and the p99 latency, each at least this much below hash placement's
HASH = "hash"  # the no-scheduling placement controller (controllers/placement/hash.py): the baseline
METRICS = {"keyed_max_task_s_mean": "slowest task", "latency_p99_s": "p99 latency"}


def split_label(config: str) -> tuple[str, str | None]:
    """'static:degrees={aggregate: 4}+sousa' -> ('static:degrees={aggregate: 4}', 'sousa'): a run's configuration
    label read as the suite wrote it (analysis.suite.split_placement)."""
    return split_placement(config)


def goals(runs: pd.DataFrame) -> list[str]:
    """The read-out over finished runs (load_runs' table)."""
    done = runs[runs["status"] == "FINISHED"].copy()
    done[["base", "placement"]] = [split_label(c) for c in done["config"]]
    lines, verdicts = [], []
    for workload, group in done.groupby("workload", sort=True):
        lines.append(f"\n{workload}:")
        lines.append(f"  {'configuration':<44} seeds  {'slowest task s':<20} {'balanced bound s':<20} "
                     f"{'p99 latency s':<20} {'SLO %':<20} moves  lost/dup")
        for config, g in group.groupby("config", sort=False):
            bound = g["keyed_balanced_task_s_mean"] if "keyed_balanced_task_s_mean" in g else pd.Series(dtype=float)
            lines.append(f"  {config[:44]:<44} {len(g):5d}  "
                         f"{bootstrap_mean(g['keyed_max_task_s_mean'].tolist()).text(1, 3):<20} "
                         f"{bootstrap_mean(bound.dropna().tolist()).text(1, 3) if bound.notna().any() else '-':<20} "
                         f"{bootstrap_mean(g['latency_p99_s'].tolist()).text(1, 2):<20} "
                         f"{bootstrap_mean(g['slo_attainment'].tolist()).text(100):<20} "
                         f"{g['placement_moves'].fillna(0).mean():5.1f}  "
                         f"{int(g['records_lost'].fillna(0).sum())}/{int(g['records_duplicated'].fillna(0).sum())}")
        is_hash = group["placement"].isna() | (group["placement"] == HASH)
        hashed = group[is_hash].sort_values("placement", na_position="first").drop_duplicates(
            ["base", "seed"], keep="last").set_index(["base", "seed"])  # '+hash' where both were run
        for base, g in hashed.groupby(level="base"):
            if "keyed_balanced_task_s_mean" in g and g["keyed_balanced_task_s_mean"].notna().any():
                room = bootstrap_mean([1 - b / s for s, b in zip(g["keyed_max_task_s_mean"],
                                                                  g["keyed_balanced_task_s_mean"])
                                       if s and pd.notna(s) and pd.notna(b)])
                lines.append(f"  under hash placement ({base}): a placement balanced in hindsight, batch by batch, "
                             f"would have cut the slowest task by {room.text(100, 0)} %")
        for config, g in group[~is_hash].groupby("config", sort=False):
            base = g["base"].iloc[0]
            cuts = {}
            for metric in METRICS:
                pairs = [(row[metric], hashed.loc[(base, row["seed"]), metric]) for _, row in g.iterrows()
                         if (base, row["seed"]) in hashed.index]
                cuts[metric] = bootstrap_mean([1 - a / b for a, b in pairs if b and pd.notna(a) and pd.notna(b)])
            clean = g["records_lost"].fillna(0).sum() == 0 and g["records_duplicated"].fillna(0).sum() == 0
            ok = clean and all(c.n and c.mean >= CUT_GOAL for c in cuts.values())
            verdicts.append(ok)
            text = ", ".join(f"{METRICS[m]} cut {c.text(100, 0)} %" for m, c in cuts.items())
            lines.append(f"  {config}: {text} against {base} — goal >= {CUT_GOAL:.0%} each, 0 lost/dup "
                         f"{'met' if ok else 'MISSED'}" + ("" if cuts["keyed_max_task_s_mean"].n else
                                                           " (no hash-placement run of the same seeds)"))
    lines.append(f"\nplacement configurations meeting the goal: {sum(verdicts)} of {len(verdicts)}")
    return lines


def readout(tracking_uri: str | None, parents: list[str], exclude: tuple[str, ...] = (),
            record: Path | None = None) -> list[str]:
    runs = collect(tracking_uri, parents, exclude, record)
    return goals(runs) + provenance(runs)


def main(argv: list[str] | None = None) -> int:
    return readout_main(argv, "benchmarks.placement_goals", __doc__, "placement", "docs/placement/runs.csv", readout)


if __name__ == "__main__":
    sys.exit(main())
