"""Native Structured Streaming queries shipped as examples (`--spark-query native:NAME`): written as a Spark user
writes them — Spark's windows, watermarks, joins and state store — and each equal to a pandas reference
(queries.nexmark_reference for Nexmark; `windowed_count_reference` here).

Nexmark's events come from the replayed event ids through Beam's generator (workloads.nexmark), one Arrow batch at
a time (`nexmark_events`); event time is the event's scheduled time in the run, `date_time_us` microseconds from the
schedule's start, as a timestamp (1970-01-01 plus that), so Spark's windows fall where the references' do.
Watermarks allow no lateness beyond the replay's own order: every event is read in order of scheduled time, so a
window closes once the stream has passed its end.
"""
from __future__ import annotations

import pandas as pd

from queries import nexmark_reference as ref

WINDOW = "10 seconds"
SLIDE = "5 seconds"
COUNT_WINDOW = "5 seconds"
COUNT_WATERMARK = "2 seconds"
QUERIES = ("windowed_count", "q5", "q7", "q8")


def windowed_count(events):
    """Events per key and tumbling 5-second window of arrival time, emitted once the watermark (2 s behind the
    latest arrival) passes the window's end."""
    from pyspark.sql import functions as F

    counts = (events.withWatermark("arrival_ts", COUNT_WATERMARK)
              .groupBy(F.window("arrival_ts", COUNT_WINDOW), "key").count())
    return counts.select(F.col("window.start").alias("window_start"), "key", F.col("count").alias("events"))


def windowed_count_reference(arrival_us: pd.Series, keys: pd.Series) -> pd.DataFrame:
    """What windowed_count emits over a whole stream, every window closed: (window_start µs, key, events)."""
    window_us = 5_000_000
    frame = pd.DataFrame({"window_start": arrival_us // window_us * window_us, "key": keys})
    out = frame.groupby(["window_start", "key"], as_index=False).size().rename(columns={"size": "events"})
    return out.sort_values(["window_start", "key"], ignore_index=True)


def nexmark_events(events, workload):
    """The replayed events as Nexmark's wide events (queries.nexmark.WIDE_SCHEMA) plus `event_time`, the scheduled
    time as a timestamp: a mapInArrow over the stream, so it works on any source partitioning."""
    from queries.nexmark import WIDE_DDL, schedule_time_of, wide_events
    from workloads.nexmark import generate_ids

    spec_json, state, seed = workload.spec.to_json(), workload.schedule_state, workload.seed

    def generate(batches):
        from workloads.schedule_ref import ScheduleRef

        schedule = ScheduleRef(spec_json, state).get()
        time_of = schedule_time_of(schedule)
        for batch in batches:
            ids = batch.column(0).to_numpy()
            if len(ids):
                yield from wide_events(generate_ids(seed, ids, time_of(ids), time_of)).to_batches()

    from pyspark.sql import functions as F

    wide = events.select("event_id").mapInArrow(generate, WIDE_DDL)
    return wide.withColumn("event_time", F.timestamp_micros("date_time_us"))


def _bids(events, workload):
    from pyspark.sql import functions as F
    from workloads.nexmark import BID

    return nexmark_events(events, workload).where(F.col("kind") == BID).withWatermark("event_time", "0 seconds")


def q5(events, workload):
    """Hot items: per sliding window (10 s every 5 s), the auction(s) with the most bids. Two of Spark's stateful
    aggregations chained in append mode: bids per (window, auction), then, per window, its highest count and the
    auctions that reached it. The second groups on `window_time` of the first's window (its end less 1 µs) in
    tumbling windows of the slide, which holds exactly one sliding window each, so the watermark carries over."""
    from pyspark.sql import functions as F

    counts = (_bids(events, workload).groupBy(F.window("event_time", WINDOW, SLIDE), "auction")
              .agg(F.count(F.lit(1)).alias("bids")))
    per_window = (counts.groupBy(F.window(F.window_time("window"), SLIDE).alias("slide"))
                  .agg(F.max("bids").alias("top"), F.collect_list(F.struct("auction", "bids")).alias("counts")))
    # the sliding window ends where its slide does: it started one window length before that end
    start_us = F.unix_micros(F.col("slide.end")) - F.lit(ref.WINDOW_US)
    return (per_window.select(start_us.alias("window_start_us"),
                              F.explode(F.filter("counts", lambda c: c["bids"] == F.col("top"))).alias("hot"))
            .select("window_start_us", "hot.auction", "hot.bids"))


def q7(events, workload):
    """Highest bid: per tumbling window of 10 s, the highest price, kept in the state store; joined back to the
    window's bids in the sink (q7_answer), since a stream-stream join on an aggregate is not allowed."""
    from pyspark.sql import functions as F

    bids = _bids(events, workload)
    return (bids.groupBy(F.window("event_time", WINDOW))
            .agg(F.max_by(F.struct("price", "auction", "bidder", "date_time_us"), "price").alias("top"),
                 F.max("price").alias("price"), F.collect_list(F.struct("auction", "bidder", "price",
                                                                         "date_time_us")).alias("bids"))
            .select(F.unix_micros(F.col("window.start")).alias("window_start_us"), "price",
                    F.explode(F.filter("bids", lambda b: b["price"] == F.col("price"))).alias("bid"))
            .select("window_start_us", "bid.auction", "bid.bidder", "bid.price", "bid.date_time_us"))


def q8(events, workload):
    """New users: people who created an auction in the tumbling 10-second window in which they registered. A
    stream-stream inner join of people and auctions on (person = seller, window), both sides in the state store,
    rows emitted when the pair meets and each distinct (person, window) once (the answer deduplicates)."""
    from pyspark.sql import functions as F
    from workloads.nexmark import AUCTION, PERSON

    wide = nexmark_events(events, workload).withWatermark("event_time", "0 seconds")
    people = wide.where(F.col("kind") == PERSON).select(
        F.col("id"), "name", F.window("event_time", WINDOW).alias("p_window"))
    auctions = wide.where(F.col("kind") == AUCTION).select(
        F.col("seller"), F.window("event_time", WINDOW).alias("a_window"))
    joined = people.join(auctions, (F.col("id") == F.col("seller")) & (F.col("p_window") == F.col("a_window")))
    return joined.select("id", "name", F.unix_micros(F.col("p_window.start")).alias("window_start_us"))


def q8_answer(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[["id", "name", "window_start_us"]].drop_duplicates().sort_values(
        ["id", "name", "window_start_us"], ignore_index=True)


REFERENCES = {"q5": ref.q5, "q7": ref.q7, "q8": ref.q8}
