"""What a query needs at run time beyond its operators: the state a stateful operator holds between micro-batches,
and the context its tasks run in.

The state lives on the driver (queries.api explains why). Each batch it travels to the tasks in the operator's
closure as Arrow IPC bytes; each task keeps the rows of the keys in its input and returns their new rows and the
keys it handled as one extra row of the output (column `_state`, every other column null); the driver splits that
row off, replaces those keys' rows, and calls the operator's `on_watermark` with the event time up to which every
event has been read. Partitioning the state afresh by key in every batch is what lets a controller change the
operator's degree between two batches without moving anything by hand.
"""
from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.compute as pc

from queries.api import STATE_COLUMN, BatchContext, Operator, Query
from workloads.schedule_ref import ScheduleRef

def batch_context(spec, schedule_state: str | None, anchor_us: int = 0) -> BatchContext:
    return BatchContext(anchor_us=anchor_us, seed=spec.seed, schedule=ScheduleRef(spec.to_json(), schedule_state))


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def stateful_step(op: Operator, rows: pa.Table, state: bytes | None, context: BatchContext,
                  output_schema: pa.Schema) -> tuple[pa.Table, pa.Table]:
    """One task of a stateful operator: its keys' held state in; its output rows and the row that carries their
    new state back to the driver out (both with the `_state` column, null in the output rows)."""
    spec = op.state
    held = from_ipc(state) if state else spec.schema.empty_table()
    keys = pc.unique(rows.column(op.key))
    mine = held.filter(pc.is_in(held.column(op.key), value_set=keys.cast(held.schema.field(op.key).type)))
    output, new_state = op.state.step(rows, mine, context)
    output = _conform(output, output_schema, f"operator {op.name!r}: its output")
    new_state = _conform(new_state, spec.schema, f"operator {op.name!r}: its new state")
    payload = pickle.dumps((to_ipc(new_state), keys), protocol=5)
    body = output.append_column(STATE_COLUMN, pa.nulls(output.num_rows, pa.binary()))
    marker = pa.table({**{f.name: pa.nulls(1, f.type) for f in output_schema}, STATE_COLUMN: pa.array([payload])})
    return body, marker.cast(body.schema)


def as_table(x, what: str) -> pa.Table:
    """What an operator returned as a Table (a RecordBatch is accepted too)."""
    if isinstance(x, pa.RecordBatch):
        return pa.Table.from_batches([x])
    if isinstance(x, pa.Table):
        return x
    raise TypeError(f"{what} must return a pyarrow Table or RecordBatch, got {type(x).__name__}")


def _conform(table, schema: pa.Schema, what: str) -> pa.Table:
    table = as_table(table, what)
    missing = [n for n in schema.names if n not in table.column_names]
    if missing:
        raise ValueError(f"{what} lacks column(s) {', '.join(missing)} (declared: {', '.join(schema.names)})")
    return table.select(schema.names).cast(schema)


class QueryState:
    """The stateful operator's state on the driver, and the watermark it has seen."""

    def __init__(self, query: Query):
        self.op = query.stateful
        self.table = self.op.state.schema.empty_table() if self.op is not None else None
        self.watermark_us: int | None = None
        self.output_schema: pa.Schema | None = None  # the committed rows' schema, known from the first batch

    @property
    def active(self) -> bool:
        return self.op is not None

    def payload(self) -> bytes | None:
        return to_ipc(self.table) if self.op is not None and self.table.num_rows else None

    def absorb(self, output: pa.Table) -> pa.Table:
        """The batch's output without its state rows; the state rows replace the held rows of their keys."""
        if self.op is None:
            return output
        marked = pc.is_valid(output.column(STATE_COLUMN))
        rows = output.filter(pc.invert(marked)).drop_columns([STATE_COLUMN])
        self.output_schema = rows.schema
        parts = [pickle.loads(p) for p in output.filter(marked).column(STATE_COLUMN).to_pylist()]
        if parts:
            key = self.op.key
            handled = pa.chunked_array([k for _, k in parts]).cast(self.table.schema.field(key).type)
            kept = self.table.filter(pc.invert(pc.is_in(self.table.column(key), value_set=handled.combine_chunks())))
            self.table = pa.concat_tables([kept] + [from_ipc(s).cast(self.table.schema) for s, _ in parts]
                                          ).combine_chunks()
        return rows

    def after_batch(self, output: pa.Table, watermark_us: int | None) -> pa.Table:
        """What a batch commits: its output without the state rows, then what the watermark (the time of the last
        event it read; None when it read none) closed."""
        rows = self.absorb(output)
        closed = self.advance(watermark_us) if watermark_us is not None else None
        return rows if closed is None else pa.concat_tables([rows, closed])

    def flush(self) -> pa.Table | None:
        """After the stream: what the query emits at the end (on_watermark with final=True)."""
        return self.advance(None, final=True)

    def advance(self, watermark_us: int | None, final: bool = False) -> pa.Table | None:
        """What the event time closed, as rows of the query's output schema (None: nothing)."""
        schema = self.output_schema
        if self.op is None or self.op.state.on_watermark is None or schema is None:
            return None
        if watermark_us is not None:
            self.watermark_us = watermark_us
        if self.watermark_us is None:
            return None
        emitted, self.table = self.op.state.on_watermark(self.table, self.watermark_us, final)
        self.table = _conform(self.table, self.op.state.schema, f"operator {self.op.name!r}: its kept state")
        if emitted is None or emitted.num_rows == 0:
            return None
        return _conform(emitted, schema, f"operator {self.op.name!r}: what on_watermark emitted")
