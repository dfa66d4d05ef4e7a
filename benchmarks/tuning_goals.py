"""The tuning goals, read from tuning confirmation suites on Spark (`python -m analysis.tuning tune --with-oracle`):
did the tuned settings beat each controller's defaults, and how close is the best to the oracle?

    python -m benchmarks.tuning_goals --parent-run-id ID [--parent-run-id ID ...] [--bursty WORKLOAD ...]

Per workload and controller, the defaults and the tuned configuration (the confirmation's `tuning.role` tags), each
as mean [95 % bootstrap interval] over its seeds; a pruned run (SLO target certainly out of reach) counts as missing
the target, its cost unknown. Goals: the tuned best controller reaches >= 99 % SLO attainment at <= 1.15x the
oracle's cost (<= 1.3x on a bursty workload); for each controller, the tuned settings cost >= 15 % less than the
defaults at equal or better SLO attainment (the defaults' mean within or below the tuned runs' 95 % interval) —
or, where the defaults miss the SLO target, the tuned settings meet it.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis.runs import ORACLE, PRUNED, load_runs
from analysis.stats import bootstrap_mean
from jobs.recording.recorder import default_tracking_uri

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
SLO_GOAL = 0.99
ORACLE_GOAL = {False: 1.15, True: 1.30}  # steady / bursty
SAVING_GOAL = 0.15


def _roles(client: MlflowClient, runs: pd.DataFrame) -> pd.Series:
    return runs["run_id"].map(lambda r: client.get_run(r).data.tags.get("tuning.role", ""))


def goals(tracking_uri: str, parents: list[str], bursty: set[str]) -> list[str]:
    client = MlflowClient(tracking_uri)
    runs = pd.concat([load_runs(tracking_uri, parent_run_id=p) for p in parents], ignore_index=True)
    runs["role"] = _roles(client, runs)
    lines = []
    for workload, group in runs.groupby("workload", sort=True):
        oracle = group[group["controller"] == ORACLE]
        oracle_done = oracle[oracle["status"] == "FINISHED"]
        oracle_cost = bootstrap_mean(oracle_done["cost_slot_seconds"].tolist())
        oracle_slo = bootstrap_mean(oracle_done["slo_attainment"].tolist())
        lines.append(f"\n{workload}{' (bursty)' if workload in bursty else ''}: oracle cost "
                     f"{oracle_cost.text()} slot-s, SLO {oracle_slo.text(100)} %, "
                     f"{len(oracle) - len(oracle_done)} oracle run(s) pruned or failed")
        lines.append("  controller  role      seeds  pruned  SLO attainment %      cost slot-s            ÷ oracle")
        best = None
        target = group["slo_target"].dropna().max()
        for controller, runs_c in group[group["controller"] != ORACLE].groupby("controller", sort=True):
            figures = {}
            for role in ("defaults", "top-1"):
                r = runs_c[runs_c["role"] == role]
                if r.empty:
                    continue
                done = r[r["status"] == "FINISHED"]
                pruned = int((r["status"] == PRUNED).sum())
                slo, cost = (bootstrap_mean(done["slo_attainment"].tolist()),
                             bootstrap_mean(done["cost_slot_seconds"].tolist()))
                ratio = cost.mean / oracle_cost.mean if oracle_cost.n and cost.n else float("nan")
                meets = pruned == 0 and slo.n > 0 and slo.mean >= target
                figures[role] = (slo, cost, pruned, meets, r["config"].iloc[0])
                lines.append(f"  {controller:<10}  {role:<8}  {len(r):5d}  {pruned:6d}  {slo.text(100):<20}  "
                             f"{cost.text():<21}  {ratio:5.2f}")
                if role == "top-1" and meets and slo.mean >= SLO_GOAL and (best is None or cost.mean < best[1]):
                    best = (controller, cost.mean, ratio)
            if "defaults" in figures and "top-1" in figures:
                d, t = figures["defaults"], figures["top-1"]
                if d[3] and t[3]:
                    saving = 1 - t[1].mean / d[1].mean
                    # equal or better attainment: the tuned mean at least the defaults', or the defaults' mean
                    # inside the tuned runs' 95 % interval (not demonstrably worse over the seeds)
                    ok = saving >= SAVING_GOAL and max(t[0].mean, t[0].high) >= d[0].mean
                    lines.append(f"    tuned vs defaults: {100 * saving:.1f} % cheaper at SLO {100 * t[0].mean:.1f} % "
                                 f"vs {100 * d[0].mean:.1f} % — goal >= 15 % less: {'met' if ok else 'MISSED'}")
                elif t[3] and not d[3]:
                    lines.append("    tuned vs defaults: the defaults miss the SLO target, the tuned settings meet "
                                 "it — goal met (on attainment)")
                else:
                    lines.append("    tuned vs defaults: the tuned settings miss the SLO target — goal MISSED")
            elif "defaults" in figures:
                lines.append("    tuned vs defaults: the screening found nothing better than the defaults (the same "
                             "configuration) — goal MISSED")
        limit = ORACLE_GOAL[workload in bursty]
        if best is None:
            lines.append(f"  best tuned controller at >= {100 * SLO_GOAL:g} % SLO: none — goal MISSED")
        elif math.isnan(best[2]):
            lines.append(f"  best tuned controller at >= {100 * SLO_GOAL:g} % SLO: {best[0]}; no finished oracle run "
                         f"to compare its cost with — goal <= {limit:g}x: not measured")
        else:
            verdict = "met" if best[2] <= limit else "MISSED"
            lines.append(f"  best tuned controller at >= {100 * SLO_GOAL:g} % SLO: {best[0]}, {best[2]:.2f}x the "
                         f"oracle — goal <= {limit:g}x: {verdict}"
                         + ("" if oracle_slo.n and oracle_slo.mean >= target else
                            " (the oracle itself misses the SLO target here: no lower bound)"))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tuning_goals", description=__doc__.split("\n\n")[0])
    p.add_argument("--parent-run-id", action="append", required=True, help="a tuning confirmation suite")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--bursty", action="append", default=[], help="a workload judged by the bursty goal (1.3x)")
    args = p.parse_args(argv)
    print("\n".join(goals(args.tracking_uri or default_tracking_uri(), args.parent_run_id, set(args.bursty))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
