"""Queries as Spark runs them: each operator's transformation runs with mapInArrow on the Arrow rows of one task,
after a repartition to the operator's current degree (or chained into its predecessor's tasks when that
repartition would change nothing: `chains`), after the work it declares per record.

Also here: the benchmark topology's transformations (parse, enrich, window partials) and the topology written as a
query with the operator API (`topology_query`), so the benchmark and a user's query run on one path. The
benchmark's window state that spans micro-batches is kept as per-batch partial aggregates keyed by (window, key):
each batch writes its own partials, and a window's result is the sum of its partials over batches. A change of
parallelism only changes how a batch's partials are computed, never what they are, so it cannot lose or double
count state. Queries with state held across batches (queries.api.Stateful) go through jobs.query_runtime.
"""
from __future__ import annotations

import functools
import itertools
import time
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from controllers.cost_model import stage_groups
from jobs.query_runtime import as_table, stateful_step
from jobs.sink_check import partials_count
from jobs.topology import Topology
from queries.api import STATE_COLUMN, BatchContext, Operator, Query, QueryError

from params.units import US

PARSED_SCHEMA = "event_id BIGINT, arrival_ts TIMESTAMP, key INT, value BIGINT"
ENRICHED_SCHEMA = "event_id BIGINT, arrival_ts TIMESTAMP, key INT, value BIGINT, region INT, weighted DOUBLE"
AGGREGATE_SCHEMA = (
    "window_start_us BIGINT, key INT, events BIGINT, value_sum DOUBLE, first_arrival_us BIGINT, "
    "last_arrival_us BIGINT, event_id_sum BIGINT"
)
KEY_GROUP = "_key_group"  # the keyed operator's key group, added when a placement controller routes key groups
OUTPUT_SCHEMAS = {"parse": PARSED_SCHEMA, "enrich": ENRICHED_SCHEMA, "window_aggregate": AGGREGATE_SCHEMA,
                  "sink": AGGREGATE_SCHEMA}


def chains(query: Query, degrees: Mapping[str, int], chaining: bool = True) -> list[tuple[Operator, ...]]:
    """The operators grouped into the stages they run in. An operator joins its predecessor's stage (one Python
    task runs both, one after the other) when it needs no shuffle: it is not keyed and has the same degree, so the
    repartition before it would only move records between tasks of the same number. This is Flink's operator
    chaining; it saves a stage's fixed cost (task launch, Python worker hand-over, an Arrow round trip to the JVM,
    about 0.1 s per batch on 2 cores: docs/benchmarks.md) and changes no operator's degree or result.
    A DataFrame operator chains the same way: Spark runs it in the JVM on the output of the Python task before it,
    within the stage, and the Arrow operators after it join the pass that measures it (apply_query)."""
    ops = query.operators
    groups = stage_groups([op.keyed for op in ops], [degrees[op.name] for op in ops], chaining)
    return [tuple(ops[i] for i in group) for group in groups]


def apply_query(df, query: Query, degrees: Mapping[str, int], accumulators: Mapping | None = None,
                chaining: bool = True, routing: Sequence[int] | None = None, placement_stats=None,
                context: BatchContext = BatchContext(), state: bytes | None = None,
                observations: dict | None = None):
    """The query on a micro-batch DataFrame: before each stage of chained operators, repartition to its degree
    (by its key for a keyed operator, so all rows of a key land in one task). With `accumulators`, each task
    reports each operator's metrics. With `routing` (one routing value per key group, jobs.actuators.placement),
    the keyed operator's keys go by key group to the partitions the placement table names, and with
    `placement_stats` its tasks report per partition and per key group. `state` is the stateful operator's held
    state (jobs.query_runtime.QueryState.payload); its output then carries the new state in one more column.
    A DataFrame operator's function is applied to the repartitioned micro-batch; with `observations` (a dict this
    fills with one pyspark Observation per DataFrame operator, read after the batch's action:
    jobs.metrics.OperatorStats.absorb) its input rows are counted in the JVM, and a pass at the end of its stage
    measures its output rows and task time (dataframe_probe)."""
    from pyspark.sql import functions as F

    out = df
    first = query.operators[0].name
    last = query.operators[-1].name
    for chain in chains(query, degrees, chaining):
        head = chain[0]
        d = degrees[head.name]
        if head.keyed and routing is not None:
            group = F.pmod(F.hash(F.col(head.key)), F.lit(len(routing))).cast("int")
            route = F.element_at(F.array(*[F.lit(int(v)) for v in routing]), group + 1)
            out = out.withColumn(KEY_GROUP, group).repartition(d, route)
        else:
            out = out.repartition(d, head.key) if head.keyed else out.repartition(d)
        # within the stage: a Python pass per run of Arrow operators; a DataFrame operator's JVM plan between two
        # passes, measured by the pass after it (its probe), which also runs the Arrow operators that follow it
        passes: list[list] = []
        for op in chain:
            if op.dataframe is not None:
                if passes:
                    out = _python_pass(out, passes.pop())
                out = _dataframe_stage(out, op, context, op.name == first,
                                       observations if accumulators is not None else None)
                op_fn = task_function(dataframe_probe(op), context,
                                      accumulators[op.name] if accumulators is not None else None,
                                      counts_events=query.counts_events if op.name == last else None,
                                      clock_from_first_batch=op is not head)
                passes.append([(op, op_fn)])
                continue
            op_fn = task_function(op, context, accumulators[op.name] if accumulators is not None else None,
                                  count_input_ids=op.name == first,
                                  counts_events=query.counts_events if op.name == last else None,
                                  placement_stats=placement_stats if op.keyed and routing is not None else None,
                                  window_s=query.window_s, state=state if op.state is not None else None,
                                  state_output=_arrow_schema(op.schema) if op.state is not None else None)
            if passes:
                passes[-1].append((op, op_fn))
            else:
                passes.append([(op, op_fn)])
        out = _python_pass(out, passes.pop())
    return out


def _python_pass(df, ops: list[tuple[Operator, Callable]]):
    """One mapInArrow running these operators' task functions one after the other."""
    functions = [fn for _, fn in ops]
    last = ops[-1][0]
    schema = last.schema + (f", {STATE_COLUMN} BINARY" if last.state is not None else "")
    return df.mapInArrow(functions[0] if len(functions) == 1 else _chained(functions), schema)


def _dataframe_stage(df, op: Operator, context: BatchContext, first: bool, observations: dict | None):
    """A DataFrame operator on its (repartitioned) input: counted by an Observation where asked, its function, and
    its result selected and cast to the schema it declares, or QueryError naming the column it lacks."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    if observations is not None:
        observation = Observation(f"{op.name}-input")
        metrics = [F.count(F.lit(1)).alias("records")]
        if first:  # the source's rows: the batch checks they are the contiguous range it was served
            metrics.append(F.sum("event_id").alias("event_id_sum"))
        df = df.observe(observation, *metrics)
        observations[op.name] = observation
    result = op.dataframe(df, context)
    declared = _spark_schema(op.schema)
    have = set(result.columns)
    missing = [f.name for f in declared.fields if f.name not in have]
    if missing:
        raise QueryError(f"operator {op.name!r}: field 'schema' declares column(s) {', '.join(missing)} that its "
                         f"DataFrame does not have (it has: {', '.join(result.columns)})")
    return result.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in declared.fields])


def dataframe_probe(op: Operator) -> Operator:
    """The Arrow pass that ends a DataFrame operator's stage: it passes the rows on and, as its task function,
    reports the operator's output rows and its task's time, which includes the JVM work upstream in the stage (the
    JVM feeds the pass as it computes); when the operator runs in its predecessor's stage, its clock starts with
    the first rows it gives (the Python operator before it hands its rows over only once it has finished them).
    Its input count is replaced by the Observation's (the operator's input)."""
    return Operator(op.name, _identity, op.schema, key=op.key)


def _identity(table: pa.Table, context: BatchContext) -> pa.Table:
    return table


@functools.lru_cache(maxsize=None)
def _spark_schema(ddl: str):
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)


@functools.lru_cache(maxsize=None)
def _arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema Spark expects of rows declared as `ddl` (computed on the driver, where the JVM parses DDL;
    once per schema, not every batch)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(_spark_schema(ddl))


def _chained(functions: list[Callable]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """One task running several operators: each finishes its input before the next starts, so each one's clock
    (busy time, span) measures its own work only."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        data: Iterator[pa.RecordBatch] = batches
        for fn in functions[:-1]:
            data = iter(list(fn(data)))
        yield from functions[-1](data)

    return run


# ---- declared cost ------------------------------------------------------------------------------------------
def spend(records: int, cpu_us: float, wait_us: float) -> None:
    """Burn `records * cpu_us` of real CPU on this thread, then wait `records * wait_us`."""
    if records <= 0:
        return
    if cpu_us > 0:
        deadline = time.thread_time() + records * cpu_us / US
        x = 0
        while time.thread_time() < deadline:
            x += 1
    if wait_us > 0:
        time.sleep(records * wait_us / US)


# ---- the transformations (pure Arrow) -------------------------------------------------------------------------
def parse_batch(batch: pa.RecordBatch, payload_format: str = "binary") -> pa.RecordBatch:
    """Decode the event's value: the payload's first four bytes (little endian) for synthetic events; for a replayed
    Google task_events row, its CPU request in micro-cores (0 where the row has none), so that the window aggregate
    computes each machine's real requested load."""
    if payload_format == "google_task_events_csv":
        from workloads.records import CPU_REQUEST_FIELD

        fields = pc.split_pattern(pc.cast(batch.column("payload"), pa.string()), ",")
        cpu = pc.cast(pc.list_element(fields, CPU_REQUEST_FIELD), pa.string())
        cpu = pc.if_else(pc.equal(cpu, ""), "0", cpu)
        value = pc.cast(pc.round(pc.multiply(pc.cast(cpu, pa.float64()), 1e6)), pa.int64())
        return pa.RecordBatch.from_arrays(
            [batch.column("event_id"), batch.column("arrival_ts"), batch.column("key"), value],
            names=["event_id", "arrival_ts", "key", "value"],
        )
    payload = batch.column("payload")
    width = 8 if pa.types.is_large_binary(payload.type) else 4
    offsets = np.frombuffer(payload.buffers()[1], dtype=np.int64 if width == 8 else np.int32,
                            count=len(payload) + 1, offset=payload.offset * width)
    data = np.frombuffer(payload.buffers()[2], dtype=np.uint8)
    idx = offsets[:-1, None] + np.arange(4)[None, :]
    value = np.ascontiguousarray(data[idx]).view("<u4").reshape(-1).astype(np.int64)
    return pa.RecordBatch.from_arrays(
        [batch.column("event_id"), batch.column("arrival_ts"), batch.column("key"), pa.array(value, pa.int64())],
        names=["event_id", "arrival_ts", "key", "value"],
    )


def enrich_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Join each key with its reference data (region, weight): a deterministic lookup table by key."""
    key = batch.column("key").to_numpy(zero_copy_only=False)
    region = (key % 16).astype(np.int32)
    weight = 1.0 + (key % 7) / 10.0
    weighted = batch.column("value").to_numpy(zero_copy_only=False) * weight
    return pa.RecordBatch.from_arrays(
        list(batch.columns) + [pa.array(region, pa.int32()), pa.array(weighted, pa.float64())],
        names=list(batch.schema.names) + ["region", "weighted"],
    )


def window_partials(table: pa.Table, window_s: float) -> pa.Table:
    """Per (tumbling window, key) partial aggregates of one task's records."""
    window_us = int(window_s * US)
    arrival_us = pc.cast(table.column("arrival_ts"), pa.int64())
    start = pc.multiply(pc.divide(arrival_us, window_us), window_us)  # integer division
    t = pa.table(
        {"window_start_us": start, "key": table.column("key"), "weighted": table.column("weighted"),
         "arrival_us": arrival_us, "event_id": table.column("event_id")}
    )
    g = t.group_by(["window_start_us", "key"]).aggregate(
        [("event_id", "count"), ("weighted", "sum"), ("arrival_us", "min"), ("arrival_us", "max"), ("event_id", "sum")]
    )
    return pa.table(
        {
            "window_start_us": g.column("window_start_us"),
            "key": g.column("key"),
            "events": g.column("event_id_count"),
            "value_sum": g.column("weighted_sum"),
            "first_arrival_us": g.column("arrival_us_min"),
            "last_arrival_us": g.column("arrival_us_max"),
            "event_id_sum": g.column("event_id_sum"),
        }
    )


# ---- the benchmark topology, written with the operator API (queries.api) -------------------------------------
def topology_query(topology: Topology) -> Query:
    """The benchmark topology (jobs.topology: declared costs) as a query: the same operators a user's query is
    made of, so both run on one path."""
    fmt, window_s = topology.payload_format, topology.window_s
    transforms = {
        "parse": lambda t, ctx: _per_batch(t, lambda b: parse_batch(b, fmt)),
        "enrich": lambda t, ctx: _per_batch(t, enrich_batch),
        # the whole task's input forms the partials, so each (window, key) is emitted once per task
        "window_aggregate": lambda t, ctx: window_partials(t, window_s),
        "sink": lambda t, ctx: t,
    }
    return Query(
        name="benchmark", window_s=window_s, counts_events=partials_count,
        description="parse -> enrich -> keyed tumbling-window partial aggregates -> sink, with declared costs",
        operators=tuple(Operator(op.name, transforms[op.kind], OUTPUT_SCHEMAS[op.kind],
                                 key="key" if op.keyed else None, cpu_us=op.cpu_us, wait_us=op.wait_us)
                        for op in topology.operators))


def _per_batch(table: pa.Table, fn: Callable[[pa.RecordBatch], pa.RecordBatch]) -> pa.Table:
    return pa.Table.from_batches([fn(b) for b in table.to_batches()])


# ---- operators as mapInArrow functions ------------------------------------------------------------------------
def task_function(op: Operator, context: BatchContext, stats=None, count_input_ids: bool = False,
                  counts_events: Callable[[pa.Table], tuple[int, int]] | None = None, placement_stats=None,
                  window_s: float | None = None, state: bytes | None = None, state_output: pa.Schema | None = None,
                  clock_from_first_batch: bool = False
                  ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The mapInArrow function of one operator: its declared cost, then its transformation on the task's whole
    input. With `stats` (an accumulator) it reports its task's metrics (and, for the first operator, the sum of the
    event ids it read: the batch checks they are the contiguous range the source served); with `placement_stats`
    (the keyed operator under a placement controller) its partition's and key groups' figures. A stateful operator
    also returns its keys' new state, as one more row (jobs.query_runtime)."""
    cpu_us, wait_us = op.cpu_us, op.wait_us

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if clock_from_first_batch:
            batches = iter(batches)
            head = next(batches, None)
            batches = itertools.chain([head] if head is not None else [], batches)
        start_wall = time.time()
        start = time.perf_counter()
        pending = [b for b in batches if b.num_rows]
        records_in = sum(b.num_rows for b in pending)
        id_sum_in = sum(int(pc.sum(b.column("event_id")).as_py() or 0) for b in pending) if count_input_ids else 0
        spend(records_in, cpu_us, wait_us)
        table = pa.Table.from_batches(pending) if records_in else None
        output: pa.Table | None = None
        state_row: pa.Table | None = None  # a stateful operator's new state, on its way to the driver
        if table is not None:
            if op.state is not None:
                output, state_row = stateful_step(op, table, state, context, state_output)
            else:
                output = as_table(op.transform(table, context), f"operator {op.name!r}: its transform")
        records_out = output.num_rows if output is not None else 0
        events_out = records_out
        if counts_events is not None and output is not None:
            events_out, _ = counts_events(output)
        busy = time.perf_counter() - start
        if stats is not None:
            stats.add(task_stats(records_in, records_out, events_out, id_sum_in, busy, start_wall))
        if placement_stats is not None:
            placement_stats.add(key_group_stats(table, window_s or 0.0, busy))
        if output is not None:
            yield from output.to_batches()
        if state_row is not None:
            yield from state_row.to_batches()

    return run


# ---- per-operator task statistics, merged by a Spark accumulator ----------------------------------------------
# (records_in, records_out, events_out, event_id_sum_in, busy_s, tasks, max_task_s, first_start, last_end): events_out
# is what the output stands for (records, or the events partial aggregates count); event_id_sum_in is the first
# operator's only
EMPTY_STATS = (0, 0, 0, 0, 0.0, 0, 0.0, float("inf"), float("-inf"))


def task_stats(records_in, records_out, events_out, id_sum_in, busy_s, start_wall) -> tuple:
    return (records_in, records_out, events_out, id_sum_in, busy_s, 1, busy_s, start_wall, start_wall + busy_s)


def merge_stats(a: tuple, b: tuple) -> tuple:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5],
            max(a[6], b[6]), min(a[7], b[7]), max(a[8], b[8]))


# ---- per-partition and per-key-group figures of the keyed operator, merged by a Spark accumulator ----------------
def key_group_stats(table: pa.Table | None, window_s: float, busy_s: float) -> dict:
    """{"partitions": {p: [busy_s, records]}, "groups": {g: [records, state_rows]}, "where": {g: p}} of one task:
    its partition's task time and records; per key group the records it read and the (window, key) partial rows it
    holds (the state it would carry if windows lived in tasks); and the partition each key group ran on, which the
    batch checks against the placement table."""
    from pyspark import TaskContext

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else 0
    records = table.num_rows if table is not None else 0
    out = {"partitions": {partition: [busy_s, records]}, "groups": {}, "where": {}}
    if table is None or KEY_GROUP not in table.column_names or records == 0:
        return out
    group = table.column(KEY_GROUP).to_numpy()
    ids, counts = np.unique(group, return_counts=True)
    window_us = int(window_s * US)
    start = pc.multiply(pc.divide(pc.cast(table.column("arrival_ts"), pa.int64()), window_us), window_us)
    rows = pa.table({"w": start, "key": table.column("key"), "g": table.column(KEY_GROUP)}).group_by(
        ["w", "key", "g"]).aggregate([])
    state_ids, state_counts = np.unique(rows.column("g").to_numpy(), return_counts=True)
    state = dict(zip(state_ids.tolist(), state_counts.tolist()))
    out["groups"] = {int(g): [int(n), int(state.get(int(g), 0))] for g, n in zip(ids.tolist(), counts.tolist())}
    out["where"] = {int(g): partition for g in ids.tolist()}
    return out


def merge_key_group_stats(a: dict, b: dict) -> dict:
    """Sums per partition and per key group; `where` keeps each key group's partition, -1 where two tasks both
    saw it (the routing would then be broken: jobs.batch refuses the batch)."""
    out = {"partitions": dict(a.get("partitions", {})), "groups": dict(a.get("groups", {})),
           "where": dict(a.get("where", {}))}
    for section in ("partitions", "groups"):
        for k, v in b.get(section, {}).items():
            mine = out[section].get(k)
            out[section][k] = [x + y for x, y in zip(mine, v)] if mine else list(v)
    for k, v in b.get("where", {}).items():
        out["where"][k] = v if out["where"].get(k, v) == v else -1
    return out
