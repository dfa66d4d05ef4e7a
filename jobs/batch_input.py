"""What the batches of a run read from the replay source: one contiguous range of event ids per batch, since the
source's offset is a count of events served (jobs.replay_source).

The batch function (jobs.batch) asks an account what the next batch is about to read, what a batch read (checked
against what its first operator counted), the arrival of each event read, and what is left; the account of a topic
read by Spark's Kafka source answers the same questions from offsets (jobs.kafka_input.KafkaAccount).
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from jobs.errors import RunFailed
from jobs.trigger_grid import read_planned


class ContiguousRead(NamedTuple):
    """Events [first, first + n) read by one batch."""
    first: int
    n: int

    @property
    def events(self) -> int:
        return self.n

    @property
    def id_sum(self) -> int:
        return self.n * self.first + self.n * (self.n - 1) // 2

    def marker(self) -> dict:
        """The batch's _SUCCESS marker (jobs.sink): the range of events it stands for."""
        return {"first": self.first, "events": self.n}


def as_read(read) -> "ContiguousRead":
    """A read as the exactly-once check takes it: a (first, n) pair is a contiguous range."""
    return read if hasattr(read, "marker") else ContiguousRead(*read)


class ReplayAccount:
    """The replay source's batches: each reads the events that follow the previous batch's."""

    def __init__(self, schedule, planned_file: Path | None = None):
        self.schedule = schedule
        self.planned_file = planned_file  # where the source writes each batch's end offset as it plans it
        self.events_read = 0

    def planned(self, spark_batch_id: int) -> tuple[int, int | None] | None:
        """(events, the earliest arrival among them) the batch is about to read, as the source planned it at the
        trigger; None where the source wrote no plan."""
        planned = read_planned(self.planned_file) if self.planned_file is not None else None
        if planned is None or planned <= self.events_read:
            return None
        return planned - self.events_read, self.next_arrival_us()

    def read(self, spark_batch_id: int, count: int, id_sum: int) -> ContiguousRead:
        """What the batch read, checked: the first operator's tasks read exactly the range that follows the previous
        batch's (its count and the sum of its ids)."""
        read = ContiguousRead(self.events_read, count)
        if id_sum != read.id_sum:
            raise RunFailed(f"batch {spark_batch_id}: events read are not the contiguous range "
                               f"[{read.first}, {read.first + count})")
        return read

    def advance(self, read: ContiguousRead) -> None:
        self.events_read = read.first + read.n

    def arrival_us(self, read: ContiguousRead) -> np.ndarray:
        return self.schedule.arrival_us(read.first, read.first + read.n)

    def watermark_us(self, read: ContiguousRead) -> int | None:
        """An arrival time by which every event has been read: the last one read."""
        stop = read.first + read.n
        return int(self.schedule.arrival_us(stop - 1, stop)[0]) if read.n else None

    def next_arrival_us(self) -> int | None:
        first = self.events_read
        return None if first >= self.schedule.total_events else int(self.schedule.arrival_us(first, first + 1)[0])

    def backlog(self, due_now: int) -> int:
        """Events due and not read yet."""
        return due_now - self.events_read
