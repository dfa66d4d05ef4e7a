"""Replaying a whole workload through a native query on real Spark, fast: every event due at once (anchor in the
past), read in capped batches, the query restarted at new partition counts in between (jobs.native.rescale)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from jobs.native.query import Workload, load_native_query
from jobs.native.rescale import RestartingQuery
from jobs.native.sink import NativeSink
from jobs.native.stream import start_native_stream
from jobs.sink_check import committed_from_checkpoint, read_output, verify_output
from workloads.schedule import Schedule

ANCHOR_US = 1_000_000  # schedule time 0 at 1970-01-01 00:00:01: every event is due when the query starts


def replay(spark, ref: str, schedule: Schedule, folder: Path, partitions: list[int], batch_events: int,
           trigger_s: float = 0.5):
    """Run the whole schedule through the query, starting at partitions[0] and restarting at each next count once
    an equal share of the events is committed. Returns (output rows, restarts, (lost, duplicated))."""
    native = load_native_query(ref)
    workload = Workload(schedule.spec, schedule.state())
    checkpoint, hold = folder / "checkpoint", folder / "hold"
    sink = NativeSink(folder / "sink", checkpoint, schedule)
    sink.anchor_us = ANCHOR_US

    def start():
        return start_native_stream(spark, native, workload, sink, checkpoint, trigger_s, hold, anchor_us=ANCHOR_US,
                                   max_events_per_batch=batch_events)

    query = RestartingQuery(spark, start, checkpoint, hold, sink.wait_for_batch_after)
    query.start(partitions[0])
    restarts = []
    total = schedule.total_events
    try:
        for i, n in enumerate(partitions[1:], start=1):
            while sink.events_done < total * i // len(partitions):
                if query.next_batch(sink.last_batch[0] if sink.last_batch else None, 120) is None:
                    raise TimeoutError("no batch committed in 120 s")
            restarts.append(query.rescale(n))
        while sink.events_done < total:
            if query.next_batch(sink.last_batch[0] if sink.last_batch else None, 120) is None:
                raise TimeoutError("no batch committed in 120 s")
        query.settle(trigger_s)
    finally:
        query.stop()
    lost_dup = verify_output(folder / "sink", committed_from_checkpoint(checkpoint), counts_events=None)[1:]
    table = read_output(folder / "sink")
    rows = table.to_pandas() if table is not None else pd.DataFrame()
    return rows, restarts, lost_dup, sink
