"""Compare the configurations of an experiment: per workload, the ranking-rule order with 95 % intervals over
seeds, ties, the Pareto front of cost vs SLO violations, and every run that did not finish.

    python -m analysis.compare --parent-run-id <id>                 # the runs of one demo / DAG run
    python -m analysis.compare --experiment elastic-streaming --filter "tags.workload = 'step'"
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from analysis.decision import slo_target_of
from analysis.runs import load_runs
from analysis.stats import pareto_front, rank
from jobs.recording.recorder import DEFAULT_EXPERIMENT, default_tracking_uri


def _fmt(row, metric: str, spec: str) -> str:
    if pd.isna(row[metric]):
        return "-"
    return f"{row[metric]:{spec}} [{row[metric + '_low']:{spec}}, {row[metric + '_high']:{spec}}]"


def compare(runs: pd.DataFrame, slo_target: float | None = None) -> str:
    if runs.empty:
        return "(no runs)"
    lines = []
    for workload, group in runs.groupby("workload", sort=True):
        finished = group[group["status"] == "FINISHED"]
        target = slo_target_of(group, slo_target)
        lines.append(f"workload {workload}  (SLO target {target:.0%} of events within the bound; mean [95 % CI] "
                     f"over seeds)")
        if finished.empty:
            lines.append("  no finished runs")
        else:
            ranked = rank(finished, slo_target=target)
            width = max(len("config"), *(len(c) for c in ranked["config"]))
            # a native query's rescales are restarts: how many, and the downtime they cost (means over seeds)
            restarts = (finished.groupby("config")[["restarts", "restart_downtime_s"]].mean()
                        if "restarts" in finished
                        and pd.to_numeric(finished["restarts"], errors="coerce").fillna(0).any() else None)
            lines.append(f"  rank  {'config':<{width}}  runs  {'SLO attainment':<24}  {'cost slot-s':<22}  "
                         f"{'p99 latency s':<20}" + ("  restarts  downtime s" if restarts is not None else ""))
            for _, row in ranked.iterrows():
                tie = f"  (tied with {row['tied_with']})" if row["tied_with"] else ""
                miss = "" if row["meets_slo"] else "  misses SLO"
                down = ("" if restarts is None else
                        f"  {restarts.loc[row['config'], 'restarts']:>8.1f}  "
                        f"{restarts.loc[row['config'], 'restart_downtime_s']:>10.1f}")
                lines.append(f"  {row['rank']:>4}  {row['config']:<{width}}  {row['runs']:>4}  "
                             f"{_fmt(row, 'slo_attainment', '.3f'):<24}  {_fmt(row, 'cost_slot_seconds', '.0f'):<22}  "
                             f"{_fmt(row, 'latency_p99_s', '.2f'):<20}{down}{miss}{tie}")
            lines.append(f"  Pareto front (cost vs SLO violations): {', '.join(pareto_front(ranked))}")
        bad = group[group["status"] != "FINISHED"]
        for _, row in bad.iterrows():
            lines.append(f"  NOT FINISHED: {row['config']} seed {row['seed']} run {row['run_id']} ({row['status']}"
                         + (f": {row['failure_reason']}" if row["failure_reason"] else "") + ")")
        lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--tracking-uri", default=None, help="MLflow store (default: $MLFLOW_TRACKING_URI or .local)")
    p.add_argument("--parent-run-id", help="compare the child runs of this run")
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="or: the runs of this experiment...")
    p.add_argument("--filter", default="", help="...matching this MLflow filter string")
    p.add_argument("--slo-target", type=float, help="override the runs' recorded SLO target")
    args = p.parse_args(argv)
    try:
        runs = load_runs(args.tracking_uri or default_tracking_uri(), args.parent_run_id,
                         None if args.parent_run_id else args.experiment, args.filter)
    except Exception as exc:  # unknown run or experiment, bad filter: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(compare(runs, args.slo_target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
