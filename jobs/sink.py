"""The exactly-once sink: each micro-batch's output committed as one folder named by its Spark batch id.

The sink operator runs in Spark at its own degree; its output (window partials: at most one row per key and window
a batch touched) comes back to the driver as Arrow and is written here with pyarrow, then renamed into place. A
batch replayed from the checkpoint rewrites its own folder instead of adding to it, so the output is idempotent,
and a folder only ever appears whole, with its `_SUCCESS` marker (jobs.sink_check removes any other).

Why not `DataFrame.write.parquet`: Spark's file writer sets up and commits a Hadoop output job per batch (a
temporary folder, a commit per task, a rename per file, the job's commit), which cost about 0.15 s of every
batch here (docs/benchmarks.md) for an output of a few thousand rows. Writing from the driver also needs no
file system shared by the executors when the job runs on a cluster.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SUCCESS = "_SUCCESS"  # written last, holding what the batch read (the events the folder stands for)
FINAL = "final"  # what a stateful query emits after the stream ended (jobs.batch.BatchProcessor.finish)


def batch_folder(sink_dir: Path, spark_batch_id: int | str) -> Path:
    return sink_dir / (FINAL if spark_batch_id == FINAL else f"batch_id={spark_batch_id}")


def commit_batch(sink_dir: Path, spark_batch_id: int | str, table: pa.Table, marker: dict | None = None) -> Path:
    """Write the batch's output next to its final place, then move it there in one rename. `marker`: what the batch
    read ({"first": f, "events": n} from the replay source, offsets per partition from Kafka: the reads' `marker()`),
    recorded in its _SUCCESS marker for the exactly-once check."""
    final = batch_folder(sink_dir, spark_batch_id)
    staging = sink_dir / f".{final.name}.{uuid.uuid4().hex}.tmp"
    staging.mkdir(parents=True)
    try:
        pq.write_table(table, staging / "part-00000.parquet")
        (staging / SUCCESS).write_text(json.dumps(marker or {}))
        if final.exists():  # a replay of this batch: its earlier output goes, the new one takes its place
            shutil.rmtree(final)
        os.rename(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final
