"""Nexmark on this machine: each query's saturated throughput per degree through the operator API, against the same
query written as plain Spark (DataFrame operators, no operator API, no metrics, no held state), side by side.

    python -m benchmarks.nexmark                 about 5 minutes on a 2-core machine (docs/nexmark.md)
    python -m benchmarks.nexmark --queries q1,q5 --degrees 2 --out table.md
    python -m benchmarks.nexmark --suite-parent RUN_ID     the Nexmark suite's results (suites/nexmark.yaml)

Saturated means batches back to back, each a fixed range of events (`--events`, default 40,000), so events per
second of wall time is the most the query sustains at that batch size. Both sides read the same events from the
replay source, generate the Nexmark events with the same generator (a Python step either way), bring their output
to the driver and commit it with the same sink. The operator API's side is what a run's batch does
(jobs.batch.BatchProcessor): per-operator metrics, the stateful operator's state sent to its tasks and merged
back, the watermark's emissions. The plain side computes the same answer per batch with Spark's own joins and
aggregates and keeps nothing between batches, so it does less work than a streaming query would (its state store,
its watermarks): the ratio is a lower bound of the API's relative throughput. Each round runs both in ABBA order;
the ratio is the median over rounds. Ratios, not seconds, are the result: the machine is shared and noisy. Never
run this next to another heavy job.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from queries import nexmark as nx
from queries import nexmark_reference as ref

GOAL_RATIO = 0.5  # the goal: API throughput >= 0.5x the plain query's


def plain_query(name: str, events):
    """Query `name` on a DataFrame of wide Nexmark events with Spark's own operators (the answer per batch)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    bids = events.filter(F.col("kind") == 2)
    people = events.filter(F.col("kind") == 0)
    auctions = events.filter(F.col("kind") == 1)
    window = (F.floor(F.col("date_time_us") / ref.WINDOW_US) * ref.WINDOW_US).cast("long")
    if name == "q0":
        return events
    if name == "q1":
        return bids.select("auction", "bidder", F.expr("price * 89 div 100").alias("price"), "date_time_us")
    if name == "q2":
        return bids.filter(F.col("auction") % ref.AUCTION_SKIP == 0).select("auction", "price")
    if name == "q3":
        sellers = people.filter(F.col("state").isin(*ref.Q3_STATES)).select("id", "name", "city", "state")
        items = auctions.filter(F.col("category") == ref.Q3_CATEGORY).select(F.col("id").alias("auction"), "seller")
        return items.join(sellers, items.seller == sellers.id).select("name", "city", "state", "auction")
    if name == "q4":
        a = auctions.select(F.col("id").alias("a_id"), F.col("date_time_us").alias("a_time"), "expires_us",
                            "reserve", "category")
        b = bids.select("auction", "bidder", "price", "date_time_us", "event_id")
        valid = b.join(a, b.auction == a.a_id).filter(
            (F.col("date_time_us") >= F.col("a_time")) & (F.col("date_time_us") < F.col("expires_us"))
            & (F.col("price") >= F.col("reserve")))
        best = Window.partitionBy("auction").orderBy(F.desc("price"), "date_time_us", "event_id")
        wins = valid.withColumn("rank", F.row_number().over(best)).filter(F.col("rank") == 1)
        return wins.groupBy("category").agg(F.avg("price").alias("average_price"))
    if name == "q5":
        slide = (F.floor(F.col("date_time_us") / ref.SLIDE_US) * ref.SLIDE_US).cast("long")
        w = bids.select("auction", F.explode(F.array(slide, slide - ref.SLIDE_US)).alias("window_start_us"))
        counts = w.groupBy("window_start_us", "auction").agg(F.count("*").alias("bids"))
        top = counts.groupBy("window_start_us").agg(F.max("bids").alias("bids"))
        return counts.join(top, ["window_start_us", "bids"])
    if name == "q7":
        b = bids.withColumn("window_start_us", window)
        top = b.groupBy("window_start_us").agg(F.max("price").alias("price"))
        return b.join(top, ["window_start_us", "price"]).select("window_start_us", "auction", "bidder", "price",
                                                                "date_time_us")
    if name == "q8":
        p = people.select("id", "name", window.alias("window_start_us"))
        a = auctions.select(F.col("seller").alias("id"), window.alias("window_start_us")).distinct()
        return p.join(a, ["id", "window_start_us"]).select("id", "name", "window_start_us")
    raise ValueError(name)


class ApiPath:
    """What a run's batch does with a query (jobs.batch.BatchProcessor), minus the controller."""

    def __init__(self, spark, name: str, spec, schedule_state: str, sink: Path):
        from jobs.metrics import OperatorStats
        from jobs.query_runtime import QueryState, batch_context

        self.query = nx.build(name)
        self.state = QueryState(self.query)
        self.context = batch_context(spec, schedule_state)
        self.stats = OperatorStats(spark.sparkContext, self.query.names)
        self.sink = sink
        self.batch = 0

    def run(self, df, degree: int, last_event_us: int) -> int:
        from jobs.operators import apply_query
        from jobs.sink import commit_batch

        self.stats.reset()
        out = apply_query(df, self.query, {op: degree for op in self.query.names}, self.stats.accumulators,
                          context=self.context, state=self.state.payload(),
                          observations=self.stats.observations).toArrow()
        self.stats.absorb()
        self.batch += 1
        commit_batch(self.sink, self.batch, self.state.after_batch(out, last_event_us))
        return self.stats.raw(self.query.names[0])[0]


def measure(spark, work: Path, names: list[str], degrees: list[int], events: int, batches: int,
            rounds: int, log=print) -> list[dict]:
    """Per query and degree: events/s through the API and plainly, and their ratio (median over rounds)."""
    from jobs.operators import task_function
    from jobs.query_runtime import batch_context
    from jobs.sink import commit_batch
    from workloads.schedule import Schedule
    from workloads.spec import parse_workload

    total = events * batches * (2 * rounds + 2)  # a warm-up and the rounds, each on both paths
    rate = 5000
    spec = parse_workload({"name": "nexmark-bench", "profile": "constant", "params": {"rate": rate},
                           "duration_s": total / rate + 1, "seed": 1}, "benchmarks.nexmark")
    schedule = Schedule(spec)
    state = schedule.state()

    def source(first: int, stop: int, degree: int):
        return (spark.read.format("workload_replay").option("spec", spec.to_json()).option("schedule_state", state)
                .option("first", str(first)).option("stop", str(stop)).option("partitions", str(degree)).load())

    events_fn = task_function(nx.EVENTS, batch_context(spec, state))
    wide = nx.WIDE_DDL
    results = []
    for name in names:
        for degree in degrees:
            spark.conf.set("spark.sql.shuffle.partitions", str(degree))
            api = ApiPath(spark, name, spec, state, work / f"api-{name}-{degree}")
            cursor = [0]

            def run_api() -> float:
                start = time.perf_counter()
                for _ in range(batches):
                    first, stop = cursor[0], cursor[0] + events
                    api.run(source(first, stop, degree), degree, int(schedule.arrival_us(stop - 1, stop)[0]))
                    cursor[0] = stop
                return events * batches / (time.perf_counter() - start)

            plain_batch = [0]

            def run_plain() -> float:
                start = time.perf_counter()
                for _ in range(batches):
                    first, stop = cursor[0], cursor[0] + events
                    generated = source(first, stop, degree).repartition(degree).mapInArrow(events_fn, wide)
                    table = plain_query(nx.SAME_ANSWER_AS.get(name, name), generated).toArrow()
                    plain_batch[0] += 1
                    commit_batch(work / f"plain-{name}-{degree}", plain_batch[0], table)
                    cursor[0] = stop
                return events * batches / (time.perf_counter() - start)

            run_api(), run_plain()  # warm both up (Python workers, the generator's imports, Spark's planner)
            ratios, api_rates, plain_rates = [], [], []
            for r in range(rounds):
                if r % 2 == 0:
                    a, p = run_api(), run_plain()
                else:
                    p, a = run_plain(), run_api()
                api_rates.append(a)
                plain_rates.append(p)
                ratios.append(a / p)
            row = {"query": name, "degree": degree, "api_events_per_s": statistics.median(api_rates),
                   "plain_events_per_s": statistics.median(plain_rates), "ratio": statistics.median(ratios)}
            log(f"{name} degree {degree}: API {row['api_events_per_s']:8.0f} ev/s, plain "
                f"{row['plain_events_per_s']:8.0f} ev/s, API / plain {row['ratio']:.2f}")
            results.append(row)
    return results


def table_markdown(results: list[dict]) -> str:
    lines = ["| query | degree | operator API (events/s) | plain Spark (events/s) | API ÷ plain |",
             "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['query']} | {r['degree']} | {r['api_events_per_s']:,.0f} | "
                     f"{r['plain_events_per_s']:,.0f} | {r['ratio']:.2f} |")
    worst = min(results, key=lambda r: r["ratio"])
    met = all(r["ratio"] >= GOAL_RATIO for r in results)
    lines += ["", f"Goal: API ÷ plain >= {GOAL_RATIO} for every query: **{'met' if met else 'missed'}** (lowest "
              f"{worst['ratio']:.2f}, {worst['query']} at degree {worst['degree']})."]
    return "\n".join(lines)


def suite_markdown(tracking_uri: str, parent_run_id: str) -> str:
    """The Nexmark suite's runs (suites/nexmark.yaml) as one row per query, workload and controller."""
    from analysis.runs import load_runs

    runs = load_runs(tracking_uri, parent_run_id)
    lines = ["| query | workload | controller | runs | SLO attainment | p95 latency (s) | cost (slot-s) | actions | "
             "lost / duplicated |", "|---|---|---|---|---|---|---|---|---|"]
    finished = runs[runs["status"] == "FINISHED"]
    for (workload, variant), group in finished.groupby(["workload", "variant"], sort=True):
        base, _, query = str(workload).partition(".")
        lines.append(f"| {query or '-'} | {base} | {variant} | {len(group)} | {group['slo_attainment'].mean():.1%} | "
                     f"{group['latency_p95_s'].mean():.2f} | {group['cost_slot_seconds'].mean():.0f} | "
                     f"{group['scaling_actions'].mean():.0f} | {group['records_lost'].sum():.0f} / "
                     f"{group['records_duplicated'].sum():.0f} |")
    failed = runs[runs["status"] != "FINISHED"]
    if len(failed):
        lines += ["", f"{len(failed)} run(s) did not finish: " + "; ".join(
            f"{r.workload} {r.variant}: {r.failure_reason}" for r in failed.itertuples())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.nexmark", description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", default=",".join(nx.QUERIES), help="comma-separated (default: all)")
    p.add_argument("--degrees", default="1,2,4", help="comma-separated degrees (default 1,2,4)")
    p.add_argument("--events", type=int, default=40_000, help="events per batch (default 40,000)")
    p.add_argument("--batches", type=int, default=2, help="batches per measurement (default 2)")
    p.add_argument("--rounds", type=int, default=2, help="ABBA rounds per query and degree (default 2)")
    p.add_argument("--master", default="local[4]")
    p.add_argument("--out", help="also write the table as markdown to this file")
    p.add_argument("--suite-parent", metavar="RUN_ID",
                   help="only print the controllers' results of this Nexmark suite run (no measurement)")
    p.add_argument("--tracking-uri", help="with --suite-parent: the MLflow store (default: the project's)")
    args = p.parse_args(argv)
    if args.suite_parent:
        from jobs.recording.recorder import default_tracking_uri

        print(suite_markdown(args.tracking_uri or default_tracking_uri(), args.suite_parent))
        return 0
    names = [q.strip() for q in args.queries.split(",") if q.strip()]
    unknown = [q for q in names if q not in nx.QUERIES]
    if unknown:
        print(f"--queries: unknown {', '.join(unknown)}; choose from {', '.join(nx.QUERIES)}", file=sys.stderr)
        return 2
    degrees = [int(d) for d in args.degrees.split(",")]
    from jobs.config import RunConfig
    from jobs.spark_session import package_code, start_spark

    config = RunConfig("static", {}, "constant", master=args.master, quiet=True).validate()
    with tempfile.TemporaryDirectory(prefix="nexmark-bench-") as tmp:
        work = Path(tmp)
        spark = start_spark(config, package_code(work / "code.zip"))
        try:
            results = measure(spark, work, names, degrees, args.events, args.batches, args.rounds)
        finally:
            spark.stop()
    text = table_markdown(results)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
