"""An example of your own query, outside the project's packages: per key, the events and the sum of a value in
tumbling 5 s windows, emitted once a window has closed. Run it under any controller:

    python -m jobs.run --controller threshold --workload step --query examples/key_windows.py:build
    python -m jobs.run --controller ds2 --workload step --query examples/key_windows.py:build

A query is a chain of operators (queries.api). Each gets, per task, the rows Spark gave it as a pyarrow Table and
returns its output as one; `schema` declares the output's columns in Spark's DDL. A keyed operator gets all rows
of a key in one task; a stateful one also gets the state it kept for those keys and returns their new state, and
its `on_watermark` emits what the event time closed. The controller changes each operator's degree between
micro-batches; the state follows the keys.
"""
import pyarrow as pa
import pyarrow.compute as pc

from queries.api import Operator, Query, Stateful, closed_windows

WINDOW_US = 5_000_000
STATE = pa.schema([("key", pa.int32()), ("window_start_us", pa.int64()), ("events", pa.int64()),
                   ("value_sum", pa.int64())])


def decode(table: pa.Table, ctx) -> pa.Table:
    """Stateless: each event's window (from its time in the run) and a value (the payload's first byte)."""
    time_us = pc.subtract(pc.cast(table.column("arrival_ts"), pa.int64()), ctx.anchor_us)
    first_byte = pa.array([p[0] if p else 0 for p in table.column("payload").to_pylist()], pa.int64())
    return pa.table({"key": table.column("key"),
                     "window_start_us": pc.multiply(pc.divide(time_us, WINDOW_US), WINDOW_US),
                     "value": first_byte})


def add_up(rows: pa.Table, state: pa.Table, ctx) -> tuple[pa.Table, pa.Table]:
    """Stateful step: this batch's counts added to the counts kept for the same keys; nothing emitted yet."""
    batch = rows.group_by(["key", "window_start_us"]).aggregate([("value", "count"), ("value", "sum")])
    batch = batch.rename_columns(["key", "window_start_us", "events", "value_sum"]).cast(STATE)
    merged = pa.concat_tables([state, batch]).group_by(["key", "window_start_us"]).aggregate(
        [("events", "sum"), ("value_sum", "sum")]).rename_columns(["key", "window_start_us", "events", "value_sum"])
    return pa.table({"key": pa.array([], pa.int32()), "window_start_us": pa.array([], pa.int64()),
                     "events": pa.array([], pa.int64()), "value_sum": pa.array([], pa.int64())}), merged


def close_windows(state: pa.Table, watermark_us: int, final: bool) -> tuple[pa.Table, pa.Table]:
    """Emit the windows every event of which has been read (all of them at the end); keep the others."""
    return closed_windows(state, watermark_us, final, WINDOW_US)


def build() -> Query:
    return Query("key-windows", (
        Operator("decode", decode, "key INT, window_start_us BIGINT, value BIGINT"),
        Operator("windows", None, "key INT, window_start_us BIGINT, events BIGINT, value_sum BIGINT", key="key",
                 state=Stateful(STATE, add_up, close_windows)),
    ), description="events and value sum per key in tumbling 5 s windows")
