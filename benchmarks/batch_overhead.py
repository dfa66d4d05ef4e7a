"""What one micro-batch costs before any operator work, and where that time goes.

    python -m benchmarks.batch_overhead            about 3 minutes on a 2-core machine

In one Spark session, alternating in ABBA order so drift on a shared machine hits both alike, it runs paced
queries (trigger interval, constant arrivals) of:

- **project**: the experiment's own batch function (`jobs.batch.BatchProcessor`: the four operators at a fixed
  degree with no declared cost, the exactly-once sink, accumulators, the control loop, asynchronous MLflow logging
  to a throw-away SQLite store) on the replay source;
- **bare**: a `foreachBatch` doing three repartitions and a count, on the same replay source and degree — the
  least a Structured Streaming job with repartitioned stages costs on this machine;
- **python-stages**: the bare query with the project's stage shape (two pass-through Python `mapInArrow` stages,
  after a round-robin and a keyed repartition): what Spark itself charges for Python operator stages, so that the
  project's own share shows apart from it.

It prints the per-batch fixed overhead (median trigger execution time, project ÷ bare, and project ÷
python-stages) and a breakdown of the
project's batch measured with Spark's own means: the query progress' `durationMs` (offsets, planning, WAL, the
batch function, commit), the batch function's own clock (operators job vs. control and logging afterwards) and,
through the Spark UI's REST API, each stage of the operators job (its wall time, the tasks' deserialisation, run
and scheduler delay, and for operator stages the time inside the operator's Python function, from the
accumulators — the rest of a task's run time is the Python worker's start and the data transfer).

With --with-foundation it also runs the two ratios kept from `benchmarks.foundation` (instrumented ÷ bare
maximum sustainable throughput; replay source ÷ Spark's JVM rate source and ÷ a minimal Arrow source), so the
four numbers the per-batch overhead is judged by (docs/benchmarks.md) come from one command.

Ratios, not absolute seconds, are the result: the machine is shared and noisy. Never run this next to another
heavy job.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

from benchmarks import foundation
from benchmarks.foundation import _constant_workload, _stop_quietly, instrumented_processor
from jobs.config import RunConfig
from jobs.operators import chains

SPARK_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


class _Clocked:
    """Wraps a foreachBatch function: when each call started and ended (perf counter and epoch)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.calls: dict[int, tuple[float, float]] = {}

    def __call__(self, df, batch_id: int) -> None:
        start = time.time()
        self.fn(df, batch_id)
        self.calls[batch_id] = (start, time.time())


def paced_query(spark, fn: Callable, spec_json: str, trigger_s: float, batches: int, checkpoint: Path,
                anchor_us: int) -> tuple[_Clocked, list[dict[str, Any]]]:
    """Run `fn` as the foreachBatch of a replay query on its trigger until `batches` batches carried events, the
    schedule's time 0 at `anchor_us` (epoch microseconds); returns the clock and the progress events (as dicts)."""
    clocked = _Clocked(fn)
    stream = (spark.readStream.format("workload_replay").option("spec", spec_json)
              .option("anchor_us", str(anchor_us)).option("partitions", "2").load())
    query = (stream.writeStream.foreachBatch(clocked).trigger(processingTime=f"{trigger_s} seconds")
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        while sum(1 for p in query.recentProgress if p.numInputRows > 0) < batches:
            if query.awaitTermination(0.1):
                raise RuntimeError(f"benchmark query stopped: {query.exception()}")
        progress = [json.loads(p.json) for p in query.recentProgress if p.numInputRows > 0]
    finally:
        _stop_quietly(spark, query)
    return clocked, progress


# ---- the Spark UI's REST API: stage and task times of a job group ----------------------------------------------
def _epoch(text: str) -> float:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%Z").replace(tzinfo=dt.timezone.utc).timestamp()


class SparkUI:
    """Reads jobs, stages and tasks from the running application's REST API (what the Spark UI shows)."""

    def __init__(self, sc):
        self.base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.base}/{path}", timeout=30) as response:
            return json.load(response)

    def group_stages(self, jobs: list[dict], group: str, start: float, end: float) -> list[dict[str, Any]]:
        """The completed stages of a job group's jobs submitted between `start` and `end` (epoch seconds: every
        query numbers its batches from 0, so a group's name recurs), in order, with their wall time and task-level
        means."""
        out = []
        for job in jobs:
            if job.get("jobGroup") != group or not start - 0.01 <= _epoch(job["submissionTime"]) <= end + 0.01:
                continue
            for stage_id in sorted(job["stageIds"]):
                for stage in self.get(f"stages/{stage_id}"):
                    if stage.get("status") != "COMPLETE":
                        continue
                    tasks = self.get(f"stages/{stage_id}/{stage['attemptId']}/taskList?length=1000")
                    n = max(1, len(tasks))
                    out.append({
                        "stage_id": stage_id, "tasks": len(tasks),
                        "submitted": _epoch(stage["submissionTime"]), "completed": _epoch(stage["completionTime"]),
                        "deserialise_ms": sum(t["taskMetrics"]["executorDeserializeTime"] for t in tasks) / n,
                        "run_ms": sum(t["taskMetrics"]["executorRunTime"] for t in tasks) / n,
                        "scheduler_delay_ms": sum(t.get("schedulerDelay", 0) for t in tasks) / n,
                        "job_submitted": _epoch(job["submissionTime"]),
                        "job_completed": _epoch(job["completionTime"]),
                    })
        return sorted(out, key=lambda s: s["stage_id"])


# ---- the two variants --------------------------------------------------------------------------------------------
def bare_variant(degree: int) -> Callable:
    def bare(df, batch_id):
        df.repartition(degree).repartition(degree).repartition(degree).count()

    return bare


def _identity(batches):
    yield from batches


def python_stages_variant(degree: int) -> Callable:
    """The bare query with the project's stage shape at one degree: two Python (mapInArrow) stages that pass their
    input through, after a round-robin and a keyed repartition. What it costs beyond `bare` is Spark's price of a
    Python operator stage; what the project costs beyond it is the project's own."""
    def python_stages(df, batch_id):
        out = df.repartition(degree).mapInArrow(_identity, df.schema)
        out.repartition(degree, "key").mapInArrow(_identity, df.schema).count()

    return python_stages


# ---- one comparison ------------------------------------------------------------------------------------------------
def measure(spark, work: Path, rate: int, degree: int, trigger_s: float, batches: int, rounds: int,
            chaining: bool = True) -> dict:
    duration = int((batches + 10) * trigger_s * (rounds + 1)) + 30
    config = RunConfig(controller="static", controller_params={"degree": degree},
                       workload=_constant_workload(rate, duration), topology="zero-cost", trigger_s=trigger_s,
                       chain_operators=chaining, tracking_uri=f"sqlite:///{work / 'mlflow.db'}",
                       experiment="benchmarks", quiet=True).validate()
    spec_json = config.spec.to_json()
    ui = SparkUI(spark.sparkContext)
    variants = ("project", "bare", "python-stages")
    per_variant: dict[str, list[float]] = {v: [] for v in variants}
    ratios, python_ratios, project_batches = [], [], []

    def run(variant: str, r: int) -> float:
        anchor_us = int((time.time() + 1.0) * 1e6)  # events start arriving a second after the query is defined
        if variant != "project":
            fn = bare_variant(degree) if variant == "bare" else python_stages_variant(degree)
            clocked, progress = paced_query(spark, fn, spec_json, trigger_s, batches,
                                            work / "checkpoints" / f"{variant}-{r}", anchor_us)
        else:
            processor, recorder = instrumented_processor(spark, config, work / f"sink-{r}",
                                                         f"bench-batch-overhead-{r}", "batch-overhead")
            processor.anchor_us = anchor_us  # latencies are measured from the schedule's time 0
            clocked, progress = paced_query(spark, processor, spec_json, trigger_s, batches,
                                            work / "checkpoints" / f"project-{r}", anchor_us)
            processor.close()
            recorder.flush()
            recorder.finish()
            project_batches.append((processor, clocked, progress))
        skip = min(2, len(progress) - 1)  # the first batches of a query pay its start-up
        return statistics.median(p["durationMs"]["triggerExecution"] for p in progress[skip:]) / 1000

    run("bare", -1)  # the first query of a session is slower whatever it runs
    for r in range(rounds):
        # ABC, then CBA: a slow drift of the machine affects every variant alike
        order = variants if r % 2 == 0 else tuple(reversed(variants))
        now = {}
        for variant in order:
            now[variant] = run(variant, r)
            per_variant[variant].append(now[variant])
            print(f"  round {r + 1}/{rounds}: {variant:<13} median batch {now[variant] * 1000:6.0f} ms", flush=True)
        ratios.append(now["project"] / now["bare"])
        python_ratios.append(now["project"] / now["python-stages"])
    breakdown = project_breakdown(ui, project_batches)
    return {"rate": rate, "degree": degree, "trigger_s": trigger_s, "batches": batches,
            "project_batch_s": statistics.median(per_variant["project"]),
            "bare_batch_s": statistics.median(per_variant["bare"]),
            "python_stages_batch_s": statistics.median(per_variant["python-stages"]),
            "ratio": statistics.median(ratios), "ratios": ratios,
            "ratio_to_python_stages": statistics.median(python_ratios), "ratios_to_python_stages": python_ratios,
            "rounds": per_variant, "breakdown": breakdown}


def project_breakdown(ui: SparkUI, runs: list) -> dict[str, float]:
    """Median milliseconds per batch of each part of the project's batch, over every measured batch of every run."""
    jobs = ui.get("jobs?status=succeeded")
    parts: dict[str, list[float]] = {}

    def add(name: str, ms: float) -> None:
        parts.setdefault(name, []).append(ms)

    for processor, clocked, progress in runs:
        rows = {row["spark_batch_id"]: row for row in processor.rows}
        for p in progress[2:]:
            b = int(p["batchId"])
            if b not in rows or b not in clocked.calls:
                continue
            d = p["durationMs"]
            for phase in SPARK_PHASES:
                add(f"spark.{phase}", float(d.get(phase, 0)))
            add("spark.triggerExecution", float(d["triggerExecution"]))
            add("spark.other (trigger - phases)", d["triggerExecution"] - sum(d.get(k, 0) for k in SPARK_PHASES))
            call_start, call_end = clocked.calls[b]
            row = rows[b]
            batch_start = row["start_s"] + processor.anchor_us / 1e6
            batch_end = batch_start + row["batch_duration_s"]
            add("batch fn: operators job (build, run, sink commit)", row["batch_duration_s"] * 1000)
            add("batch fn: metrics, control loop, logging", (call_end - batch_end) * 1000)
            stages = ui.group_stages(jobs, f"replay-batch-{b}", batch_start, batch_end)
            if not stages:
                continue
            add("  job: driver planning before the first job", (stages[0]["job_submitted"] - batch_start) * 1000)
            last_job_end = max(s["job_completed"] for s in stages)
            add("  job: after the last job (sink commit, driver)", (batch_end - last_job_end) * 1000)
            stages_of = ["+".join(op.name for op in chain) for chain in
                         chains(processor.query, processor.degrees.degrees, processor.config.chain_operators)]
            names = (["source read"] + stages_of if len(stages) == len(stages_of) + 1
                     else [f"stage {i}" for i in range(len(stages))])
            for name, stage in zip(names, stages):
                add(f"  stage, {name}: wall", (stage["completed"] - stage["submitted"]) * 1000)
                add(f"    {name}: task deserialise", stage["deserialise_ms"])
                add(f"    {name}: task run", stage["run_ms"])
                add(f"    {name}: scheduler delay", stage["scheduler_delay_ms"])
                if name in stages_of:
                    # busy time is accumulated over the stage's tasks, per operator
                    inside = sum(row[f"busy_s_{op}"] for op in name.split("+")) / stage["tasks"] * 1000
                    add(f"    {name}: inside the operators' functions", inside)
                    add(f"    {name}: rest of the run (worker hand-over, Arrow)", stage["run_ms"] - inside)
            gaps = sum(stages[i + 1]["submitted"] - stages[i]["completed"] for i in range(len(stages) - 1))
            add("  job: between stages", gaps * 1000)
    return {name: statistics.median(values) for name, values in parts.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.batch_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--rate", type=int, default=3000, help="constant arrivals, events/s (default 3000)")
    p.add_argument("--degree", type=int, default=2, help="every operator's degree, and the bare query's (default 2)")
    p.add_argument("--trigger", type=float, default=1.0, help="trigger interval, seconds (default 1)")
    p.add_argument("--batches", type=int, default=20, help="measured batches per query (default 20)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    p.add_argument("--no-chaining", dest="chaining", action="store_false",
                   help="give every operator its own stage in the project's job (jobs.run --no-chaining)")
    p.add_argument("--with-foundation", action="store_true",
                   help="also measure the throughput and source ratios of benchmarks.foundation")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = p.parse_args(argv)

    from jobs.spark_session import PACKAGES, package_code, start_spark

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-batch-overhead-") as tmp:
        work = Path(tmp)
        config = RunConfig(controller="static", controller_params={}, workload="constant", quiet=True).validate()
        spark = start_spark(config, package_code(work / "code.zip", PACKAGES + ("benchmarks",)))
        try:
            print("per-batch overhead: project vs bare foreachBatch, paced, alternating...", flush=True)
            results["overhead"] = measure(spark, work, args.rate, args.degree, args.trigger, args.batches,
                                          args.rounds, args.chaining)
            if args.with_foundation:
                print("throughput: instrumented vs same operators bare, saturated, alternating...", flush=True)
                # a folder of its own: its queries' checkpoint names would resume this benchmark's queries
                (work / "foundation").mkdir()
                results["throughput"] = foundation.overhead(spark, work / "foundation", 4, 24_000, args.rounds + 1,
                                                            warm=2, measured=6)
                print("source rate: rate-micro-batch, minimal Arrow source, replay, alternating...", flush=True)
                results["source"] = foundation.source_rate(spark, work / "foundation",
                                                           foundation.SOURCE_ROWS_PER_BATCH, args.rounds + 1,
                                                           warm=2, measured=5)
        finally:
            spark.stop()

    ov = results["overhead"]
    print()
    print(f"breakdown of the project's batch (median ms per batch over {ov['batches']} batches x "
          f"{len(ov['rounds']['project'])} runs; zero-cost operators at degree {ov['degree']}, {ov['rate']} events/s, "
          f"trigger {ov['trigger_s']:g} s)")
    for name, ms in ov["breakdown"].items():
        print(f"  {name:<58} {ms:8.1f}")
    print()
    print("result                                              measured    goal")
    print(f"per-batch fixed overhead, project / bare            {ov['ratio']:6.2f}x     <= 1.5x  "
          f"(medians {ov['project_batch_s'] * 1000:.0f} vs {ov['bare_batch_s'] * 1000:.0f} ms; rounds "
          f"{', '.join(f'{x:.2f}' for x in ov['ratios'])})")
    print(f"  the same against the bare query with 2 pass-through    {ov['ratio_to_python_stages']:6.2f}x              "
          f"(median {ov['python_stages_batch_s'] * 1000:.0f} ms: Spark's price of the project's Python stages)")
    if "throughput" in results:
        th = results["throughput"]
        print(f"max sustainable throughput, instrumented / bare     {th['ratio']:6.3f}      >= 0.95  "
              f"({th['instrumented_events_per_s']:.0f} vs {th['bare_events_per_s']:.0f} events/s)")
    if "source" in results:
        src = results["source"]
        print(f"replay source / JVM rate-micro-batch source         {src['ratio']:6.3f}      >= 0.5")
        print(f"replay source / minimal Arrow Python source         {src['ratio_to_minimal']:6.3f}      >= 0.85")
        print(f"  of which the wider rows: minimal with the replay's rows / minimal  {src['wide_to_minimal']:6.3f}")
        print(f"  and the schedule: replay / minimal with the replay's rows          {src['ratio_to_minimal_wide']:6.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
