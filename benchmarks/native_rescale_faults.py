"""Faults in a native query's rescale by restart, injected for real: the promise is that whatever cut the rescale
short leaves a checkpoint that a retry resumes (jobs.native.rescale.RestartingQuery.resume), with the query's output
equal to its reference and nothing lost or duplicated (Spark's commits against the sink).

    python -m benchmarks.native_rescale_faults          the three cases (about 2 minutes); also in `make faults`

Each case runs a driver process (`--drive`) that replays a workload through `native:windowed_count` (every event due
at once, read in capped batches) on a checkpoint, and at a third of the stream starts a rescale 2 → 4 and cuts it:
  kill-between         SIGKILL after the stop, before the repartition (a driver lost between stop and start);
  kill-in-repartition  SIGKILL while the repartition's Spark job runs;
  raise-in-repartition the repartition's Spark job cancelled, twice (an exception inside the repartition, its one
                       retry failing too): the rescale fails, the driver exits 1.
A second driver process (the retry) then resumes the checkpoint and runs the stream to its end.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = {"name": "native-fault", "profile": "step", "duration_s": 12, "seed": 5,
            "params": {"low": 1000, "high": 2500, "at_s": 6}}
QUERY = "native:windowed_count"
ANCHOR_US = 1_000_000  # every event due at once
BATCH_EVENTS = 2000
FAULTS = ("kill-between", "kill-in-repartition", "raise-in-repartition")
PROMISE = "a retry resumes the checkpoint; output equals the reference, 0 lost, 0 duplicated"


def _when_a_job_runs(sc, action) -> threading.Thread:
    """Call `action` as soon as Spark runs a job (the repartition's), polled every 10 ms."""
    def watch():
        tracker = sc.statusTracker()
        while not tracker.getActiveJobsIds():
            time.sleep(0.01)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def drive(folder: Path, fault: str | None) -> int:
    """Replay the workload through the query on `folder`'s checkpoint (resuming whatever is there); with a fault,
    cut a rescale 2 → 4 at a third of the stream; without, run to the end."""
    from jobs.config import RunConfig
    from jobs.native.query import load_native_query
    from jobs.native.rescale import RescaleFailed
    from jobs.native.run import NATIVE_SETTINGS
    from jobs.native.stream import replayed_query, run_until
    from jobs.spark_session import package_code, start_spark
    from workloads.schedule import Schedule
    from workloads.spec import parse_workload

    config = RunConfig("static", {}, WORKLOAD, master="local[2]", quiet=True).validate()
    spark = start_spark(config, package_code(folder / f"code-{os.getpid()}.zip"), NATIVE_SETTINGS)
    schedule = Schedule(parse_workload(WORKLOAD, "benchmark"))
    checkpoint = folder / "checkpoint"
    query, sink = replayed_query(spark, load_native_query(QUERY), schedule, folder, 0.5, ANCHOR_US, BATCH_EVENTS)
    query.resume(2)
    run_until(query, sink, schedule.total_events // 3 if fault else schedule.total_events)
    if fault is None:
        query.settle(0.5)
        query.stop()
        return 0
    if fault == "kill-between":
        query._come_to_rest()
        query.query.stop()
        os.kill(os.getpid(), signal.SIGKILL)
    sc = spark.sparkContext
    if fault == "kill-in-repartition":
        query._come_to_rest()
        query.query.stop()
        _when_a_job_runs(sc, lambda: os.kill(os.getpid(), signal.SIGKILL))
        spark._streamingCheckpointManager.repartition(str(checkpoint), 4)
        return 3  # not reached: the process is killed inside the repartition
    # raise-in-repartition: once the query has stopped, every job is cancelled (each repartition attempt's); a
    # batch the query still runs before its stop (one without data, advancing the watermark) is left alone
    cancelling = threading.Event()
    cancelling.set()

    def cancel_every_job():
        tracker = sc.statusTracker()
        while cancelling.is_set():
            if not query.query.isActive and tracker.getActiveJobsIds():
                sc.cancelAllJobs()
            time.sleep(0.01)

    canceller = threading.Thread(target=cancel_every_job, daemon=True)
    canceller.start()
    try:
        query.rescale(4)
    except RescaleFailed as exc:
        print(f"rescale failed: {exc}", flush=True)
        return 1
    finally:
        cancelling.clear()
        canceller.join()
    return 3


def _driver(folder: Path, fault: str | None, timeout_s: float = 300) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "benchmarks.native_rescale_faults", "--drive", str(folder)]
    if fault:
        args += ["--fault", fault]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)


def check(folder: Path) -> tuple[bool, str]:
    """Whether the committed output equals the reference with nothing lost or duplicated, and the figures."""
    import pandas as pd

    from jobs.sink_check import committed_from_checkpoint, read_output, verify_output
    from queries.native import windowed_count_reference
    from workloads.schedule import Schedule
    from workloads.spec import parse_workload

    schedule = Schedule(parse_workload(WORKLOAD, "benchmark"))
    _, lost, duplicated = verify_output(folder / "sink", committed_from_checkpoint(folder / "checkpoint"),
                                        counts_events=None)
    rows = read_output(folder / "sink").to_pandas()
    events = schedule.events(0, schedule.total_events)
    arrival_us = pd.Series(events.arrival_us + ANCHOR_US)
    expected = windowed_count_reference(arrival_us, pd.Series(events.key))
    expected = expected[expected["window_start"] + 5_000_000 <= arrival_us.max() - 2_000_000]
    starts = pd.to_datetime(rows["window_start"], utc=True)
    got = rows.assign(window_start=(starts - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(microseconds=1))
    key = ["window_start", "key", "events"]
    same = (got[key].astype("int64").sort_values(key, ignore_index=True)
            .equals(expected[key].astype("int64").sort_values(key, ignore_index=True)))
    return same and lost == duplicated == 0, (f"{len(got)} rows, {'equal to' if same else 'DIFFERENT from'} the "
                                              f"reference ({len(expected)}); lost {lost}, duplicated {duplicated}")


def case(fault: str):
    """A fault-suite case (benchmarks.faults.Outcome): the fault, then the retry, then the check."""
    def run(scratch: Path):
        from benchmarks.faults import Outcome

        started = time.monotonic()
        cut = _driver(scratch, fault)
        expected_code = 1 if fault == "raise-in-repartition" else -signal.SIGKILL
        retry = _driver(scratch, None)
        held, figures = check(scratch) if retry.returncode == 0 else (False, retry.stderr.strip()[-300:])
        said = [line for line in cut.stdout.splitlines() if line.startswith("rescale failed")]
        return Outcome(f"native query: {fault.replace('-', ' ')}", PROMISE,
                       held and cut.returncode == expected_code, cut.returncode, len(said),
                       said[-1] if said else "", f"retry exit {retry.returncode}; {figures}",
                       time.monotonic() - started)
    return run


def cases():
    return [(f"native query: {fault.replace('-', ' ')}", case(fault)) for fault in FAULTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.native_rescale_faults",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--drive", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--fault", choices=FAULTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        return drive(Path(args.drive), args.fault)
    import tempfile

    broken = 0
    for name, run in cases():
        with tempfile.TemporaryDirectory(prefix="native-fault-") as scratch:
            outcome = run(Path(scratch))
        broken += not outcome.held
        print(f"{'held' if outcome.held else 'BROKEN'}  {name}: exit {outcome.exit_code}; {outcome.runs} "
              f"({outcome.took_s:.0f} s)", flush=True)
    return 1 if broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
