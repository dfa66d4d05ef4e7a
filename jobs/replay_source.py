"""The replay source: a Spark streaming source (Python Data Source API) that serves a workload's due events.

Each micro-batch gets every event whose scheduled arrival is at or before "now" and was not served before; events
due but not yet read are the backlog. The offset is simply the number of events served, so a query restarted from
its checkpoint resumes exactly where it was, and a replayed batch regenerates exactly the same events (the
schedule is a pure function of spec, seed and event index).

Workers generate events as Arrow record batches with numpy, never Python rows, so the source stays far faster
than the operators it feeds (see docs/benchmarks.md).

The offset is {"events": n, "anchor_us": A}: A is the wall-clock epoch microsecond of schedule time 0. Keeping A
in the offset makes every batch's data a function of its offsets alone, so a batch replayed from the checkpoint
is byte-identical, and a restarted query keeps the original timeline.

The same source also reads as a batch DataFrame (`spark.read`), for a fixed range of events: the job warms its
Python workers up with it before the clock starts, and the benchmark measures the generator with it.

Options (all strings, as Spark passes them):
  spec          the workload spec as canonical JSON (WorkloadSpec.to_json())
  schedule_state  optional Schedule.state() from the driver: per-bucket counts, so workers need no trace files
  anchor_us     schedule time 0 as epoch microseconds, if known when the query is defined
  anchor_file   or: a JSON file {"anchor_us": ...} that the job writes once the query is up; until it exists the
                source reports no data. This keeps query start-up (seconds) out of the measured latencies.
  planned_file  optional: a JSON file the source replaces with its answer to every trigger that plans a batch (the
                batch's end offset), so the batch function knows what its batch reads before it runs
  hold_file     optional: while this file exists the source serves nothing new, so the query comes to rest at a
                batch boundary (a native query's rescale by restart holds it: jobs.native.rescale)
  partitions    number of read tasks per micro-batch (default 2)
  max_events_per_batch  optional admission cap (default: none, read everything due)
  first, stop   batch reads only: the range of event indices to read (default: the whole schedule)
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from jobs.trigger_grid import write_planned

SOURCE_NAME = "workload_replay"
SCHEMA = "event_id BIGINT, arrival_ts TIMESTAMP, key INT, payload BINARY"
ARROW_SCHEMA = pa.schema(
    [
        ("event_id", pa.int64()),
        ("arrival_ts", pa.timestamp("us", tz="UTC")),
        ("key", pa.int32()),
        ("payload", pa.binary()),
    ]
)
RECORD_BATCH_ROWS = 1 << 16
OFFSET_KEY = "events"
ANCHOR_KEY = "anchor_us"


@dataclass(frozen=True)
class EventRange(InputPartition):
    first: int
    stop: int
    anchor_us: int


def _schedule_from_options(options: dict[str, str]):
    """The schedule from the spec JSON and, when given, the driver's per-bucket state (so workers never need the
    trace files a workload was built from)."""
    from workloads.schedule import Schedule
    from workloads.spec import parse_workload

    spec = parse_workload(json.loads(options["spec"]), source="replay source option 'spec'", check_traces=False)
    state = options.get("schedule_state")
    return Schedule.from_state(spec, state) if state else Schedule(spec)


def event_batches(schedule, anchor_us: int, first: int, stop: int, rows: int = RECORD_BATCH_ROWS):
    """Arrow record batches for events [first, stop): the one place events become columns."""
    width = schedule.spec.payload_bytes
    for lo in range(first, stop, rows):
        hi = min(stop, lo + rows)
        ev = schedule.events(lo, hi)
        payload = _binary_column(ev.payload, width)
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(ev.event_id, pa.int64()),
                pa.array(ev.arrival_us + anchor_us, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                pa.array(ev.key, pa.int32()),
                payload,
            ],
            schema=ARROW_SCHEMA,
        )


def _binary_column(payload, width: int) -> pa.Array:
    if isinstance(payload, pa.Array):  # original trace rows, already variable-length binary
        return payload
    n = payload.shape[0]
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    data = np.ascontiguousarray(payload).reshape(-1)  # no copy when the payload is already contiguous
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


class _ScheduleFromOptions:
    """The workload schedule of a reader, built on first use where the reader runs (driver or worker)."""

    def __init__(self, options: dict[str, str]):
        self.options = {k: options[k] for k in ("spec", "schedule_state") if options.get(k)}
        self._schedule = None

    @property
    def schedule(self):
        if self._schedule is None:
            self._schedule = _schedule_from_options(self.options)
        return self._schedule


class ReplayStreamReader(_ScheduleFromOptions, DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        self.anchor_us = int(options["anchor_us"]) if options.get("anchor_us") else None
        self.anchor_file = options.get("anchor_file")
        if self.anchor_us is None and not self.anchor_file:
            raise ValueError("the replay source needs option 'anchor_us' or 'anchor_file'")
        self.planned_file = options.get("planned_file")
        self.hold_file = options.get("hold_file")
        self.partitions_per_batch = max(1, int(options.get("partitions", "2")))
        cap = options.get("max_events_per_batch")
        self.max_events_per_batch = int(cap) if cap else None

    def initialOffset(self) -> dict:
        return {OFFSET_KEY: 0, ANCHOR_KEY: 0}

    def _anchor(self, start: dict) -> int | None:
        if int(start.get(ANCHOR_KEY, 0)):
            return int(start[ANCHOR_KEY])
        if self.anchor_us is None:
            try:
                with open(self.anchor_file) as fh:
                    self.anchor_us = int(json.load(fh)["anchor_us"])
            except (OSError, ValueError, KeyError):
                return None
        return self.anchor_us

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_events_per_batch) if self.max_events_per_batch else ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        anchor = self._anchor(start)
        if anchor is None or (self.hold_file and os.path.exists(self.hold_file)):
            return start
        due = self.schedule.count_due(time.time_ns() // 1000 - anchor)
        begin = int(start[OFFSET_KEY])
        if isinstance(limit, ReadMaxRows):
            due = min(due, begin + int(limit.max_rows))
        if due <= begin:
            return start
        if self.planned_file:
            write_planned(self.planned_file, due)
        return {OFFSET_KEY: due, ANCHOR_KEY: anchor}

    def partitions(self, start: dict, end: dict):
        first, stop = int(start[OFFSET_KEY]), int(end[OFFSET_KEY])
        if stop <= first:
            return []
        anchor = int(end[ANCHOR_KEY])
        n = min(self.partitions_per_batch, stop - first)
        bounds = [first + (stop - first) * i // n for i in range(n + 1)]
        return [EventRange(bounds[i], bounds[i + 1], anchor) for i in range(n)]

    def read(self, partition: EventRange):
        yield from event_batches(self.schedule, partition.anchor_us, partition.first, partition.stop)

    def commit(self, end: dict) -> None:
        pass


class ReplayBatchReader(_ScheduleFromOptions, DataSourceReader):
    """A fixed range of events [first, stop) in `partitions` read tasks, anchored at `anchor_us` (default 0)."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        self.anchor_us = int(options.get("anchor_us") or 0)
        self.partitions_count = max(1, int(options.get("partitions", "2")))
        self.first = int(options.get("first", "0"))
        self.stop = int(options["stop"]) if options.get("stop") else None

    def partitions(self):
        total = self.schedule.total_events
        stop = total if self.stop is None else min(self.stop, total)
        n = max(1, min(self.partitions_count, stop - self.first))
        bounds = [self.first + (stop - self.first) * i // n for i in range(n + 1)]
        return [EventRange(bounds[i], bounds[i + 1], self.anchor_us) for i in range(n)]

    def read(self, partition: EventRange):
        yield from event_batches(self.schedule, partition.anchor_us, partition.first, partition.stop)


class ReplayDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema):
        return ReplayBatchReader(self.options)

    def streamReader(self, schema):
        return ReplayStreamReader(self.options)
