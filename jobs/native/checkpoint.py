"""What a streaming query's checkpoint says, read from Spark's own logs (never from the project's memory), so that
a run resumed after a crash, a killed rescale or a restart sees exactly what Spark will do.

A checkpoint holds `offsets/N` (written when batch N is planned: its metadata, with the SQL settings fixed for the
query such as `spark.sql.shuffle.partitions`, then the replay source's end offset {"events": n, "anchor_us": A})
and `commits/N` (written once batch N's sink has returned). Spark lists `.crc` and `.tmp` files beside them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

OWNER_FILE = "elastic-query.json"  # the project's note of which native query wrote this checkpoint
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


@dataclass(frozen=True)
class BatchOffsets:
    metadata: dict
    source: dict

    @property
    def events(self) -> int:
        return int(self.source["events"])

    @property
    def anchor_us(self) -> int:
        return int(self.source.get("anchor_us", 0))

    @property
    def partitions(self) -> int | None:
        value = self.metadata.get("conf", {}).get(SHUFFLE_PARTITIONS)
        return int(value) if value is not None else None


@dataclass(frozen=True)
class BatchRead:
    """What one batch read, by Spark's offsets: events [first, first + events), with its partition count."""

    first: int
    events: int
    anchor_us: int
    partitions: int | None


def _batch_ids(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


def read_offsets(checkpoint: Path, batch_id: int) -> BatchOffsets | None:
    path = Path(checkpoint) / "offsets" / str(batch_id)
    if not path.exists():
        return None
    _, metadata, *sources = path.read_text().strip().splitlines()
    return BatchOffsets(json.loads(metadata), json.loads(sources[-1]) if sources else {})


def batch_read(checkpoint: Path, batch_id: int) -> BatchRead:
    """What batch `batch_id` reads: from the previous batch's end offset (0 for the first) to its own."""
    this = read_offsets(checkpoint, batch_id)
    if this is None:
        raise FileNotFoundError(f"{checkpoint}: no offsets for batch {batch_id}")
    before = read_offsets(checkpoint, batch_id - 1) if batch_id > 0 else None
    first = before.events if before is not None else 0
    return BatchRead(first, this.events - first, this.anchor_us, this.partitions)


def last_planned(checkpoint: Path) -> int | None:
    ids = _batch_ids(Path(checkpoint) / "offsets")
    return ids[-1] if ids else None


def last_committed(checkpoint: Path) -> int | None:
    ids = _batch_ids(Path(checkpoint) / "commits")
    return ids[-1] if ids else None


def ends_on_a_commit(checkpoint: Path) -> bool:
    """Whether the last batch Spark planned was also committed: the condition for repartitioning its state (a
    query stopped inside a batch leaves that batch planned, to be rerun on restart)."""
    return last_planned(checkpoint) == last_committed(checkpoint)


def partitions_of(checkpoint: Path) -> int | None:
    """The shuffle (and state) partitions the checkpoint's last batch ran with; None for a new checkpoint."""
    last = last_planned(checkpoint)
    return None if last is None else read_offsets(checkpoint, last).partitions


def claim(checkpoint: Path, query_ref: str) -> None:
    """Mark a checkpoint as the given query's, or refuse one another query wrote: its state would not fit."""
    checkpoint = Path(checkpoint)
    owner = checkpoint / OWNER_FILE
    if owner.exists():
        written_by = json.loads(owner.read_text()).get("query")
        if written_by != query_ref:
            raise ValueError(f"checkpoint {checkpoint} was written by query {written_by!r}, not {query_ref!r}")
        return
    if last_planned(checkpoint) is not None:
        raise ValueError(f"checkpoint {checkpoint} holds another query's batches (no {OWNER_FILE})")
    checkpoint.mkdir(parents=True, exist_ok=True)
    owner.write_text(json.dumps({"query": query_ref}))
