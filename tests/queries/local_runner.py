"""The job's per-batch path without Spark, for fast query tests: the same task functions (jobs.operators) and
driver-side state (jobs.query_runtime) over micro-batches of replayed events, with each operator's input split into
`degree` tasks the way Spark would (by a hash of the key for a keyed operator, round robin otherwise). Spark itself
runs the same queries in tests/jobs/test_queries_on_spark.py."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from jobs.operators import task_function
from jobs.query_runtime import QueryState, ScheduleRef
from jobs.replay_source import event_batches
from queries.api import BatchContext, Query
from queries.api import simple_arrow_schema as arrow_schema


def split(table: pa.Table, degree: int, key: str | None) -> list[pa.Table]:
    if key is None:
        where = np.arange(table.num_rows) % degree
    else:  # any hash does: what matters is that a key's rows meet in one task
        where = (table.column(key).to_numpy(zero_copy_only=False).astype(np.int64) * 2654435761) % 2 ** 32 % degree
    return [table.filter(pa.array(where == i)) for i in range(degree)]


def run_locally(query: Query, schedule, bounds: list[int], degrees: list[dict[str, int]]) -> pa.Table:
    """The committed output of the query over batches [bounds[i], bounds[i+1]), batch i at degrees[i]
    (an operator missing from the dict: degree 1), then the final flush."""
    ctx = BatchContext(anchor_us=0, seed=schedule.spec.seed, schedule=ScheduleRef(schedule.spec.to_json(),
                                                                                  schedule.state()))
    state = QueryState(query)
    outputs = []
    out_schema = arrow_schema(query.output_schema())
    for (first, stop), deg in zip(zip(bounds, bounds[1:]), degrees):
        data = pa.Table.from_batches(list(event_batches(schedule, 0, first, stop)))
        for i, op in enumerate(query.operators):
            fn = task_function(op, ctx, count_input_ids=i == 0, state=state.payload(),
                               state_output=arrow_schema(op.schema) if op.state is not None else None)
            parts = []
            for part in split(data, deg.get(op.name, 1), op.key):
                batches = list(fn(iter(part.to_batches())))
                parts.extend(batches)
            schema = arrow_schema(op.schema + (", _state BINARY" if op.state is not None else ""))
            data = pa.Table.from_batches(parts, schema=schema) if parts else schema.empty_table()
        outputs.append(state.after_batch(data, int(schedule.arrival_us(stop - 1, stop)[0]) if stop > first else None))
    final = state.flush()
    if final is not None:
        outputs.append(final)
    return pa.concat_tables([o.cast(out_schema) for o in outputs])
