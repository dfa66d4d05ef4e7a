"""Starting a native query on the replay source: the user's DataFrame over the replayed events, into the sink, on
the run's trigger, checkpointed. One definition for the run, the tests and the restart benchmark."""
from __future__ import annotations

import time
from pathlib import Path

from jobs.native.query import NativeQuery, NativeQueryError, Workload


def start_native_stream(spark, native: NativeQuery, workload: Workload, sink, checkpoint: Path, trigger_s: float,
                        hold_file: Path, anchor_file: Path | None = None, anchor_us: int | None = None,
                        source_partitions: int = 2, max_events_per_batch: int | None = None,
                        name: str | None = None):
    """Start the query (Spark analyses it here: an output mode it does not support raises) and wait until its
    sources are initialised. The anchor (schedule time 0) is given, or read by the source from `anchor_file` once
    written."""
    reader = (spark.readStream.format("workload_replay").option("spec", workload.spec.to_json())
              .option("schedule_state", workload.schedule_state).option("hold_file", str(hold_file))
              .option("partitions", str(source_partitions)))
    reader = reader.option("anchor_us", str(anchor_us)) if anchor_us else reader.option("anchor_file", str(anchor_file))
    if max_events_per_batch:
        reader = reader.option("max_events_per_batch", str(max_events_per_batch))
    df, mode = native.define(reader.load(), workload)
    writer = (df.writeStream.outputMode(mode).foreachBatch(sink).trigger(processingTime=f"{trigger_s} seconds")
              .option("checkpointLocation", str(checkpoint)))
    if name:
        writer = writer.queryName(name)
    try:
        query = writer.start()
    except Exception as exc:  # Spark's analysis of the query: an output mode it does not support, ...
        if type(exc).__name__ in SPARK_REFUSALS:
            raise NativeQueryError(f"--spark-query {native.ref}: Spark refuses the query: "
                                   f"{_first_line(exc)}") from None
        raise
    wait_until_started(query)
    return query


SPARK_REFUSALS = ("AnalysisException", "IllegalArgumentException", "PySparkTypeError", "PySparkValueError")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:500]


def wait_until_started(query, timeout_s: float = 120.0) -> None:
    """Block until the query has initialised its sources: from then on it plans batches. Not until it waits for
    data, as at a run's start: after a restart there is a backlog, and reading it is the first batch's work."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not query.isActive:
            query.awaitTermination()  # raises the query's exception
            raise RuntimeError("the streaming query stopped as it started")
        if query.status.get("message") != "Initializing sources" or query.lastProgress is not None:
            return
        time.sleep(0.01)
    raise TimeoutError(f"streaming query not started after {timeout_s:.0f}s (status: {query.status})")


def replayed_query(spark, native: NativeQuery, schedule, folder: Path, trigger_s: float, anchor_us: int,
                   max_events_per_batch: int | None = None):
    """The query over a schedule at a fixed anchor, its checkpoint, hold file and sink in `folder`, not started:
    (RestartingQuery, NativeSink). What the tests, the restart benchmark and the fault cases drive."""
    from jobs.native.rescale import RestartingQuery
    from jobs.native.sink import NativeSink

    folder = Path(folder)
    workload = Workload(schedule.spec, schedule.state())
    checkpoint, hold = folder / "checkpoint", folder / "hold"
    sink = NativeSink(folder / "sink", checkpoint, schedule)
    sink.anchor_us = anchor_us

    def start():
        return start_native_stream(spark, native, workload, sink, checkpoint, trigger_s, hold, anchor_us=anchor_us,
                                   max_events_per_batch=max_events_per_batch)

    return RestartingQuery(spark, start, checkpoint, hold, sink.wait_for_batch_after,
                           total_events=schedule.total_events), sink


def run_until(query, sink, events: int, timeout_s: float = 120.0) -> None:
    """Wait until the batches committed hold `events` events; TimeoutError when no batch commits in `timeout_s`."""
    while sink.events_done < events:
        if query.next_batch(sink.last_batch[0] if sink.last_batch else None, timeout_s) is None:
            raise TimeoutError(f"no batch committed in {timeout_s:.0f} s")
