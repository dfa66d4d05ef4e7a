"""Foundation benchmarks: what the measuring apparatus itself costs, measured side by side in one invocation.

    python -m benchmarks.foundation            (or: make bench)   about 4 minutes on a 2-core machine

Prints three results (docs/benchmarks.md records them with the machine they were taken on):

1. Reconfiguration delay, in batches: a scripted controller changes degrees after known batches of a real run;
   the delay is counted from the decision to the first batch whose Spark stages ran with the new number of tasks
   (read from Spark's status tracker, not assumed). Goal: <= 1.
2. Overhead of instrumentation + control loop: the highest sustainable input rate of the instrumented job (the
   experiment's own foreachBatch: accumulators, status tracker, listener, control loop, asynchronous MLflow
   logging) divided by that of the same operators at the same fixed degrees with none of it. Both run saturated:
   the source always has a backlog and admits a fixed number of events per batch, batches run back to back, so
   events per second of wall time is the rate the job can sustain at that batch size (24,000 events take about
   the default 2 s trigger interval at degree 4). Each round runs both, in ABBA order so drift on a shared machine
   hits both alike; the result is the median of the rounds' ratios. Goal: >= 0.95.
3. Source rate: the replay source (keys, payloads, arrival times, as Arrow) into Spark's `noop` sink, against
   Spark's built-in `rate-micro-batch` source (the `rate` source without its rows-per-second cap, so it serves as
   fast as it can) and a minimal Arrow-producing Python source (benchmarks/minimal_source.py), all with the same
   rows per batch and partitions, alternating. Goal: ours >= 0.5x theirs and >= 1e6 events/s.

Ratios, not absolute seconds, are the result: the machine is shared and noisy. Never run this next to another
heavy job (an experiment, the test suite).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from controllers.loop import ControlLoop
from jobs.config import RunConfig
from jobs.operators import apply_query, topology_query
from jobs.sink import commit_batch

SOURCE_ROWS_PER_BATCH = 2_000_000


def _constant_workload(rate: int, duration_s: int, seed: int = 7) -> dict:
    return {"name": f"bench-constant-{rate}", "profile": "constant", "params": {"rate": rate},
            "duration_s": duration_s, "seed": seed, "keys": {"count": 1000}, "payload_bytes": 32}


# ---- 1. reconfiguration delay ----------------------------------------------------------------------------------
def reconfiguration_delay(work: Path, duration_s: float) -> dict:
    """A real experiment run with degree changes after batches 2, 5 and 8; the summary's delay is measured."""
    from jobs.experiment import run_experiment

    changes = {2: {"enrich": 3, "aggregate": 2}, 5: {"parse": 2, "enrich": 2}, 8: {"aggregate": 1, "sink": 2}}
    config = RunConfig(
        controller="scripted", controller_params={"changes": changes}, workload="constant", duration_s=duration_s,
        seed=1, tracking_uri=f"sqlite:///{work / 'mlflow.db'}", experiment="benchmarks",
        run_name="bench-reconfiguration", output_dir=str(work / "reconfiguration"), quiet=True,
    ).validate()
    summary = run_experiment(config, log=lambda line: None)
    return {
        "decisions": int(summary["scaling_actions"]),
        "delay_mean_batches": summary["reconfiguration_delay_batches_mean"],
        "delay_max_batches": summary["reconfiguration_delay_batches_max"],
        "records_lost": summary["records_lost"], "records_duplicated": summary["records_duplicated"],
    }


# ---- 2. overhead of instrumentation + control loop ------------------------------------------------------------
class _Timed:
    """Wraps a foreachBatch function and records when each batch ended: the same clock for both variants."""

    def __init__(self, fn):
        self.fn = fn
        self.ends: list[float] = []

    def __call__(self, df, batch_id):
        self.fn(df, batch_id)
        self.ends.append(time.perf_counter())


def _saturated_rate(spark, fn, spec_json: str, anchor_us: int, events_per_batch: int, warm: int, measured: int,
                    checkpoint: Path, listener=None) -> float:
    timed = _Timed(fn)
    if listener is not None:
        spark.streams.addListener(listener)
    stream = (spark.readStream.format("workload_replay").option("spec", spec_json)
              .option("anchor_us", str(anchor_us)).option("partitions", "2")
              .option("max_events_per_batch", str(events_per_batch)).load())
    query = stream.writeStream.foreachBatch(timed).option("checkpointLocation", str(checkpoint)).start()
    try:
        while len(timed.ends) < warm + measured:
            if query.awaitTermination(0.1):
                raise RuntimeError(f"benchmark query stopped: {query.exception()}")
    finally:
        _stop_quietly(spark, query)
        if listener is not None:
            spark.streams.removeListener(listener)
    ends = timed.ends[warm - 1: warm + measured]
    return events_per_batch * (len(ends) - 1) / (ends[-1] - ends[0])


def instrumented_processor(spark, config: RunConfig, sink: Path, run_name: str, benchmark: str):
    """The experiment's own batch function for `config`'s controller, recording to `config`'s MLflow store as a
    real run would (the benchmarks' instrumented variant): (processor, recorder). The caller sets the anchor and,
    after its query, closes the processor and finishes the recorder."""
    import controllers
    from jobs.actuators import DegreeActuator, RunActuators
    from jobs.batch import BatchProcessor
    from jobs.recording.recorder import RunRecorder
    from workloads import Schedule

    controller = controllers.build_controller(config.controller, config.controller_params, config.topo.names,
                                              config.max_degree)
    actuators = RunActuators(DegreeActuator(controller.initial_degrees()))
    recorder = RunRecorder(config.tracking_uri, config.experiment, run_name, tags={"benchmark": benchmark})
    processor = BatchProcessor(config, spark, Schedule(config.spec), ControlLoop(controller, actuators.chain), sink,
                               recorder, progress=lambda row: None, actuators=actuators)
    return processor, recorder


def overhead(spark, work: Path, degree: int, events_per_batch: int, rounds: int, warm: int, measured: int) -> dict:
    from jobs.metrics import ProgressListener

    total = events_per_batch * (warm + measured + 2)
    config = RunConfig(
        controller="static", controller_params={"degree": degree}, workload=_constant_workload(total // 10, 10),
        tracking_uri=f"sqlite:///{work / 'mlflow.db'}", experiment="benchmarks", quiet=True,
    ).validate()
    spec_json = config.spec.to_json()
    topology = config.topo
    degrees = {op: degree for op in topology.names}
    anchor_us = int((time.time() - 3600) * 1e6)  # every event is due: the source always has a backlog

    def bare(df, batch_id):
        commit_batch(work / "bare", batch_id, apply_query(df, topology_query(topology), degrees).toArrow())

    def instrumented_rate(r: int) -> float:
        processor, recorder = instrumented_processor(spark, config, work / f"sink-{r}", f"bench-overhead-{r}",
                                                     "overhead")
        processor.anchor_us = anchor_us
        rate = _saturated_rate(spark, processor, spec_json, anchor_us, events_per_batch, warm, measured,
                               work / f"ckpt-instrumented-{r}", listener=ProgressListener())
        processor.close()
        recorder.flush()
        recorder.finish()
        return rate

    def bare_rate(r: int) -> float:
        return _saturated_rate(spark, bare, spec_json, anchor_us, events_per_batch, warm, measured,
                               work / f"ckpt-bare-{r}")

    # The first query of a session is slower whatever it runs (JIT, worker start-up): a discarded one goes first.
    bare_rate(-1)
    rates: dict[str, list[float]] = {"instrumented": [], "bare": []}
    ratios = []
    for r in range(rounds):
        # ABBA order: a slow drift of the machine affects both variants alike
        order = ("instrumented", "bare") if r % 2 == 0 else ("bare", "instrumented")
        measured_now = {}
        for variant in order:
            measured_now[variant] = instrumented_rate(r) if variant == "instrumented" else bare_rate(r)
            rates[variant].append(measured_now[variant])
            print(f"  overhead round {r + 1}/{rounds}: {variant:<12} {measured_now[variant]:9.0f} events/s", flush=True)
        ratios.append(measured_now["instrumented"] / measured_now["bare"])
    return {"degree": degree, "events_per_batch": events_per_batch,
            "instrumented_events_per_s": statistics.median(rates["instrumented"]),
            "bare_events_per_s": statistics.median(rates["bare"]), "ratio": statistics.median(ratios),
            "ratios": ratios, "rounds": rates}


def _stop_quietly(spark, query) -> None:
    """Stopping a query mid-batch makes Spark log the cancelled write as errors; they are expected here."""
    spark.sparkContext.setLogLevel("OFF")
    try:
        query.stop()
    finally:
        spark.sparkContext.setLogLevel("ERROR")


# ---- 3. source rate ----------------------------------------------------------------------------------------------
def _noop_rate(spark, stream, warm: int, measured: int, checkpoint: Path) -> float:
    """Rows per second of trigger execution time, over `measured` batches after `warm` ones, into the noop sink
    (which consumes every row and keeps nothing: a count sink without the count)."""
    query = stream.writeStream.format("noop").option("checkpointLocation", str(checkpoint)).start()
    try:
        while len([p for p in query.recentProgress if p.numInputRows > 0]) < warm + measured:
            if query.awaitTermination(0.1):
                raise RuntimeError(f"benchmark query stopped: {query.exception()}")
        progress = [p for p in query.recentProgress if p.numInputRows > 0][warm: warm + measured]
    finally:
        _stop_quietly(spark, query)
    rows = sum(p.numInputRows for p in progress)
    seconds = sum(p.durationMs["triggerExecution"] for p in progress) / 1000
    return rows / seconds


def source_rate(spark, work: Path, rows_per_batch: int, rounds: int, warm: int, measured: int) -> dict:
    total = rows_per_batch * (warm + measured + 4)
    spec_json = json.dumps(_constant_workload(total // 10, 10))
    anchor_us = int((time.time() - 3600) * 1e6)
    from benchmarks.minimal_source import MinimalArrowSource

    spark.dataSource.register(MinimalArrowSource)
    # minimal_arrow_wide: the minimal source serving the replay source's schema (benchmarks/minimal_source.py), so
    # the replay source's loss against the minimal one splits into its rows' width and its schedule's computation
    variants = ("rate-micro-batch", "minimal_arrow", "minimal_arrow_wide", "replay")
    rates: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        for variant in variants:
            if variant == "replay":
                stream = (spark.readStream.format("workload_replay").option("spec", spec_json)
                          .option("anchor_us", str(anchor_us)).option("partitions", "2")
                          .option("max_events_per_batch", str(rows_per_batch)).load())
            elif variant == "minimal_arrow_wide":
                stream = (spark.readStream.format("minimal_arrow").option("rowsPerBatch", rows_per_batch)
                          .option("numPartitions", 2).option("shape", "replay").option("payloadBytes", 32).load())
            else:  # same options for Spark's JVM source and the minimal Python one
                stream = (spark.readStream.format(variant).option("rowsPerBatch", rows_per_batch)
                          .option("numPartitions", 2).load())
            rate = _noop_rate(spark, stream, warm, measured, work / f"ckpt-src-{variant}-{r}")
            rates[variant].append(rate)
            print(f"  source round {r + 1}/{rounds}: {variant:<17} {rate:11.0f} events/s", flush=True)
    ours = statistics.median(rates["replay"])
    theirs = statistics.median(rates["rate-micro-batch"])
    minimal = statistics.median(rates["minimal_arrow"])
    wide = statistics.median(rates["minimal_arrow_wide"])
    return {"rows_per_batch": rows_per_batch, "replay_events_per_s": ours, "rate_source_events_per_s": theirs,
            "minimal_python_events_per_s": minimal, "minimal_wide_events_per_s": wide, "ratio": ours / theirs,
            "ratio_to_minimal": ours / minimal, "ratio_to_minimal_wide": ours / wide,
            "wide_to_minimal": wide / minimal, "rounds": rates}


def generator_rate(n: int = 2_000_000) -> float:
    """The event generator alone, in this process (no Spark): the ceiling of what the source can serve."""
    from jobs.replay_source import event_batches
    from workloads import Schedule
    from workloads.spec import parse_workload

    schedule = Schedule(parse_workload(_constant_workload(n // 10, 10), source="benchmark"))
    start = time.perf_counter()
    rows = sum(b.num_rows for b in event_batches(schedule, 0, 0, n))
    return rows / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.foundation", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds per comparison (default 3)")
    p.add_argument("--degree", type=int, default=4, help="fixed degree of every operator in the overhead runs")
    p.add_argument("--events-per-batch", type=int, default=24_000, help="admitted events per batch, overhead runs")
    p.add_argument("--reconfiguration-duration", type=float, default=30.0, help="seconds of the scripted run")
    p.add_argument("--only", choices=("reconfiguration", "overhead", "source"), action="append",
                   help="run only this part (repeatable; default: all three)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = p.parse_args(argv)

    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-foundation-") as tmp:
        work = Path(tmp)
        parts = set(args.only or ("reconfiguration", "overhead", "source"))
        if "reconfiguration" in parts:
            print("1/3 reconfiguration delay (scripted run on Spark)...", flush=True)
            results["reconfiguration"] = reconfiguration_delay(work, args.reconfiguration_duration)

        config = RunConfig(controller="static", controller_params={}, workload="constant", quiet=True).validate()
        from jobs.spark_session import PACKAGES, package_code, start_spark

        spark = start_spark(config, package_code(work / "bench-code.zip", PACKAGES + ("benchmarks",)))
        try:
            if "overhead" in parts:
                print("2/3 overhead: instrumented vs bare job, saturated, alternating...", flush=True)
                results["overhead"] = overhead(spark, work, args.degree, args.events_per_batch, args.rounds,
                                               warm=2, measured=6)
            if "source" in parts:
                print("3/3 source rate: rate-micro-batch, minimal Python source, replay into noop, alternating...",
                      flush=True)
                results["source"] = source_rate(spark, work, SOURCE_ROWS_PER_BATCH, args.rounds, warm=2,
                                                measured=5)
        finally:
            spark.stop()
    results["generator_events_per_s"] = generator_rate()

    print()
    print("result                                           measured       goal")
    if "reconfiguration" in results:
        rc = results["reconfiguration"]
        print(f"reconfiguration delay, batches (mean / max)      {rc['delay_mean_batches']:.2f} / "
              f"{rc['delay_max_batches']:.0f}       <= 1     ({rc['decisions']} decisions; records lost "
              f"{rc['records_lost']}, duplicated {rc['records_duplicated']})")
    if "overhead" in results:
        ov = results["overhead"]
        print(f"overhead: instrumented / bare sustainable rate   {ov['ratio']:.3f}          >= 0.95  "
              f"(medians {ov['instrumented_events_per_s']:.0f} vs {ov['bare_events_per_s']:.0f} events/s; "
              f"{ov['events_per_batch']} events/batch, degree {ov['degree']})")
        print(f"  per-round ratios: {', '.join(f'{x:.3f}' for x in ov['ratios'])}")
    if "source" in results:
        src = results["source"]
        print(f"source: replay / rate-micro-batch (JVM)          {src['ratio']:.3f}          >= 0.5   "
              f"({src['replay_events_per_s']:.3g} vs {src['rate_source_events_per_s']:.3g} events/s)")
        print(f"source: replay / minimal Arrow Python source     {src['ratio_to_minimal']:.3f}          >= 0.5   "
              f"({src['minimal_python_events_per_s']:.3g} events/s)")
        print(f"  replay / minimal source with the replay's rows {src['ratio_to_minimal_wide']:.3f}                   "
              f"(the schedule's price; the wider rows alone: {src['wide_to_minimal']:.3f} x the minimal rate)")
        print(f"replay source, events/s                          {src['replay_events_per_s']:.3g}        >= 1e6")
    print(f"event generator alone (no Spark), events/s       {results['generator_events_per_s']:.3g}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
