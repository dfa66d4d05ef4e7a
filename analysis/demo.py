"""The demo experiment: several controller configurations on one workload, one after another, then a comparison.

It is the embedded, Airflow-free equivalent of the experiment DAG: a parent MLflow run, one child run per
variant (each a separate `python -m jobs.run` process, exactly as spark-submit would run it), and a summary
table. Variants run sequentially because two streaming runs on one small machine spoil each other's timings.

    python -m analysis.demo                    # the default three variants on the `step` workload
    python -m analysis.demo --workload ramp --duration 40 --variant threshold --variant static:degree=2
    python -m analysis.demo --suite suites/bursty.yaml --seeds 1 --workloads bursty-google-tasks --no-promote
    python -m analysis.demo --spark-query native:windowed_count --duration 40   # your own Structured Streaming query

With --suite, a suite file (suites/*.yaml, as the DAGs run them) gives the variants, workloads, seeds and settings;
--seeds, --workloads and --controllers run part of it.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path

from mlflow.tracking import MlflowClient

from analysis.orchestration import with_oracle
from analysis.promote import promote_suite
from analysis.report import report_for_parent
from analysis.suite import SuiteError, SuiteRequest, open_parent, run_suite, timestamped
from analysis.table import format_table
from jobs.champion import champion_class, champion_command
from params.run import RUN_SETTINGS
from jobs.recording.recorder import DEFAULT_EXPERIMENT, default_tracking_uri
from jobs.recording.tracking_check import TrackingUnreachable

# ConfMin (everything at degree 1), ConfExpt (enrich sized for the step's peak), and the reactive controller.
DEFAULT_VARIANTS = ("static:degree=1", "static:degree=1,degrees={enrich: 3}", "threshold")
# for a native query, whose one operator `query` is its partition count: fixed at 1, fixed at 4, and reactive
NATIVE_VARIANTS = ("static:degree=1", "static:degree=4", "threshold")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="step")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    slo = RUN_SETTINGS["slo_latency_s"]
    ap.add_argument("--slo-latency", type=float, default=slo.default, help=f"{slo.doc} (default {slo.default:g})")
    ap.add_argument("--variant", action="append", help="controller[:param=value,...] (repeatable)")
    ap.add_argument("--spark-query", metavar="MODULE:FUNCTION",
                    help="run your own Structured Streaming query (as jobs.run --spark-query) instead of the "
                         "benchmark topology")
    ap.add_argument("--suite", metavar="FILE", help="run this suite file instead of the options above")
    ap.add_argument("--seeds", help="with --suite: only these seeds (comma-separated)")
    ap.add_argument("--workloads", help="with --suite: only these workloads (comma-separated)")
    ap.add_argument("--controllers", help="with --suite: only these of its configurations (separated by ' | ')")
    ap.add_argument("--no-promote", action="store_true", help="compare and report, but leave the champions alone")
    ap.add_argument("--verbose", action="store_true",
                    help="also show the libraries' warnings and MLflow's download progress bars")
    ap.add_argument("--master", default="local[4]")
    ap.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    ap.add_argument("--tracking-uri", default=None)
    args = ap.parse_args(argv)
    if not args.verbose:
        quiet_libraries()
    tracking_uri = args.tracking_uri or default_tracking_uri()
    try:
        request = _request(args, tracking_uri)
    except SuiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    variants, workloads = list(request.variants), ", ".join(request.workloads)
    kind = "suite" if args.suite else "demo"
    try:
        parent_id = open_parent(tracking_uri, args.experiment, timestamped(Path(args.suite).stem if args.suite
                                                                           else "demo"),
                                {"kind": kind, "workload": workloads, **({"suite": args.suite} if args.suite else {})},
                                {"workload": workloads, "duration_s": request.duration_s,
                                 "seeds": ",".join(map(str, request.seeds)), "slo.latency_s": request.slo_latency_s,
                                 "variants": " | ".join(variants)[:6000]})
    except TrackingUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    queries = len(request.queries) + len(request.spark_queries)
    queries = f"{queries} queries x " if queries else ""
    print(f"{kind}: {queries}{len(variants)} variants x {len(request.workloads)} workload(s) ({workloads}) x "
          f"{len(request.seeds)} seed(s), {len(request.cases())} runs one after another; parent MLflow run "
          f"{parent_id}", flush=True)
    suite = run_suite(parent_id, request, tracking_uri=tracking_uri, experiment=args.experiment, master=args.master)
    results, failed = suite.summaries, suite.failed
    client = MlflowClient(tracking_uri)
    client.log_dict(parent_id, results, "demo_results.json")
    print()
    print(format_table(results))
    if failed:
        print(f"\nfailed variants: {', '.join(failed)} (their MLflow runs are marked FAILED with the reason)")
    decisions = []
    if not args.no_promote:
        print("\npromotion (champion/challenger, analysis/decision.py):")
        decisions = promote_suite(tracking_uri, parent_id)
        for d in decisions:
            print("  " + d.summary())
    report = report_for_parent(tracking_uri, parent_id, decisions=decisions)
    client.set_terminated(parent_id, "FAILED" if failed else "FINISHED")
    print(f"""
Results are in MLflow (experiment {args.experiment!r}, parent run {parent_id}); open the UI with
    make mlflow-ui        # then browse http://127.0.0.1:5000
or  .venv/bin/mlflow ui --backend-store-uri {tracking_uri} --host 127.0.0.1 --port 5000
The parent run holds the report (report/report.html) and the promotion decisions; each child run has per-batch
metrics, its summary, and artifacts: timeline.png, batches.parquet, decisions.jsonl.
    report:      {report}
    ranked:      .venv/bin/elastic compare --parent-run-id {parent_id}""" + _champion_line(request, decisions))
    return 1 if failed else 0


def quiet_libraries() -> None:
    """Keep the results readable: the promotion and the report download small artifacts, and MLflow's progress bar
    for each, or a plotting library's layout warning, would land between the result lines."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    for library in ("matplotlib", "mlflow", "pandas", "pyarrow", "sklearn"):
        warnings.filterwarnings("ignore", module=rf"{library}(\.|$)")


def _champion_line(request: SuiteRequest, decisions) -> str:
    """Where a promotion made a champion, the command that starts a job with it."""
    promoted = [d for d in decisions if d.promote]
    if not promoted or request.queries:
        return ""
    workload_class = promoted[0].workload_class
    spark_query = next((q for q in request.spark_queries if workload_class.endswith(champion_class("", q))), None)
    command = champion_command(workload_class, spark_query).replace("python -m jobs.run", "elastic run")
    return (f"\n    champion:    .venv/bin/{command}"
            "   # starts with the promoted config")


def _request(args, tracking_uri: str) -> SuiteRequest:
    """The suite to run: a suite file (part of it with --seeds/--workloads/--controllers) or the demo's options;
    with the oracle added when the suite asks for it."""
    if not args.suite:
        defaults = NATIVE_VARIANTS if args.spark_query else DEFAULT_VARIANTS
        options = {"controllers": args.variant or list(defaults), "workloads": [args.workload],
                   "seeds": [args.seed], "duration_s": args.duration, "slo_latency_s": args.slo_latency,
                   **({"spark_queries": [args.spark_query]} if args.spark_query else {})}
        return SuiteRequest.from_mapping(options, where="demo options")
    if args.spark_query:
        raise SuiteError("--spark-query: a suite file names its queries itself (spark_queries)")
    request = SuiteRequest.from_file(Path(args.suite))
    if args.seeds:
        try:
            seeds = tuple(int(s) for s in args.seeds.split(","))
        except ValueError:
            raise SuiteError(f"--seeds {args.seeds!r}: expected comma-separated integers") from None
        request = replace(request, seeds=_part("--seeds", seeds, request.seeds, "seeds"))
    if args.workloads:
        request = replace(request, workloads=_part("--workloads", _names(args.workloads, ","), request.workloads,
                                                   "workloads"))
    if args.controllers:
        request = replace(request, variants=_part("--controllers", _names(args.controllers, "|"), request.variants,
                                                  "configurations"))
    return with_oracle(request, tracking_uri)


def _names(text: str, separator: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(separator) if name.strip())


def _part(flag: str, chosen: tuple, available: tuple, what: str) -> tuple:
    """`chosen`, when every one of them is among the suite's `available` ones (a part of the suite, not another)."""
    missing = sorted(set(chosen) - set(available))
    if missing:
        raise SuiteError(f"{flag}: {missing} not among the suite's {what} {list(available)}")
    return chosen


if __name__ == "__main__":
    sys.exit(main())
