"""Nexmark q1, q2 and q5 written with the DataFrame API (queries.api: an operator's `dataframe` function), as a
Spark user writes them: the same answers as the Arrow versions in queries.nexmark (checked against the same pandas
references), so the two ways of writing an operator can be compared on one query.

Only the `events` operator stays in Python: it is Beam's generator turning replayed ids into Nexmark events. q5's
window counts per auction are a DataFrame `groupBy` in each micro-batch, keyed by auction: the engine repartitions
the batch by auction at the operator's degree, so Spark aggregates with no other exchange (see its plan in
tests/jobs/test_queries_on_spark.py). Adding those counts to the counts of earlier batches is state across batches,
so it stays a `Stateful` operator.
"""
from __future__ import annotations

import pyarrow as pa

from queries import nexmark_reference as ref
from queries.api import BatchContext, Operator, Query, Stateful, simple_ddl
from queries.nexmark import EVENTS, Q5_OUT, Q5_STATE, top_per_window
from workloads.nexmark import BID


def _convert(events, ctx: BatchContext):
    from pyspark.sql import functions as F

    return (events.where(F.col("kind") == BID)
            .select("auction", "bidder", F.expr("price * 89 div 100").alias("price"), "date_time_us"))


def q1df() -> Query:
    """q1 with the DataFrame API: each bid's price in euros (price * 89 / 100, integer division)."""
    return Query("q1df", (EVENTS, Operator("convert", None, "auction BIGINT, bidder BIGINT, price BIGINT, "
                                           "date_time_us BIGINT", dataframe=_convert)), description=q1df.__doc__)


def _select(events, ctx: BatchContext):
    from pyspark.sql import functions as F

    return (events.where((F.col("kind") == BID) & (F.col("auction") % ref.AUCTION_SKIP == 0))
            .select("auction", "price"))


def q2df() -> Query:
    """q2 with the DataFrame API: (auction, price) of the bids on every 123rd auction."""
    return Query("q2df", (EVENTS, Operator("select", None, "auction BIGINT, price BIGINT", dataframe=_select)),
                 description=q2df.__doc__)


def _window_counts(events, ctx: BatchContext):
    """This batch's bids per (auction, sliding window): every window a bid falls in, then a count per key."""
    from pyspark.sql import functions as F

    last = F.expr(f"date_time_us div {ref.SLIDE_US} * {ref.SLIDE_US}")
    starts = F.array(*[last - k * ref.SLIDE_US for k in range(ref.WINDOW_US // ref.SLIDE_US)])
    windows = events.where(F.col("kind") == BID).select(F.col("auction").alias("key"),
                                                        F.explode(starts).alias("window_start_us"))
    return windows.groupBy("key", "window_start_us").agg(F.count(F.lit(1)).alias("bids"))


def _add_counts(rows: pa.Table, state: pa.Table, ctx: BatchContext) -> tuple[pa.Table, pa.Table]:
    """The batch's counts per (auction, window) added to the counts held for the same auctions."""
    merged = pa.concat_tables([state, rows.select(Q5_STATE.names).cast(Q5_STATE)]).group_by(
        ["key", "window_start_us"]).aggregate([("bids", "sum")]).rename_columns(["key", "window_start_us", "bids"])
    return Q5_OUT.empty_table(), merged


def q5df() -> Query:
    """q5 with a DataFrame operator: per sliding window (10 s every 5 s) the auction(s) with the most bids. The
    batch's counts per (auction, window) are a Spark groupBy keyed by auction; the running counts are state,
    emitted when the watermark passes a window's end, as in q5."""
    return Query("q5df", (
        EVENTS,
        Operator("window_counts", None, "key BIGINT, window_start_us BIGINT, bids BIGINT", key="auction",
                 dataframe=_window_counts),
        Operator("count", None, simple_ddl(Q5_OUT), key="key", state=Stateful(
            Q5_STATE, _add_counts, lambda s, w, f: top_per_window(s, w, f, "bids", Q5_OUT, ref.WINDOW_US)))),
        description=q5df.__doc__)
