"""Multi-level characterisation (TPDS 2019 step 1; Persian summary pp. 3-4): sustainable throughput of the benchmark
topology on a Spark standalone cluster as each scaling level grows alone.

    python -m benchmarks.multilevel             about 11 minutes on a 2-core machine; never next to another heavy job

Levels (each row changes one thing against its level's first row):
- partitions: tasks per operator (the degree) beyond the slots in use — two 1-core executors, degree 1..8;
- slots: executor cores up to and beyond the physical cores — one executor on one worker offering 4 cores,
  executor cores 1..4 with the degree equal to the slots;
- executors per host at a fixed total of cores — one worker of 2 cores: one 2-core executor against two 1-core
  executors, degree 2.

Sustainable throughput is measured saturated, like the foundation benchmark's overhead: every event is already
due, the source admits a fixed number per batch, batches run back to back, so events per second of wall time is
the rate the job sustains at that batch size. Each level's first configuration runs again at the end of the level:
the ratio of the two (drift) says how much the shared machine moved meanwhile, so a difference smaller than the
drift is not a difference. The table (events/s and the ratio to the level's first row) is printed, written to
docs/multilevel.csv on request, and logged to MLflow (experiment `characterisation`) as the product output the
multi-level controller will read.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmarks.foundation import _constant_workload, _saturated_rate
from deploy.spark_cluster import StandaloneCluster, free_port
from jobs.actuators.executors import read_executors
from jobs.operators import apply_query, topology_query
from jobs.sink import commit_batch

# every layout's executors fit in one worker's memory (two executors on one host is a layout), so memory never
# decides how many executors start
EXECUTOR_MEMORY = "512m"
WORKER_MEMORY = "2g"


@dataclass(frozen=True)
class Layout:
    """A cluster (workers x cores) and how the application uses it (executor cores, cores in total, degree)."""
    level: str
    label: str
    workers: int
    worker_cores: int
    executor_cores: int
    max_cores: int
    degree: int


def layouts(max_degree: int = 8) -> list[Layout]:
    partitions = [Layout("partitions", f"degree {d} on 2 x 1-core executors", 2, 1, 1, 2, d)
                  for d in (1, 2, 4, max_degree)]
    slots = [Layout("slots", f"1 executor of {c} core(s), degree {c}", 1, 4, c, c, c) for c in (1, 2, 3, 4)]
    per_host = [Layout("executors-per-host", "1 executor x 2 cores on 1 host", 1, 2, 2, 2, 2),
                Layout("executors-per-host", "2 executors x 1 core on 1 host", 1, 2, 1, 2, 2)]
    return partitions + slots + per_host


def _session(master: str, layout: Layout, app: str):
    from pyspark.sql import SparkSession

    from jobs.replay_source import ReplayDataSource
    from jobs.spark_session import package_code

    code = package_code(Path(tempfile.mkdtemp()) / "code.zip")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver on loopback, like the cluster
    spark = (SparkSession.builder.appName(app).master(master)
             .config("spark.executor.cores", str(layout.executor_cores))
             .config("spark.cores.max", str(layout.max_cores))
             .config("spark.executor.memory", EXECUTOR_MEMORY)
             .config("spark.sql.adaptive.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.python.worker.reuse", "true").config("spark.submit.pyFiles", str(code))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(ReplayDataSource)
    return spark


def _wait_for_cores(spark, cores: int, timeout_s: float = 60.0) -> None:
    """A standalone application gets its executors shortly after it starts: measure only once it has them all."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _granted_cores(spark) >= cores:
            return
        time.sleep(0.25)
    raise RuntimeError(f"the application did not get {cores} cores within {timeout_s:.0f} s")


def _granted_cores(spark) -> int:
    return sum(v.cores for v in read_executors(spark.sparkContext) if v.active)


def measure(layout: Layout, work: Path, events_per_batch: int, warm: int, measured: int) -> float:
    """Start the layout's cluster and application, return the saturated events/s of the bare operators."""
    from jobs.topology import load_topology

    cluster = StandaloneCluster(state_dir=work / "cluster", port=free_port(), ui_port=free_port(),
                                worker_cores=layout.worker_cores, worker_memory=WORKER_MEMORY)
    spark = None
    try:
        cluster.start(workers=layout.workers)
        spark = _session(cluster.master_url, layout, f"multilevel-{layout.level}")
        _wait_for_cores(spark, layout.max_cores)
        topology = load_topology("default")
        degrees = {op: layout.degree for op in topology.names}
        total = events_per_batch * (warm + measured + 2)
        spec_json = json.dumps(_constant_workload(total // 10, 10))
        anchor_us = int((time.time() - 3600) * 1e6)
        out = work / "sink"

        def bare(df, batch_id):
            commit_batch(out, batch_id, apply_query(df, topology_query(topology), degrees).toArrow())

        return _saturated_rate(spark, bare, spec_json, anchor_us, events_per_batch, warm, measured,
                               work / f"ckpt-{time.monotonic_ns()}")
    finally:
        if spark is not None:
            spark.stop()
        cluster.stop()


def characterise(events_per_batch: int, warm: int, measured: int, log=print) -> pd.DataFrame:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for level in dict.fromkeys(layout.level for layout in layouts()):
            level_layouts = [layout for layout in layouts() if layout.level == level]
            for layout in [*level_layouts, level_layouts[0]]:  # the first again at the end: the drift
                rate = measure(layout, work, events_per_batch, warm, measured)
                rows.append({"level": level, "configuration": layout.label, "workers": layout.workers,
                             "worker_cores": layout.worker_cores, "executor_cores": layout.executor_cores,
                             "cores": layout.max_cores, "degree": layout.degree, "events_per_s": rate})
                log(f"  {level:<19} {layout.label:<40} {rate:9.0f} events/s")
    table = pd.DataFrame(rows)
    firsts = table.groupby("level", sort=False)["events_per_s"].transform("first")
    table["ratio_to_first"] = table["events_per_s"] / firsts
    repeated = table.duplicated(["level", "configuration"], keep="first")
    table["drift_check"] = repeated
    return table


def log_to_mlflow(table: pd.DataFrame, tracking_uri: str, params: dict) -> str:
    import mlflow
    from mlflow.tracking import MlflowClient

    from jobs.recording.recorder import ensure_experiment

    mlflow.set_tracking_uri(tracking_uri)
    # created as every experiment of the project is: artifacts under .local with the embedded store, not ./mlruns
    mlflow.set_experiment(experiment_id=ensure_experiment(MlflowClient(tracking_uri), "characterisation",
                                                          tracking_uri))
    with mlflow.start_run(run_name=f"multilevel-{time.strftime('%Y%m%d-%H%M%S')}",
                          tags={"kind": "characterisation", "benchmark": "multilevel"}) as run:
        mlflow.log_params(params)
        for i, row in table[~table["drift_check"]].reset_index(drop=True).iterrows():
            key = f"{row['level']}.{i}"
            mlflow.log_metric(f"{key}.events_per_s", row["events_per_s"])
            mlflow.log_metric(f"{key}.ratio_to_first", row["ratio_to_first"])
        mlflow.log_table(table, "multilevel.json")
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "multilevel.csv"
            table.to_csv(path, index=False)
            mlflow.log_artifact(str(path))
        return run.info.run_id


def main(argv: list[str] | None = None) -> int:
    from jobs.recording.recorder import default_tracking_uri

    p = argparse.ArgumentParser(prog="python -m benchmarks.multilevel", description=__doc__.split("\n\n")[0])
    p.add_argument("--events-per-batch", type=int, default=12_000)
    p.add_argument("--warm", type=int, default=2, help="batches discarded per configuration (default 2)")
    p.add_argument("--measured", type=int, default=5, help="batches measured per configuration (default 5)")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--csv", type=Path, help="also write the table here (docs/multilevel.csv)")
    args = p.parse_args(argv)
    print(f"multi-level characterisation on {os.cpu_count()} cores, {args.events_per_batch} events per batch")
    table = characterise(args.events_per_batch, args.warm, args.measured)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    run_id = log_to_mlflow(table, args.tracking_uri or default_tracking_uri(),
                           {"events_per_batch": args.events_per_batch, "warm": args.warm, "measured": args.measured,
                            "machine_cores": os.cpu_count()})
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.csv, index=False)
    print(f"logged to MLflow run {run_id} (experiment characterisation)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
