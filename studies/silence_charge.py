"""Each run's cost under both charges of a silence, read from the runs' own batch tables (no Spark).

    python -m studies.silence_charge --parent-run-id ID [--parent-run-id ID ...] [--exclude-run-id ID ...]

Why: until 2026-11-29 a run was charged from one batch's start to the next's at the degrees the first batch ran with,
so the triggers Spark skips for want of data were billed at the vector of the batch before the silence, although the
controller had decided another one as that batch ended. Since then (jobs/recording/summary.py: charged_slot_seconds)
they are billed at the vector decided after it. A run's batch table holds both vectors and the idle time
(`idle_after_s`), so the same runs give both figures side by side: per run, the seconds Spark skipped, the cost
charged now, the cost as it was charged before, and their ratio; then per workload and configuration the mean ratio of
each to the oracle's run on the same seed, under each charge.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd
from mlflow import MlflowClient
from mlflow.artifacts import download_artifacts

from jobs.recording.summary import charged_slot_seconds


def both_charges(batches: pd.DataFrame, operators: list[str]) -> tuple[float, float, float]:
    """(seconds Spark skipped, the cost charged now, the cost as it was charged before 2026-11-29)."""
    ran = batches[[f"degree_{op}" for op in operators]].sum(axis=1)
    return (float(batches["idle_after_s"].sum()), charged_slot_seconds(batches, operators),
            float((ran * batches["interval_in_force_s"]).sum()))


def table(client: MlflowClient, parents: list[str], tracking_uri: str, workdir: Path,
          exclude: tuple[str, ...] = ()) -> pd.DataFrame:
    rows = []
    for parent in parents:
        experiment = client.get_run(parent).info.experiment_id
        runs = client.search_runs([experiment], f"tags.mlflow.parentRunId = '{parent}'")
        for run in runs:
            if run.info.status != "FINISHED" or run.info.run_id in exclude:
                continue
            path = download_artifacts(run_id=run.info.run_id, artifact_path="batches.parquet",
                                      tracking_uri=tracking_uri, dst_path=str(workdir / run.info.run_id))
            batches = pd.read_parquet(path)
            operators = [c[len("degree_"):] for c in batches.columns if c.startswith("degree_")]
            idle, now, before = both_charges(batches, operators)
            tags = run.data.tags
            config = tags.get("config", tags.get("controller", ""))
            rows.append({"run": run.info.run_id[:8], "workload": tags.get("workload"), "seed": tags.get("seed"),
                         "config": "oracle" if config.startswith("oracle") else config,
                         "idle_s": idle, "cost_now": now, "cost_before": before,
                         "recorded": run.data.metrics.get("cost_slot_seconds")})
    return pd.DataFrame(rows)


def ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload and configuration, the mean cost ÷ the oracle's run on the same seed, under each charge."""
    oracle = runs[runs["config"] == "oracle"].set_index(["workload", "seed"])
    joined = runs.join(oracle[["cost_now", "cost_before"]], on=["workload", "seed"], rsuffix="_oracle")
    joined["ratio_now"] = joined["cost_now"] / joined["cost_now_oracle"]
    joined["ratio_before"] = joined["cost_before"] / joined["cost_before_oracle"]
    return joined.groupby(["workload", "config"])[["idle_s", "ratio_now", "ratio_before"]].mean().round(2)


def main(argv: list[str] | None = None) -> int:
    from jobs.recording.recorder import default_tracking_uri

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

    p = argparse.ArgumentParser(prog="python -m studies.silence_charge", description=__doc__.split("\n\n")[0])
    p.add_argument("--parent-run-id", action="append", required=True, help="a suite's parent run (repeatable)")
    p.add_argument("--exclude-run-id", action="append", default=[], help="leave this run out (repeatable)")
    p.add_argument("--tracking-uri")
    p.add_argument("--workdir", default=".local/silence_charge", help="where the batch tables are downloaded")
    args = p.parse_args(argv)
    uri = args.tracking_uri or default_tracking_uri()
    runs = table(MlflowClient(uri), args.parent_run_id, uri, Path(args.workdir), tuple(args.exclude_run_id))
    if runs.empty:
        print("no finished runs under those parents", file=sys.stderr)
        return 1
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(runs.round(1).to_string(index=False))
        print()
        print(ratios(runs).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
