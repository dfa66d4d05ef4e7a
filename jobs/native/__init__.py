"""Native queries: a user's unmodified Structured Streaming query, its state in Spark's state store, rescaled on the
knobs Spark has.

The laboratory's queries (jobs.batch, queries.api) change every operator's degree live inside foreachBatch, with
stateful operators' state held by the driver. A Spark team's own query keeps its state in the state store (RocksDB)
with a fixed number of state partitions, which Spark 4.2 can rewrite while the query is stopped
(`StreamingCheckpointManager.repartition`). So here the one knob a controller turns is the query's partition count,
changed by restart: stop at a batch boundary, repartition the checkpoint's state, start again with
`spark.sql.shuffle.partitions` set to the new count (jobs.native.rescale).

    query.py       the user's function (MODULE:FUNCTION), called on the replayed events, checked
    checkpoint.py  what Spark's checkpoint says: each batch's event range, partitions, the last batch committed
    sink.py        foreachBatch: the query's output committed per batch, each batch measured
    rescale.py     the restart primitive with its measured phases
    run.py         a whole run: the controller steering the query's partitions, recorded in MLflow
"""
