"""Multi-level automatic benchmark (TPDS 2019 step 2, phase B): the capacity table the `multilevel` controller reads.

    python -m analysis.multilevel_table     about 9 minutes on 2 cores (8.5 measured); never next to another heavy job

One streaming run on a Spark standalone cluster (its own: two 1-core workers on free loopback ports, workers added
by the host actuator when executors need cores; or `--master` with `--cluster-state` of a cluster started by
`python -m deploy.spark_cluster start`): the `multilevel-benchmark` controller starts un-parallelised on one
executor while a `staircase` workload raises the rate step by step, and whenever a period's health falls below the
threshold it adds the cheapest level that still helps (controllers/multilevel.py). The table — per configuration
judged healthy, the highest rate it was healthy at, the level that made it and that level's measured provisioning
delay — is derived from the run's decision log and logged to MLflow as a run of its own (experiment
`characterisation`, tags `multilevel.table=true` and `multilevel.query`, artifact `multilevel_table.json`, the
thresholds as params, the benchmark run's id), which `multilevel` finds by id or as `table=latest`. The table is also
registered as a new version of `multilevel-table.<query>` in the MLflow registry, with the alias `current` moved to
it (`table=@current`; `--alias NAME` moves another, `--alias ''` none). `--register RUN_ID` registers a table run
logged earlier and moves the alias to it, without benchmarking: how a user pins the table the runs should use;
`--list` shows the registered tables of a query, newest first, with their aliases and rows.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from controllers.multilevel import CapacityTable, table_from_decisions
from jobs.capacity_table import (ARTIFACT, DEFAULT_ALIAS, EXPERIMENT, QUERY_TAG, TABLE_TAG, query_identity,
                                  register, registered_name)

# the project's choices for this machine (parameters): levels of 500 ev/s from 500 to 8,000, 20 s each, judged over
# 10 s periods, the first level held 20 s longer while the run warms up (not judged: WARMUP_S); with them one 1-core
# executor held 5,000 ev/s and two held 7,993 on the 2 x 1-core cluster (docs/multilevel.md, benchmark run 4)
DEFAULTS = {"start": 500.0, "end": 8000.0, "step": 500.0, "step_s": 20.0}
WARMUP_S = 20.0


def staircase_workload(path: Path, start: float, end: float, step: float, step_s: float, seed: int,
                       hold_s: float = 0.0) -> Path:
    """The benchmark's injector: levels from start to end, the first held hold_s longer (the warm-up)."""
    levels = int((end - start) // step) + 1
    path.write_text(yaml.safe_dump({
        "name": "multilevel-staircase", "description": f"{start:g} to {end:g} ev/s in steps of {step:g} every "
                                                       f"{step_s:g} s (phase B of the multi-level seed)",
        "profile": "staircase", "params": {"start": start, "end": end, "step": step, "step_s": step_s,
                                           "hold_s": hold_s},
        "duration_s": hold_s + levels * step_s, "seed": seed, "keys": {"count": 1000}, "payload_bytes": 32},
        sort_keys=False))
    return path


def run_benchmark(master: str, workload: Path, controller_params: dict, tracking_uri: str, work: Path,
                  cluster_state: Path | None, extra: list[str]) -> dict:
    """The benchmark's streaming run (a jobs.run process); returns its summary."""
    summary = work / "summary.json"
    cmd = [sys.executable, "-m", "jobs.run", "--master", master, "--controller", "multilevel-benchmark",
           "--workload", str(workload), "--tracking-uri", tracking_uri, "--summary-json", str(summary),
           "--experiment", EXPERIMENT, *extra]
    for key, value in controller_params.items():
        cmd += ["--param", f"{key}={value}"]
    if cluster_state is not None:
        cmd += ["--host-scaling", "--cluster-state", str(cluster_state)]
    result = subprocess.run(cmd)
    if result.returncode != 0 or not summary.exists():
        raise RuntimeError(f"the benchmark run failed (exit {result.returncode}); its MLflow run says why")
    return json.loads(summary.read_text())


def log_table(table: CapacityTable, tracking_uri: str, params: dict, source_run: str,
              alias: str = DEFAULT_ALIAS) -> str:
    """The table as a run of `characterisation`, registered for its query with `alias` moved to it ('' : none);
    returns the table run's id."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from jobs.recording.recorder import ensure_experiment

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment_id=ensure_experiment(MlflowClient(tracking_uri), EXPERIMENT, tracking_uri))
    with mlflow.start_run(run_name=f"multilevel-table-{time.strftime('%Y%m%d-%H%M%S')}",
                          tags={"kind": "characterisation", "benchmark": "multilevel-table", TABLE_TAG: "true",
                                QUERY_TAG: table.query, "source_run_id": source_run}) as run:
        mlflow.log_params(params)
        mlflow.log_dict(table.to_dict(), ARTIFACT)
        for i, row in enumerate(table.rows):
            mlflow.log_metric("row.rate_eps", row.rate_eps, step=i)
            mlflow.log_metric("row.executors", row.executors, step=i)
    register(MlflowClient(tracking_uri), run.info.run_id, table.query, alias)
    return run.info.run_id


def table_text(table: CapacityTable) -> str:
    lines = [f"{'rate ev/s':>10} {'executors':>9}  {'level':<11} {'delay s':>7}  degrees"]
    for r in table.rows:
        degrees = " ".join(f"{op}={d}" for op, d in r.degrees.items())
        lines.append(f"{r.rate_eps:>10.0f} {r.executors:>9}  {r.level:<11} {r.delay_s:>7.1f}  {degrees}")
    return "\n".join(lines)


def build_table(*, master: str | None, cluster_state: Path | None, start: float, end: float, step: float,
                step_s: float, period_s: float, health_threshold: float, max_executors: int, query: str | None,
                seed: int, tracking_uri: str, alias: str = DEFAULT_ALIAS, log=print) -> tuple[str, CapacityTable]:
    """Phase B end to end: the benchmark's streaming run (on its own 2 x 1-core cluster when no master is given),
    its table from the decision log, logged as a table run; returns (the table run's id, the table)."""
    if start <= 0 or step <= 0 or end < start or step_s < period_s:
        raise ValueError("need 0 < start <= end, step > 0 and step_s >= period (a level must hold a period)")
    controller_params = {"period_s": period_s, "health_threshold": health_threshold, "max_executors": max_executors,
                         "warmup_s": WARMUP_S}
    extra = ["--query", query] if query else []
    with tempfile.TemporaryDirectory(prefix="multilevel-table-") as d:
        work = Path(d)
        workload = staircase_workload(work / "staircase.yaml", start, end, step, step_s, seed, hold_s=WARMUP_S)
        cluster = None
        if master is None:
            from deploy.spark_cluster import StandaloneCluster, free_port

            cluster = StandaloneCluster(state_dir=work / "cluster", port=free_port(), ui_port=free_port())
            cluster.start(workers=2)
            master, cluster_state = cluster.master_url, cluster.state_dir
        try:
            log(f"multi-level benchmark on {master}: {start:g} -> {end:g} ev/s, +{step:g} every {step_s:g} s, "
                f"health judged every {period_s:g} s (threshold {health_threshold:g})")
            summary = run_benchmark(master, workload, controller_params, tracking_uri, work, cluster_state, extra)
        finally:
            if cluster is not None:
                cluster.stop()
        from mlflow.tracking import MlflowClient

        decisions = Path(MlflowClient(tracking_uri).download_artifacts(summary["run_id"], "decisions.jsonl",
                                                                       str(work)))
        records = [json.loads(line) for line in decisions.read_text().splitlines() if line.strip()]
    operators = tuple(records[0]["after"]) if records else ()
    table = table_from_decisions(records, operators, query_identity(query, None),
                                 {**controller_params, "slo_latency_s": summary.get("slo_latency_s")})
    run_id = log_table(table, tracking_uri,
                       {**controller_params, "start": start, "end": end, "step": step, "step_s": step_s,
                        "seed": seed, "benchmark_run_id": summary["run_id"]}, summary["run_id"], alias)
    return run_id, table


def main(argv: list[str] | None = None) -> int:
    from jobs.recording.recorder import default_tracking_uri

    p = argparse.ArgumentParser(prog="python -m analysis.multilevel_table", description=__doc__.split("\n\n")[0])
    p.add_argument("--master", help="a running standalone master (default: start a 2 x 1-core cluster here)")
    p.add_argument("--cluster-state", type=Path, help="with --master: the state folder of deploy.spark_cluster, "
                                                      "so the host level can add workers")
    p.add_argument("--start", type=float, default=DEFAULTS["start"], help="first rate level, ev/s")
    p.add_argument("--end", type=float, default=DEFAULTS["end"], help="last rate level, ev/s")
    p.add_argument("--step", type=float, default=DEFAULTS["step"], help="rate added per level, ev/s")
    p.add_argument("--step-s", type=float, default=DEFAULTS["step_s"], help="seconds per level")
    p.add_argument("--period", type=float, default=10.0, help="T: seconds over which health is judged")
    p.add_argument("--health-threshold", type=float, default=0.95)
    p.add_argument("--max-executors", type=int, default=4)
    p.add_argument("--query", help="MODULE:FUNCTION or nexmark:qN (default: the benchmark topology)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--alias", default=DEFAULT_ALIAS,
                   help=f"registry alias moved to the new table (default {DEFAULT_ALIAS!r}; '' moves none)")
    p.add_argument("--register", metavar="RUN_ID",
                   help="do not benchmark: register this table run (of --query) and move --alias to it")
    p.add_argument("--list", action="store_true",
                   help="do not benchmark: list the registered tables of --query, newest first, with their aliases")
    args = p.parse_args(argv)
    tracking_uri = args.tracking_uri or default_tracking_uri()
    if args.list:
        return _list_registered(query_identity(args.query, None), tracking_uri)
    if args.register:
        return _register_existing(args.register, query_identity(args.query, None), args.alias, tracking_uri)
    try:
        run_id, table = build_table(master=args.master, cluster_state=args.cluster_state, start=args.start,
                                    end=args.end, step=args.step, step_s=args.step_s, period_s=args.period,
                                    health_threshold=args.health_threshold, max_executors=args.max_executors,
                                    query=args.query, seed=args.seed, tracking_uri=tracking_uri,
                                    alias=args.alias)
    except ValueError as exc:
        p.error(str(exc))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(table_text(table))
    use = f"table=@{args.alias}, " if args.alias else ""
    print(f"capacity table logged to MLflow run {run_id} (experiment {EXPERIMENT}) and registered as "
          f"{registered_name(table.query)}; use it with --controller multilevel --param {use}table={run_id} "
          "or table=latest")
    return 0


def _list_registered(identity: str, tracking_uri: str) -> int:
    from jobs.capacity_table import registered_versions

    versions = registered_versions(identity, tracking_uri)
    if not versions:
        print(f"no registered table for query {identity!r} ({registered_name(identity)}) at {tracking_uri}: "
              "python -m analysis.multilevel_table makes one", file=sys.stderr)
        return 1
    for version, aliases, run_id, table in versions:
        marks = " ".join(f"@{a}" for a in sorted(aliases))
        print(f"{registered_name(identity)} version {version}{' ' + marks if marks else ''} (table run {run_id})")
        print(table_text(table) + "\n")
    return 0


def _register_existing(run_id: str, identity: str, alias: str, tracking_uri: str) -> int:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    from controllers.multilevel import TableError

    try:
        version = register(MlflowClient(tracking_uri), run_id, identity, alias)
    except (TableError, MlflowException) as exc:
        print(f"error: cannot register table run {run_id}: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    moved = f", alias {alias!r} moved to it" if alias else ""
    print(f"table run {run_id} registered as {registered_name(identity)} version {version}{moved}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
