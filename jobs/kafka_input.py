"""A run that reads Kafka: the workload produced into a topic on schedule (jobs.kafka_producer), read by Spark's own
Kafka source, each batch accounted for by the offsets Spark planned for it.

Spark's Kafka source reads each partition from the previous batch's offset to the one it planned at the trigger,
so a batch is a range of offsets per partition, not a range of event ids. Where each event sits is known before the
run: the producer partitions by key with Kafka's Java partitioner (murmur2 of the key's bytes, positive, modulo the
partition count) and writes in schedule order, so offset k of partition p is the k-th event of the schedule whose
key lands in p (`TopicLayout`). Every account the replay source gives from its event count (what a batch reads,
the arrival of each event it read, what is still unread) is here read from the offsets, and the exactly-once check
compares the output with the ids those offsets stand for.

What a batch is about to read comes from the query's own write-ahead log: Spark writes a batch's end offsets to
`<checkpoint>/offsets/<batch id>` before the batch runs (`planned_offsets`). The backlog the controllers see is the
consumer lag: the topic's end offsets on the broker (what the producer wrote) less what the query has read
(`TopicEnds`), as Flink's autoscaler and KEDA read it.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from jobs.errors import RunFailed

# Kafka's Utils.murmur2 (the Java producer's default partitioner, and librdkafka's `murmur2_random`)
_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of `data` as Java's signed 32-bit int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length % 4
    base = length - tail
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def key_partition(key: int, partitions: int) -> int:
    """The partition a record keyed by `key` (decimal ASCII, as the producer writes it) lands in."""
    return (murmur2(str(key).encode()) & 0x7FFFFFFF) % partitions


class TopicLayout:
    """Where every event of a schedule sits in a topic of `partitions` partitions written by the producer: offset k
    of partition p is the k-th event, in schedule order, whose key lands in p."""

    CHUNK = 1 << 20  # events whose keys are generated at once

    def __init__(self, schedule, partitions: int):
        total = schedule.total_events
        keys = np.concatenate([schedule.keys(lo, min(total, lo + self.CHUNK)) for lo in range(0, total, self.CHUNK)]
                              or [np.zeros(0, np.int64)])
        distinct, inverse = np.unique(keys, return_inverse=True)
        partition_of_key = np.array([key_partition(int(k), partitions) for k in distinct.tolist()], np.int64)
        partition = partition_of_key[inverse] if total else np.zeros(0, np.int64)
        self.partitions = partitions
        self.events = np.argsort(partition, kind="stable").astype(np.int64)  # partition by partition, in order
        self.bounds = np.concatenate([[0], np.cumsum(np.bincount(partition, minlength=partitions))]).astype(np.int64)
        self.arrival_us = schedule.arrival_us(0, total)  # by event id

    def size(self, p: int) -> int:
        return int(self.bounds[p + 1] - self.bounds[p])

    def event_ids(self, ranges: dict[int, tuple[int, int]]) -> np.ndarray:
        """The ids of the events at offsets [start, end) of each partition, in partition order."""
        parts = [self.events[self.bounds[p] + s: self.bounds[p] + e] for p, (s, e) in sorted(ranges.items()) if e > s]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    def next_arrival_us(self, offsets: dict[int, int]) -> int | None:
        """The earliest arrival among the events not read yet, given each partition's next offset (None: all read)."""
        firsts = [self.arrival_us[self.events[self.bounds[p] + o]] for p, o in offsets.items() if o < self.size(p)]
        return int(min(firsts)) if firsts else None


def planned_offsets(checkpoint: Path, spark_batch_id: int, topic: str) -> dict[int, int] | None:
    """The end offsets Spark planned for a batch, per partition, from the query's offset log (None: not written)."""
    path = checkpoint / "offsets" / str(spark_batch_id)
    try:
        *_, source = path.read_text().strip().splitlines()
    except OSError:
        return None
    return {int(p): int(o) for p, o in json.loads(source).get(topic, {}).items()}


def committed_reads(checkpoint: Path, topic: str, layout: TopicLayout) -> dict[int, "OffsetRangesRead"]:
    """What each batch Spark committed read, from the query's own checkpoint: for a run that did not end normally,
    the independent account of what was committed (jobs.sink_check.committed_from_checkpoint for the replay source).
    Batch N read from batch N-1's end offsets (0 for the first) to its own; it counts once its commit file exists."""
    logged = sorted(int(p.name) for p in (checkpoint / "offsets").iterdir() if p.name.isdigit())
    ends = {b: planned_offsets(checkpoint, b, topic) or {} for b in logged}
    committed = {}
    for path in (checkpoint / "commits").iterdir():
        if path.name.isdigit():
            batch = int(path.name)
            before = ends.get(batch - 1, {})
            ranges = {p: (before.get(p, 0), end) for p, end in ends[batch].items()}
            committed[batch] = OffsetRangesRead(tuple((p, s, e) for p, (s, e) in sorted(ranges.items())),
                                                layout.event_ids(ranges))
    return committed


@dataclass(frozen=True)
class OffsetRangesRead:
    """What one batch read of the topic: offsets [start, end) per partition, and the ids of those events."""
    ranges: tuple[tuple[int, int, int], ...]  # (partition, start, end)
    ids: np.ndarray

    @property
    def events(self) -> int:
        return int(self.ids.size)

    @property
    def id_sum(self) -> int:
        return int(self.ids.sum())

    def marker(self) -> dict:
        """The batch's _SUCCESS marker (jobs.sink): its offsets, and the events they stand for."""
        return {"offsets": {str(p): [s, e] for p, s, e in self.ranges}, "events": self.events}


class KafkaAccount:
    """The batches' account of a topic for the batch function: what the next batch reads, what each read, what is
    left; the offsets read so far per partition."""

    def __init__(self, layout: TopicLayout, checkpoint: Path, topic: str, ends: "TopicEnds | None" = None):
        self.layout = layout
        self.checkpoint = checkpoint
        self.topic = topic
        self.ends = ends
        self.offsets = {p: 0 for p in range(layout.partitions)}
        self.events_read = 0
        self._plan: tuple[int, dict[int, int] | None] | None = None  # (batch, its end offsets) last read

    def planned(self, spark_batch_id: int) -> tuple[int, int | None] | None:
        """(events, the earliest arrival among them) the batch is about to read; None where Spark logged no plan."""
        planned = self._planned(spark_batch_id)
        if planned is None:
            return None
        ids = self.layout.event_ids(self._ranges(planned))
        return int(ids.size), (int(self.layout.arrival_us[ids].min()) if ids.size else None)

    def _planned(self, spark_batch_id: int) -> dict[int, int] | None:
        """The batch's end offsets from the offset log, read once per batch (asked at its start and after it ran)."""
        if self._plan is None or self._plan[0] != spark_batch_id or self._plan[1] is None:
            self._plan = (spark_batch_id, planned_offsets(self.checkpoint, spark_batch_id, self.topic))
        return self._plan[1]

    def _ranges(self, planned: dict[int, int]) -> dict[int, tuple[int, int]]:
        return {p: (self.offsets[p], max(self.offsets[p], planned.get(p, self.offsets[p]))) for p in self.offsets}

    def read(self, spark_batch_id: int, count: int, id_sum: int) -> OffsetRangesRead:
        """What the batch read, checked against what its first operator counted (events and the sum of their ids)."""
        planned = self._planned(spark_batch_id)
        if planned is None:
            raise RunFailed(f"batch {spark_batch_id}: no offsets in {self.checkpoint / 'offsets'}")
        ranges = self._ranges(planned)
        read = OffsetRangesRead(tuple((p, s, e) for p, (s, e) in sorted(ranges.items())),
                                self.layout.event_ids(ranges))
        if (read.events, read.id_sum) != (count, id_sum):
            raise RunFailed(f"batch {spark_batch_id}: read {count} events (id sum {id_sum}), the offsets "
                               f"{read.marker()['offsets']} stand for {read.events} (id sum {read.id_sum})")
        return read

    def advance(self, read: OffsetRangesRead) -> None:
        for p, _, end in read.ranges:
            self.offsets[p] = end
        self.events_read += read.events

    def watermark_us(self, read: OffsetRangesRead) -> int | None:
        """An arrival time by which every event has been read: the latest read, or just before the earliest unread
        (a partition behind another holds it back)."""
        if not read.events:
            return None
        latest = int(self.layout.arrival_us[read.ids].max())
        unread = self.layout.next_arrival_us(self.offsets)
        return latest if unread is None else min(latest, unread - 1)

    def next_arrival_us(self) -> int | None:
        return self.layout.next_arrival_us(self.offsets)

    def arrival_us(self, read: OffsetRangesRead) -> np.ndarray:
        return self.layout.arrival_us[read.ids]

    def backlog(self, due_now: int) -> int:
        """The consumer lag: records on the broker the query has not read. Where the broker does not answer (it is
        restarting), the events due and not read, as the schedule counts them."""
        written = self.ends.total() if self.ends is not None else None
        if written is None:
            return due_now - self.events_read
        return max(0, written - sum(self.offsets.values()))


class TopicEnds:
    """The topic's end offsets on the broker (the high watermarks): what the producer has written so far.

    A broker that stops answering (restarting) is not a failure of the run: `total` is None until it answers again,
    and the run says so once when it goes and once when it is back, instead of the client's line per retry."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, timeout_s: float = 2.0,
                 log: Callable[[str], None] = print):
        from confluent_kafka import Consumer, TopicPartition

        self.bootstrap = bootstrap
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"elastic-lag-{topic}",
                                   "enable.auto.commit": False, "log_level": 0})
        self._partitions = [TopicPartition(topic, p) for p in range(partitions)]
        self.timeout_s = timeout_s
        self._log = log
        self._away_since: float | None = None

    def total(self) -> int | None:
        try:
            written = sum(self._consumer.get_watermark_offsets(tp, timeout=self.timeout_s, cached=False)[1]
                          for tp in self._partitions)
        except Exception as exc:  # noqa: BLE001 (a broker restarting: the lag is unknown for this batch)
            if self._away_since is None:
                self._away_since = time.monotonic()
                self._log(f"Kafka broker {self.bootstrap} does not answer ({exc}): the backlog is counted from the "
                          "schedule until it does")
            return None
        if self._away_since is not None:
            self._log(f"Kafka broker {self.bootstrap} back after {time.monotonic() - self._away_since:.0f} s: the "
                      "backlog is the consumer lag again")
            self._away_since = None
        return written

    def close(self) -> None:
        self._consumer.close()


def kafka_events(spark, bootstrap: str, topic: str, max_offsets_per_trigger: int = 0):
    """The topic as the replay source's columns (event_id, arrival_ts, key, payload), decoded in the JVM from the
    producer's records: the value is the id (8 bytes big-endian), the arrival in epoch microseconds (8 bytes
    big-endian) and the payload; the key is the event's key in decimal ASCII."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").option("failOnDataLoss", "true"))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))

    def long_at(position: int):
        return F.conv(F.hex(F.substring("value", position, 8)), 16, 10).cast("bigint")

    return reader.load().select(
        long_at(1).alias("event_id"),
        F.timestamp_micros(long_at(9)).alias("arrival_ts"),
        F.col("key").cast("string").cast("int").alias("key"),
        F.expr("substring(value, 17, 2147483647)").alias("payload"),
    )
