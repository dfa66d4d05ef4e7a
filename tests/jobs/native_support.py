"""Replaying a whole workload through a native query on real Spark, fast: every event due at once (anchor in the
past), read in capped batches, the query restarted at new partition counts in between (jobs.native.rescale)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from jobs.native.query import load_native_query
from jobs.native.stream import replayed_query, run_until
from jobs.sink_check import committed_from_checkpoint, read_output, verify_output
from workloads.schedule import Schedule

ANCHOR_US = 1_000_000  # schedule time 0 at 1970-01-01 00:00:01: every event is due when the query starts


def replay(spark, ref: str, schedule: Schedule, folder: Path, partitions: list[int], batch_events: int,
           trigger_s: float = 0.5):
    """Run the whole schedule through the query, starting at partitions[0] and restarting at each next count once
    an equal share of the events is committed. Returns (output rows, restarts, (lost, duplicated))."""
    query, sink = replayed_query(spark, load_native_query(ref), schedule, folder, trigger_s, ANCHOR_US, batch_events)
    checkpoint = folder / "checkpoint"
    query.start(partitions[0])
    restarts = []
    total = schedule.total_events
    try:
        for i, n in enumerate(partitions[1:], start=1):
            run_until(query, sink, total * i // len(partitions))
            restarts.append(query.rescale(n))
        run_until(query, sink, total)
        query.settle(trigger_s)
    finally:
        query.stop()
    lost_dup = verify_output(folder / "sink", committed_from_checkpoint(checkpoint), counts_events=None)[1:]
    table = read_output(folder / "sink")
    rows = table.to_pandas() if table is not None else pd.DataFrame()
    return rows, restarts, lost_dup, sink
