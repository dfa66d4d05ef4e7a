"""The native query's foreachBatch: its output committed per Spark batch (jobs.sink, idempotent), each batch
measured against the schedule.

What a batch read is taken from the checkpoint's offsets (jobs.native.checkpoint), written by Spark before the batch
ran, so the sink's account of every batch is Spark's own, across restarts. Latency is the project's: when the batch
committed, less each event's scheduled arrival.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from jobs.native.checkpoint import batch_read
from jobs.sink import commit_batch
from params.units import US


class NativeSink:
    def __init__(self, sink_dir: Path, checkpoint: Path, schedule, on_batch: Callable[[dict[str, Any]], None]
                 = lambda row: None):
        self.sink_dir = Path(sink_dir)
        self.checkpoint = Path(checkpoint)
        self.schedule = schedule
        self.on_batch = on_batch
        self.anchor_us: int | None = None
        self.latencies: list[np.ndarray] = []
        self.rows: list[dict[str, Any]] = []
        self.events_done = 0  # events of committed batches: the stream is over when it reaches the schedule's total
        self._done = threading.Condition()
        self.last_batch: tuple[int, float] | None = None  # (spark batch id, when its sink returned)
        self.prev_end_s: float | None = None

    def __call__(self, df, batch_id: int) -> None:
        start = time.time()
        read = batch_read(self.checkpoint, batch_id)
        first, n = read.first, read.events
        table = df.toArrow()
        commit_batch(self.sink_dir, batch_id, table, marker={"first": first, "events": n})
        end = time.time()
        self.anchor_us = read.anchor_us or self.anchor_us
        row = self._measure(batch_id, start, end, first, n, table.num_rows)
        row["partitions"] = read.partitions  # what Spark ran the batch with, from its own offsets log
        with self._done:
            self.rows.append(row)
            self.events_done = first + n
            self.last_batch = (batch_id, end)
            self._done.notify_all()
        self.on_batch(row)

    def _measure(self, batch_id: int, start: float, end: float, first: int, n: int, rows_out: int) -> dict[str, Any]:
        row: dict[str, Any] = {"spark_batch_id": batch_id, "start": start, "end": end, "first_event": first,
                               "records_read": n, "records_out": rows_out,
                               "batch_duration_s": end - start}
        if not self.anchor_us:
            return row
        end_us = int(end * US) - self.anchor_us
        latencies = (end_us - self.schedule.arrival_us(first, first + n)) / US
        self.latencies.append(latencies)
        time_s = end_us / US
        due = self.schedule.count_due(end_us)
        row.update({"time_s": time_s, "backlog": max(0, due - (first + n)), "due": due,
                    "interval_s": time_s - self.prev_end_s if self.prev_end_s is not None else None})
        if n:
            p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
            row.update({"latency_p50_s": float(p50), "latency_p95_s": float(p95), "latency_p99_s": float(p99),
                        "latency_max_s": float(latencies.max())})
        self.prev_end_s = time_s
        return row

    def wait_for_batch_after(self, batch_id: int | None, timeout_s: float) -> tuple[int, float] | None:
        """The first batch committed with an id above `batch_id` (None: any): (its id, when it committed)."""
        deadline = time.time() + timeout_s
        with self._done:
            while self.last_batch is None or (batch_id is not None and self.last_batch[0] <= batch_id):
                left = deadline - time.time()
                if left <= 0:
                    return None
                self._done.wait(left)
            return self.last_batch

    def all_latencies(self) -> np.ndarray:
        return np.concatenate(self.latencies) if self.latencies else np.empty(0)
