"""Exactly-once, checked: read the committed output back and compare it with what each batch read.

What a batch read is a contiguous range of event ids (the replay source) or a range of offsets per partition (Kafka,
jobs.kafka_input): each committed folder must name what its batch read, and where the output counts the events it
stands for (the benchmark's window partials, a pass-through), it must count exactly those events, with the sum of
their ids. Anything else is loss or duplication, reported as a number (which must be 0), never assumed.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from jobs.batch_input import ContiguousRead, as_read
from jobs.sink import FINAL, SUCCESS, batch_folder


def partials_count(table: pa.Table) -> tuple[int, int]:
    """The benchmark topology's output: window partials that count their events and sum their ids."""
    return pa_sum(table, "events"), pa_sum(table, "event_id_sum")


def verify_output(sink_dir: Path, committed: dict[int, object],
                  counts_events: Callable[[pa.Table], tuple[int, int]] | None = partials_count
                  ) -> tuple[int, int, int]:
    """Read the committed output back and check it against what each batch read: (events out, lost, duplicated).

    `committed`: batch id -> what it read (a read's `marker()`, `events`, `id_sum`; a (first, n) pair is the range
    [first, first + n)). Every batch that read n events must have its folder, whose marker names what it read; a
    batch with no folder lost its n events, a marker naming another read is both loss and duplication (the markers are
    written from the driver's own account of each batch, so for a query whose output does not count events this
    finds lost or replaced folders, not events lost inside a batch: the queries' reference tests do). Where the query's
    output says which events it stands for (`counts_events`: the benchmark's partials count them, a pass-through
    is them), the output itself must count n events whose ids sum to the read's; a count below or above is
    loss or duplication, a wrong sum with the right count is both. Folders of batches that never committed are
    removed, so nothing half-written is left behind."""
    events_out = lost = duplicated = 0
    for staging in sink_dir.glob(".*.tmp"):  # a commit cut short (jobs.sink.commit_batch)
        shutil.rmtree(staging)
    for folder in sink_dir.glob("batch_id=*"):
        if int(folder.name.split("=")[1]) not in committed or not (folder / SUCCESS).exists():
            shutil.rmtree(folder)
    for batch_id, read in sorted(committed.items()):
        read = as_read(read)
        n = read.events
        folder = batch_folder(sink_dir, batch_id)
        if not folder.exists():
            lost += n  # an empty batch writes nothing; any other batch's output is gone
            continue
        marker = json.loads((folder / SUCCESS).read_text() or "{}")
        if marker and marker != read.marker():
            lost += n
            duplicated += int(marker.get("events") or 0)
            continue
        if counts_events is None:
            events_out += n
            continue
        got, id_sum = counts_events(pq.read_table(folder))
        events_out += got
        if got < n:
            lost += n - got
        elif got > n:
            duplicated += got - n
        elif id_sum != read.id_sum:
            lost += 1
            duplicated += 1
    return events_out, lost, duplicated


def read_output(sink_dir: Path) -> pa.Table | None:
    """Every committed batch's rows in batch order, then the final flush: what the query emitted (None: nothing)."""
    folders = sorted(sink_dir.glob("batch_id=*"), key=lambda f: int(f.name.split("=")[1]))
    folders += [f for f in [sink_dir / FINAL] if f.exists()]
    tables = [pq.read_table(f) for f in folders if (f / SUCCESS).exists()]
    tables = [t for t in tables if t.num_columns]
    return pa.concat_tables(tables) if tables else None


def pa_sum(table, column: str) -> int:
    return int(pc.sum(table.column(column)).as_py() or 0)


def committed_from_checkpoint(checkpoint_dir: Path) -> dict[int, ContiguousRead]:
    """What each batch Spark committed read, from the query's own checkpoint: {batch id: (first event, events)}.

    For a run that did not end normally (stopped, killed) the job's own record of its batches never reached MLflow;
    the checkpoint is what Spark would resume from, so it is the independent account of what was committed. Batch N
    read from the replay source's end offset of batch N-1 (0 for the first) to its own; a batch counts once its
    commit file exists (a planned batch without one is replayed, not committed)."""
    offsets = {}
    for path in (checkpoint_dir / "offsets").iterdir():
        if path.name.isdigit():
            *_, source = path.read_text().strip().splitlines()
            offsets[int(path.name)] = int(json.loads(source)["events"])
    committed = {}
    for path in (checkpoint_dir / "commits").iterdir():
        if path.name.isdigit():
            batch_id = int(path.name)
            first = offsets.get(batch_id - 1, 0)
            committed[batch_id] = ContiguousRead(first, offsets[batch_id] - first)
    return committed
