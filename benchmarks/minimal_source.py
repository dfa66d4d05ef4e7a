"""The smallest useful Arrow-producing Python streaming source: the ceiling of the Python Data Source path.

It serves (timestamp, value) rows like Spark's `rate` source, as Arrow record batches of consecutive numbers,
admitting a fixed number of rows per micro-batch. Whatever the replay source loses against it is the price of its
keys, payloads and scheduled arrival times; whatever it loses against Spark's JVM sources is the price of Python.

With option `shape=replay` it serves rows of the replay source's schema instead (event id, arrival time, key and a
`payloadBytes`-wide binary payload, 32 by default as in the workloads), made as cheaply as Arrow allows (consecutive
numbers, one zero-filled payload buffer): the two sources then move the same bytes to the JVM, and what the replay
source still loses is the price of computing its schedule (arrival times, keys, payloads) — apart from the price of
its wider rows, which the JVM converts column by column.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

SCHEMA = "timestamp TIMESTAMP, value BIGINT"
ARROW_SCHEMA = pa.schema([("timestamp", pa.timestamp("us", tz="UTC")), ("value", pa.int64())])
REPLAY_SHAPE = "replay"
ROWS_PER_RECORD_BATCH = 1 << 16


class RowRange(InputPartition):
    def __init__(self, first: int, stop: int):
        self.first, self.stop = first, stop


class MinimalStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.rows_per_batch = int(options.get("rowsPerBatch", "1000000"))
        self.partitions_per_batch = int(options.get("numPartitions", "2"))
        self.replay_shape = options.get("shape") == REPLAY_SHAPE
        self.payload_bytes = int(options.get("payloadBytes", "32"))

    def initialOffset(self) -> dict:
        return {"rows": 0}

    def latestOffset(self, start: dict, limit) -> dict:
        return {"rows": int(start["rows"]) + self.rows_per_batch}  # always a full batch available

    def partitions(self, start: dict, end: dict):
        first, stop = int(start["rows"]), int(end["rows"])
        n = self.partitions_per_batch
        bounds = [first + (stop - first) * i // n for i in range(n + 1)]
        return [RowRange(bounds[i], bounds[i + 1]) for i in range(n)]

    def read(self, partition: RowRange):
        if self.replay_shape:
            yield from self._replay_shaped(partition)
            return
        for lo in range(partition.first, partition.stop, ROWS_PER_RECORD_BATCH):
            values = np.arange(lo, min(partition.stop, lo + ROWS_PER_RECORD_BATCH), dtype=np.int64)
            yield pa.RecordBatch.from_arrays(
                [pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array(values, pa.int64())],
                schema=ARROW_SCHEMA,
            )

    def _replay_shaped(self, partition: RowRange):
        from jobs.replay_source import ARROW_SCHEMA as REPLAY_SCHEMA

        width = self.payload_bytes
        offsets = pa.py_buffer(np.arange(0, (ROWS_PER_RECORD_BATCH + 1) * width, width, dtype=np.int32))
        data = pa.py_buffer(np.zeros(ROWS_PER_RECORD_BATCH * width, dtype=np.uint8))
        for lo in range(partition.first, partition.stop, ROWS_PER_RECORD_BATCH):
            values = np.arange(lo, min(partition.stop, lo + ROWS_PER_RECORD_BATCH), dtype=np.int64)
            n = len(values)
            yield pa.RecordBatch.from_arrays(
                [pa.array(values, pa.int64()), pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                 pa.array(values.astype(np.int32) % 1000, pa.int32()),
                 pa.Array.from_buffers(pa.binary(), n, [None, offsets, data])],
                schema=REPLAY_SCHEMA,
            )

    def commit(self, end: dict) -> None:
        pass


class MinimalArrowSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minimal_arrow"

    def schema(self) -> str:
        if self.options.get("shape") == REPLAY_SHAPE:
            from jobs.replay_source import SCHEMA as REPLAY_SCHEMA

            return REPLAY_SCHEMA
        return SCHEMA

    def streamReader(self, schema):
        return MinimalStreamReader(self.options)
