"""The nightly question: did anything get worse since the last time? Compares the runs of two suites (parent runs)
configuration by configuration and workload by workload, and lists every metric that got worse beyond its tolerance
AND significantly over the seeds (analysis.stats.regressions), so noise alone never fails a night.

    python -m analysis.regression --before <parent id> --after <parent id>       # exit 1 and a listing on regression
"""
from __future__ import annotations

import argparse
import sys

import pandas as pd

from analysis.runs import load_runs
from analysis.stats import Regression, regressions
from jobs.recording.recorder import default_tracking_uri

# relative worsening tolerated per metric before it counts (project's choice; a suite file may override it)
DEFAULT_TOLERANCE = {"slo_attainment": 0.02, "cost_slot_seconds": 0.10, "latency_p99_s": 0.20}


def finished(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "FINISHED"]


def compare_suites(tracking_uri: str, before_parent: str, after_parent: str,
                   tolerance: dict[str, float] | None = None) -> tuple[list[Regression], list[str]]:
    """(regressions, problems): problems are runs of the new suite that did not finish, which a nightly check must
    report as loudly as a regression (a controller that crashes the job has regressed)."""
    before = finished(load_runs(tracking_uri, parent_run_id=before_parent))
    after_all = load_runs(tracking_uri, parent_run_id=after_parent)
    problems = [f"{r['config']} on {r['workload']} seed {r['seed']}: {r['status']}"
                + (f" ({r['failure_reason']})" if r["failure_reason"] else "")
                for _, r in after_all[after_all["status"] != "FINISHED"].iterrows()]
    return regressions(before, finished(after_all), tolerance or DEFAULT_TOLERANCE), problems


def listing(found: list[Regression], problems: list[str]) -> str:
    lines = [f"REGRESSION {r}" for r in found] + [f"NOT FINISHED {p}" for p in problems]
    return "\n".join(lines) if lines else "no regression"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.regression", description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="parent run of the reference suite")
    p.add_argument("--after", required=True, help="parent run of the new suite")
    p.add_argument("--tolerance", action="append", default=[], metavar="METRIC=FRACTION",
                   help=f"relative tolerance per metric (default {DEFAULT_TOLERANCE})")
    p.add_argument("--tracking-uri", default=None)
    args = p.parse_args(argv)
    tolerance = dict(DEFAULT_TOLERANCE)
    for item in args.tolerance:
        metric, _, value = item.partition("=")
        try:
            tolerance[metric] = float(value)
        except ValueError:
            print(f"error: --tolerance {item!r}: expected METRIC=FRACTION", file=sys.stderr)
            return 2
    found, problems = compare_suites(args.tracking_uri or default_tracking_uri(), args.before, args.after, tolerance)
    print(listing(found, problems))
    return 1 if found or problems else 0


if __name__ == "__main__":
    sys.exit(main())
