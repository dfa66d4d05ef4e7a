"""The smallest useful Arrow-producing Python streaming source: the ceiling of the Python Data Source path.

It serves (timestamp, value) rows like Spark's `rate` source, as Arrow record batches of consecutive numbers,
admitting a fixed number of rows per micro-batch. Whatever the replay source loses against it is the price of its
keys, payloads and scheduled arrival times; whatever it loses against Spark's JVM sources is the price of Python.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

SCHEMA = "timestamp TIMESTAMP, value BIGINT"
ARROW_SCHEMA = pa.schema([("timestamp", pa.timestamp("us", tz="UTC")), ("value", pa.int64())])
ROWS_PER_RECORD_BATCH = 1 << 16


class RowRange(InputPartition):
    def __init__(self, first: int, stop: int):
        self.first, self.stop = first, stop


class MinimalStreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]):
        self.rows_per_batch = int(options.get("rowsPerBatch", "1000000"))
        self.partitions_per_batch = int(options.get("numPartitions", "2"))

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
        for lo in range(partition.first, partition.stop, ROWS_PER_RECORD_BATCH):
            values = np.arange(lo, min(partition.stop, lo + ROWS_PER_RECORD_BATCH), dtype=np.int64)
            yield pa.RecordBatch.from_arrays(
                [pa.array(values, pa.int64()).cast(pa.timestamp("us", tz="UTC")), pa.array(values, pa.int64())],
                schema=ARROW_SCHEMA,
            )

    def commit(self, end: dict) -> None:
        pass


class MinimalArrowSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "minimal_arrow"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema):
        return MinimalStreamReader(self.options)
