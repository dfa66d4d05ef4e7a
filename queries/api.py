"""The operator API: how a query is written so that any controller can re-parallelise it live.

A query is a chain of named operators over the replayed events. Each operator runs at its own degree, which a
controller may change between two micro-batches: before an operator, the batch is repartitioned to its degree (by
its `key` column when it declares one, so that all rows of a key meet in one task). An operator's `transform`
takes the rows one task holds, as one Arrow table, and returns its output rows; where Python is not needed it can
use pyarrow.compute or pandas on that table. Consecutive operators that need no shuffle run in one task (chaining).

State. Spark runs each micro-batch as a batch job (foreachBatch), so state that spans batches is held by the
driver between batches, never inside a task. A stateful operator (it must be the query's last: its output and its
new state both come back to the driver with the batch) is given, in each task, the state rows of the keys in its
input, and returns its output and the new state rows of those keys (`Stateful.step`). After the batch the driver
replaces those keys' rows and calls `Stateful.on_watermark` with the event time every event up to which has been
read: windows and auctions that closed are emitted there (Flink's event-time timers, run on the driver). Because
the state is partitioned by key afresh for every batch, a change of degree moves state with its keys by
construction: nothing is lost or counted twice. Keys are one column of the operator's input and of its state.

DataFrame operators. Where a transformation is what a Spark user writes anyway (select, filter, withColumn, a
groupBy or dropDuplicates on the operator's key), the operator gives `dataframe` instead of `transform`: a function
(DataFrame, context) -> DataFrame applied to the micro-batch after the repartition to its degree, run by Spark's JVM
with no Python per row. Because that repartition is by the operator's key, Spark plans a groupBy, a window or a
self-join on that key with no further exchange, so the controller's degree is the degree its work runs at. What
a controller cannot change: a shuffle inside the function on anything else (another key, an orderBy) runs at
spark.sql.shuffle.partitions, fixed for the run. The engine measures such an operator from Spark itself: its input
rows with an Observation (CollectMetrics, no extra job), its output rows and task time with a thin Arrow pass at the
end of its stage. A DataFrame operator holds no state across batches (state is a `Stateful` operator's role).

This module is pure (pyarrow only): a query can be built and checked without Spark, and its Arrow operators run in
unit tests on plain tables.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

# the replay source's rows, the first operator's input (jobs.replay_source.SCHEMA)
SOURCE_SCHEMA = "event_id BIGINT, arrival_ts TIMESTAMP, key INT, payload BINARY"
STATE_COLUMN = "_state"  # the stateful operator's new state travels back to the driver in this column


class QueryError(ValueError):
    """A query that cannot run, with the field at fault named."""


@dataclass(frozen=True)
class BatchContext:
    """What a task knows about the batch it runs in. `anchor_us` is the epoch microsecond of schedule time 0, so an
    event's time in the run is `arrival_ts - anchor_us`; `seed` is the workload's seed; `schedule` gives the
    scheduled time of any event (a lazily built workloads.Schedule, see jobs.query_runtime)."""

    anchor_us: int = 0
    seed: int = 0
    schedule: Any = None


@dataclass(frozen=True)
class Stateful:
    """A stateful operator's contract.

    step(rows, state, context) -> (output, new_state): `rows` is this task's input; `state` the held rows of the
    keys in `rows` (the other keys' state is kept as it is); `new_state` replaces them (rows whose key it no longer
    lists are dropped). on_watermark(state, watermark_us, final) -> (output, kept_state) runs on the driver after
    every batch with the whole state: emit what the event time closed, keep the rest; `final` is the last call
    after the stream ended (flush what would close later, or keep it unemitted, as the query defines)."""

    schema: pa.Schema
    step: Callable[[pa.Table, pa.Table, BatchContext], tuple[pa.Table, pa.Table]]
    on_watermark: Callable[[pa.Table, int, bool], tuple[pa.Table, pa.Table]] | None = None


@dataclass(frozen=True)
class Operator:
    """One operator: its name (what controllers and MLflow call it), its transformation, the Spark DDL schema of its
    output, the column it is keyed by (None: rows go to any task), its state if it has one, and the declared cost
    it spends per input record (real CPU `cpu_us`, emulated remote waiting `wait_us`; 0 for a real query).
    Exactly one of `transform` (Arrow, per task), `dataframe` (Spark DataFrame API, per micro-batch) or `state`
    says what it does."""

    name: str
    transform: Callable[..., Any] | None
    schema: str
    key: str | None = None
    state: Stateful | None = None
    cpu_us: float = 0.0
    wait_us: float = 0.0
    dataframe: Callable[..., Any] | None = None

    @property
    def keyed(self) -> bool:
        return self.key is not None


@dataclass(frozen=True)
class Query:
    """A named chain of operators. `answer` turns the committed output (every batch's rows and the final flush,
    concatenated) into the query's result where that is not the rows themselves (an upsert stream's last value, a
    read-time aggregate); `counts_events` says how many source events and which ids a batch's output stands for,
    when it can (a pass-through, partial aggregates that count), which makes the exactly-once check count events
    rather than batches."""

    name: str
    operators: tuple[Operator, ...]
    answer: Callable[[pa.Table], Any] | None = None
    counts_events: Callable[[pa.Table], tuple[int, int]] | None = None
    description: str = ""
    window_s: float | None = None  # the benchmark topology's window: placement's state estimate reads it

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.operators)

    @property
    def stateful(self) -> Operator | None:
        return next((op for op in self.operators if op.state is not None), None)

    def output_schema(self) -> str:
        return self.operators[-1].schema


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def schema_columns(ddl: str) -> list[str]:
    """Column names of a Spark DDL schema string ("a BIGINT, b ARRAY<INT>, c DECIMAL(10,2)")."""
    names, depth, start = [], 0, 0
    for i, ch in enumerate(ddl + ","):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            part = ddl[start:i].strip()
            if part:
                names.append(part.split()[0].strip("`"))
            start = i + 1
    return names


_SIMPLE_TYPES = {"BIGINT": pa.int64(), "INT": pa.int32(), "STRING": pa.string(), "DOUBLE": pa.float64(),
                 "BINARY": pa.binary(), "TIMESTAMP": pa.timestamp("us", tz="UTC")}


def simple_arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL schema of simple column types (BIGINT, INT, STRING, DOUBLE, BINARY, TIMESTAMP),
    without Spark: for tests and empty answers. The job itself asks Spark's parser, which reads every type."""
    fields = []
    for part in ddl.split(","):
        name, kind = part.split()
        fields.append((name, _SIMPLE_TYPES[kind.upper()]))
    return pa.schema(fields)


def simple_ddl(schema: pa.Schema) -> str:
    """The DDL of an Arrow schema of simple column types (the inverse of simple_arrow_schema)."""
    names = {t: n for n, t in _SIMPLE_TYPES.items()}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)


def check_query(query: Any, source: str) -> Query:
    """The query, or QueryError naming what is wrong and where (`source`: the module:function it came from)."""
    if not isinstance(query, Query):
        raise QueryError(f"{source}: returned {type(query).__name__}, expected a queries.api.Query")
    if not query.operators:
        raise QueryError(f"{source}: query {query.name!r} has no operators")
    columns = schema_columns(SOURCE_SCHEMA)
    seen: set[str] = set()
    for i, op in enumerate(query.operators):
        where = f"{source}: operators[{i}]"
        if not isinstance(op, Operator):
            raise QueryError(f"{where} is a {type(op).__name__}, expected a queries.api.Operator")
        if not isinstance(op.name, str) or not _NAME.match(op.name):
            raise QueryError(f"{where}: field 'name' must be a name (letters, digits, _ or -), got {op.name!r}")
        where = f"{source}: operator {op.name!r}"
        if op.name in seen:
            raise QueryError(f"{where}: field 'name' is used twice; operator names must be unique")
        seen.add(op.name)
        given = [f for f in ("transform", "dataframe", "state") if getattr(op, f) is not None]
        if len(given) > 1:
            raise QueryError(f"{where}: give one of fields 'transform', 'dataframe', 'state', not "
                             f"{' and '.join(repr(f) for f in given)}")
        if op.dataframe is not None and not callable(op.dataframe):
            raise QueryError(f"{where}: field 'dataframe' must be a function (DataFrame, context) -> DataFrame")
        if op.dataframe is None and op.state is None and not callable(op.transform):
            raise QueryError(f"{where}: field 'transform' must be a function (table, context) -> table (or give "
                             "'dataframe' for a DataFrame API operator)")
        if not isinstance(op.schema, str) or not schema_columns(op.schema):
            raise QueryError(f"{where}: field 'schema' must be a Spark DDL schema string, got {op.schema!r}")
        if op.key is not None and op.key not in columns:
            raise QueryError(f"{where}: field 'key' names column {op.key!r}, which its input does not have "
                             f"(input columns: {', '.join(columns)})")
        for cost in ("cpu_us", "wait_us"):
            v = getattr(op, cost)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise QueryError(f"{where}: field {cost!r} must be a number >= 0, got {v!r}")
        if op.dataframe is not None and (op.cpu_us or op.wait_us):
            raise QueryError(f"{where}: fields 'cpu_us' and 'wait_us' declare emulated work for an Arrow operator; "
                             "a DataFrame operator's cost is what Spark spends on it")
        if op.state is not None:
            if op.key is None:
                raise QueryError(f"{where}: a stateful operator needs field 'key' (its state is partitioned by it)")
            if i != len(query.operators) - 1:
                raise QueryError(f"{where}: a stateful operator must be the query's last (its state returns to the "
                                 f"driver with the batch's output); {len(query.operators) - 1 - i} operator(s) "
                                 "follow it")
            if not isinstance(op.state.schema, pa.Schema) or op.key not in op.state.schema.names:
                raise QueryError(f"{where}: field 'state.schema' must be a pyarrow schema holding the key column "
                                 f"{op.key!r}")
            if not callable(op.state.step):
                raise QueryError(f"{where}: field 'state.step' must be a function (rows, state, context) -> "
                                 "(output, new state)")
        columns = schema_columns(op.schema)
    if query.counts_events is not None and query.stateful is not None:
        raise QueryError(f"{source}: field 'counts_events' cannot be given with a stateful operator (what "
                         "on_watermark emits stands for events of earlier batches)")
    return query


def closed_windows(state: pa.Table, watermark_us: int, final: bool, window_us: int,
                   start_column: str = "window_start_us") -> tuple[pa.Table, pa.Table]:
    """(closed, kept): the state rows of tumbling windows every event of which has been read (window end <= the
    watermark; every row when `final`), and the others. The usual body of a windowed query's `on_watermark`."""
    if final:
        return state, state.schema.empty_table()
    closed = pc.less_equal(pc.add(state.column(start_column), window_us), watermark_us)
    return state.filter(closed), state.filter(pc.invert(closed))


def describe_query(query: Query) -> dict[str, Any]:
    """The query as data (what MLflow records): its operators' names, keys, state and declared costs."""
    return {"name": query.name, "description": " ".join(query.description.split()),
            "operators": [{"name": op.name, "key": op.key or "", "stateful": op.state is not None,
                           "api": "dataframe" if op.dataframe is not None else "arrow",
                           "cpu_us": op.cpu_us, "wait_us": op.wait_us, "schema": op.schema}
                          for op in query.operators]}
