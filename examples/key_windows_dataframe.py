"""The same query as examples/key_windows.py (per key, the events and the sum of a value in tumbling 5 s windows,
emitted once a window has closed), written as a Spark user would: the per-batch work with the DataFrame API.

    python -m jobs.run --controller ds2 --workload step --query examples/key_windows_dataframe.py:build

The `partials` operator is keyed by `key`: before it, the engine repartitions the micro-batch by key to the degree
the controller chose, so its groupBy runs at that degree with no other shuffle. It gives `dataframe` (a function of
the micro-batch DataFrame) instead of `transform` (a function of one task's Arrow rows). Adding a batch's partials
to the windows' running totals is state across batches: that is the stateful operator's role, on Arrow rows.
"""
import pyarrow as pa

from queries.api import Operator, Query, Stateful, closed_windows

WINDOW_US = 5_000_000
STATE = pa.schema([("key", pa.int32()), ("window_start_us", pa.int64()), ("events", pa.int64()),
                   ("value_sum", pa.int64())])
COLUMNS = "key INT, window_start_us BIGINT, events BIGINT, value_sum BIGINT"


def partials(events, ctx):
    """This batch's events and value sum per (key, window): the value is the payload's first byte."""
    from pyspark.sql import functions as F

    time_us = F.unix_micros("arrival_ts") - F.lit(ctx.anchor_us)
    first_byte = F.coalesce(F.conv(F.hex(F.substring("payload", 1, 1)), 16, 10).cast("bigint"), F.lit(0))
    rows = events.select("key", (time_us - F.pmod(time_us, F.lit(WINDOW_US))).alias("window_start_us"),
                         first_byte.alias("value"))
    return rows.groupBy("key", "window_start_us").agg(F.count(F.lit(1)).alias("events"),
                                                     F.sum("value").alias("value_sum"))


def add_up(rows: pa.Table, state: pa.Table, ctx) -> tuple[pa.Table, pa.Table]:
    """Stateful step: this batch's partials added to the totals kept for the same keys; nothing emitted yet."""
    merged = pa.concat_tables([state, rows.select(STATE.names).cast(STATE)]).group_by(
        ["key", "window_start_us"]).aggregate([("events", "sum"), ("value_sum", "sum")])
    return STATE.empty_table(), merged.rename_columns(["key", "window_start_us", "events", "value_sum"])


def close_windows(state: pa.Table, watermark_us: int, final: bool) -> tuple[pa.Table, pa.Table]:
    """Emit the windows every event of which has been read (all of them at the end); keep the others."""
    return closed_windows(state, watermark_us, final, WINDOW_US)


def build() -> Query:
    return Query("key-windows-dataframe", (
        Operator("partials", None, COLUMNS, key="key", dataframe=partials),
        Operator("windows", None, COLUMNS, key="key", state=Stateful(STATE, add_up, close_windows)),
    ), description="events and value sum per key in tumbling 5 s windows (per-batch partials with the DataFrame API)")
