"""The workload producer's throughput against a bare producer loop, side by side on one private broker.

    python -m benchmarks.kafka_producer [--events 500000] [--rounds 4]     (about a minute; no Spark)

Both variants write the same records (a constant workload's events: 32-byte payload, 1,000 keys) into a fresh topic
of 4 partitions with the same client settings (jobs/kafka_producer.PRODUCER_CONFIG), all of them overdue so that
neither is paced: **bare** hands over records built before its clock starts, the least a Python producer loop costs;
**producer** is `jobs.kafka_producer.replay`, which generates each chunk from the schedule, encodes it and hands it
over. After one uncounted round of each (the broker's JVM warms up), each round runs bare then producer, the next
producer then bare (ABBA), and the rate is events ÷ seconds until the broker acknowledged the last record. The goal: the producer sustains at least 200,000 events/s on this machine,
and the ratio says how much of the client's own ceiling the generation costs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from deploy.kafka import KafkaBroker
from deploy.spark_cluster import free_port
from jobs.kafka_producer import KafkaRecords, hand_over, producer, replay

GOAL_EPS = 200_000


def _spec(events: int):
    from workloads.spec import parse_workload

    rate = events / 10  # ten one-second buckets, whatever the count
    return parse_workload({"name": "producer-bench", "profile": "constant", "params": {"rate": rate},
                           "duration_s": 10, "seed": 1, "keys": {"count": 1000}, "payload_bytes": 32},
                          source="benchmark")


def bare(broker: KafkaBroker, topic: str, prepared) -> float:
    client = producer(broker.bootstrap)
    keys, values, timestamps = prepared
    started = time.perf_counter()
    for lo in range(0, len(keys), 1 << 14):
        hi = lo + (1 << 14)
        hand_over(client, topic, keys[lo:hi], values[lo:hi], timestamps[lo:hi])
    assert client.flush(60) == 0
    return len(keys) / (time.perf_counter() - started)


def project(broker: KafkaBroker, topic: str, schedule) -> float:
    started = time.perf_counter()
    report = replay(schedule, broker.bootstrap, topic, anchor_us=time.time_ns() // 1000 - 10 ** 12)
    return report.events / (time.perf_counter() - started)


def measure(broker: KafkaBroker, events: int, rounds: int) -> dict[str, list[float]]:
    """Events/s of each variant per round, on `broker`, after one uncounted round of each."""
    from workloads.schedule import Schedule

    schedule = Schedule(_spec(events))
    keys, values, timestamps, _ = KafkaRecords(schedule).chunk(0, schedule.total_events, anchor_us=0)
    prepared = (keys, values, timestamps)
    # the broker's JVM compiles its write path during the first few hundred thousand records: one round of each
    # variant, not counted, before the measured ones
    broker.create_topic("warm-up", 4)
    bare(broker, "warm-up", prepared)
    project(broker, "warm-up", schedule)
    broker.delete_topic("warm-up")
    rates: dict[str, list[float]] = {"bare": [], "producer": []}
    for r in range(rounds):
        for variant in (("bare", "producer") if r % 2 == 0 else ("producer", "bare")):
            topic = f"{variant}-{r}"
            broker.create_topic(topic, 4)
            rate = bare(broker, topic, prepared) if variant == "bare" else project(broker, topic, schedule)
            rates[variant].append(rate)
            print(f"round {r + 1} {variant:8s} {rate:12,.0f} events/s", flush=True)
            broker.delete_topic(topic)
    return rates


def table(rates: dict[str, list[float]], events: int) -> str:
    ratios = [a / b for a, b in zip(rates["producer"], rates["bare"])]
    producer_median = statistics.median(rates["producer"])
    lines = [f"| variant | events/s (median of {len(ratios)} rounds) | rounds |", "|---|---|---|"]
    for variant, values in rates.items():
        lines.append(f"| {variant} | **{statistics.median(values):,.0f}** | {', '.join(f'{v:,.0f}' for v in values)} |")
    lines.append(f"| producer ÷ bare | **{statistics.median(ratios):.2f}** | {', '.join(f'{v:.2f}' for v in ratios)} |")
    lines += ["", f"goal >= {GOAL_EPS:,} events/s: {'met' if producer_median >= GOAL_EPS else 'missed'} "
                  f"({producer_median:,.0f}; {events:,} events a round, 4 partitions, one private broker)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kafka_producer", description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=500_000)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafka-bench-") as scratch:
        broker = KafkaBroker(state_dir=Path(scratch), port=free_port(), controller_port=free_port()).start()
        try:
            rates = measure(broker, args.events, args.rounds)
        finally:
            broker.stop(clean=True)
    print()
    print(table(rates, args.events))
    return 0


if __name__ == "__main__":
    sys.exit(main())
