"""Exactly-once, checked: read the committed output back and compare it with what each batch read.

The event ids a batch read are a contiguous range, so the window partials it wrote must count exactly its events
and their ids must sum to the range's sum. Anything else is loss or duplication, reported as a number (which must
be 0), never assumed.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from jobs.sink import SUCCESS, batch_folder


def verify_output(sink_dir: Path, committed: dict[int, tuple[int, int]]) -> tuple[int, int, int]:
    """Read the committed output back and check it against what each batch read: (events out, lost, duplicated).

    A batch that read events [first, first + n) must have written partials that count n events whose ids sum to
    n*first + n(n-1)/2; a count below or above is loss or duplication, a wrong sum with the right count is both.
    Folders of batches that never committed are removed, so nothing half-written is left behind."""
    events_out = lost = duplicated = 0
    for staging in sink_dir.glob(".batch_id=*.tmp"):  # a commit cut short (jobs.sink.commit_batch)
        shutil.rmtree(staging)
    for folder in sink_dir.glob("batch_id=*"):
        if int(folder.name.split("=")[1]) not in committed or not (folder / SUCCESS).exists():
            shutil.rmtree(folder)
    for batch_id, (first, n) in sorted(committed.items()):
        if not batch_folder(sink_dir, batch_id).exists():
            lost += n  # an empty batch writes nothing; any other batch's output is gone
            continue
        table = pq.read_table(batch_folder(sink_dir, batch_id), columns=["events", "event_id_sum"])
        got, id_sum = pa_sum(table, "events"), pa_sum(table, "event_id_sum")
        events_out += got
        if got < n:
            lost += n - got
        elif got > n:
            duplicated += got - n
        elif id_sum != n * first + n * (n - 1) // 2:
            lost += 1
            duplicated += 1
    return events_out, lost, duplicated


def pa_sum(table, column: str) -> int:
    return int(pc.sum(table.column(column)).as_py() or 0)


def committed_from_checkpoint(checkpoint_dir: Path) -> dict[int, tuple[int, int]]:
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
            committed[batch_id] = (first, offsets[batch_id] - first)
    return committed
