"""A workload replayed into a Kafka topic on schedule: each event written when it is due, as a production source
would have written it, so that a query reading the topic with Spark's Kafka source sees the load the spec describes.

    python -m jobs.kafka_producer --workload step --seed 1 --topic events --bootstrap 127.0.0.1:9092

The events are the replay source's (jobs/replay_source.py) for the same spec and seed: the schedule is a pure
function of (spec, seed, event index), read here in chunks of due events. Each becomes one Kafka record:

    key        the event's key as decimal ASCII (`CAST(key AS STRING)` in Spark SQL gives it back)
    value      the event id and its scheduled arrival (anchor + arrival) in epoch microseconds, each 8 bytes
               big-endian, then the payload (`payload_bytes` of the spec, or a trace row)
    timestamp  the scheduled arrival in milliseconds: Kafka's CreateTime

The arrival travels in the value to the microsecond, as an event carries its own event time; the timestamp is there
for anything that reads Kafka without knowing the value's layout. Records are partitioned by key with Java's
partitioner (murmur2), so a key lands in the partition a Java producer would have chosen (jobs.kafka_input reads
where each event sits from the same rule).

Pacing: the loop sends every event due by now, then sleeps until the next one is due (at most `max_sleep_s`). What
it reports is the events written and how late the writing ran behind the schedule (the lag between an event's
arrival and its handover to the client), which a run reads to tell a slow producer from a slow query.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from params.units import US

CHUNK_EVENTS = 1 << 14  # events generated and handed over at once: numpy work per chunk, one poll per chunk
PRODUCER_CONFIG = {
    # Java's default partitioner, so keys land where a Java producer (and Spark's Kafka sink) would put them
    "partitioner": "murmur2_random",
    # the throughput settings of a bulk producer: batches of up to 64 kB gathered for up to 5 ms, compressed
    "linger.ms": 5,
    "batch.size": 1 << 16,
    "compression.type": "lz4",
    "queue.buffering.max.messages": 1_000_000,
    "acks": "all",
    "enable.idempotence": True,  # a retried send is not written twice
}


@dataclass
class ProducerReport:
    events: int
    seconds: float
    lag_max_ms: float  # the latest handover of an event after its scheduled arrival
    lag_p99_ms: float


class KafkaRecords:
    """Events [first, stop) of a schedule as Kafka keys, values and timestamps (numpy, then one bytes per record)."""

    def __init__(self, schedule):
        self.schedule = schedule
        self._key_bytes: dict[int, bytes] = {}

    def _keys(self, keys: np.ndarray) -> list[bytes]:
        cache = self._key_bytes
        out = []
        for k in keys.tolist():
            b = cache.get(k)
            if b is None:
                b = cache[k] = str(k).encode()
            out.append(b)
        return out

    def chunk(self, first: int, stop: int, anchor_us: int) -> tuple[list[bytes], list[bytes], list[int], np.ndarray]:
        events = self.schedule.events(first, stop)
        ids = events.event_id.astype(">i8").view(np.uint8).reshape(-1, 8)
        arrivals = (anchor_us + events.arrival_us).astype(">i8").view(np.uint8).reshape(-1, 8)
        heads = np.concatenate([ids, arrivals], axis=1)
        if isinstance(events.payload, np.ndarray):
            rows = np.concatenate([heads, events.payload], axis=1)
            width = rows.shape[1]
            blob = rows.tobytes()
            values = [blob[i:i + width] for i in range(0, len(blob), width)]
        else:  # a trace's original rows (a pyarrow binary array)
            values = [bytes(h) + (row or b"") for h, row in zip(heads, events.payload.to_pylist())]
        timestamps = ((anchor_us + events.arrival_us) // 1000).tolist()
        return self._keys(events.key), values, timestamps, events.arrival_us


def producer(bootstrap: str, **overrides):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, **overrides})


def hand_over(client, topic: str, keys, values, timestamps) -> None:
    """Queue one chunk of records in the client, waiting for room when its queue is full; sending is the client's."""
    produce = client.produce
    for key, value, ts in zip(keys, values, timestamps):
        while True:
            try:
                produce(topic, value, key, timestamp=ts)
                break
            except BufferError:  # the client's queue is full: let it send, then hand over again
                client.poll(0.05)
    client.poll(0)


def replay(schedule, bootstrap: str, topic: str, anchor_us: int | None = None, until_event: int | None = None,
           max_sleep_s: float = 0.05) -> ProducerReport:
    """Write events [0, until_event) (default: all) into `topic` when each is due after `anchor_us` (epoch
    microseconds of schedule time 0; default: now). An anchor in the past writes what is overdue at once."""
    client = producer(bootstrap)
    anchor_us = time.time_ns() // 1000 if anchor_us is None else anchor_us
    total = schedule.total_events if until_event is None else min(until_event, schedule.total_events)
    records = KafkaRecords(schedule)
    sent, lags, started = 0, [], time.monotonic()
    while sent < total:
        now_us = time.time_ns() // 1000 - anchor_us
        due = min(total, schedule.count_due(now_us))
        if due <= sent:
            next_us = int(schedule.arrival_us(sent, sent + 1)[0])
            time.sleep(min(max_sleep_s, max(0.0, (next_us - now_us) / US)))
            client.poll(0)
            continue
        while sent < due:
            stop = min(due, sent + CHUNK_EVENTS)
            keys, values, timestamps, arrival = records.chunk(sent, stop, anchor_us)
            hand_over(client, topic, keys, values, timestamps)
            handed_us = time.time_ns() // 1000 - anchor_us
            lags.append((handed_us - int(arrival[0])) / 1000)  # the chunk's earliest event is its latest handover
            sent = stop
    left = client.flush(60)
    if left:
        raise RuntimeError(f"{left} records were not acknowledged by {bootstrap} within 60 s")
    seconds = time.monotonic() - started
    lag = np.array(lags or [0.0])
    return ProducerReport(sent, seconds, float(lag.max()), float(np.percentile(lag, 99)))


def wait_for_anchor(path: Path, timeout_s: float) -> int:
    """Schedule time 0 from a run's anchor file (jobs.experiment.start_clock writes it once its query is up), so a
    producer started with the run is ready before the first event is due."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return int(json.loads(path.read_text())["anchor_us"])
        except (OSError, ValueError, KeyError):
            time.sleep(0.02)
    raise TimeoutError(f"no anchor in {path} within {timeout_s:g} s")


def run_schedule_file(path: Path, spec: dict, schedule_state: str) -> None:
    """What a run gives its producer: the spec and the driver's schedule state, so both build the same schedule."""
    path.write_text(json.dumps({"spec": spec, "schedule_state": schedule_state}))


def _schedule(args):
    from workloads.schedule import Schedule
    from workloads.spec import load_workload, parse_workload

    if args.schedule:
        raw = json.loads(Path(args.schedule).read_text())
        spec = parse_workload(raw["spec"], source=args.schedule, check_traces=False)
        return Schedule.from_state(spec, raw["schedule_state"])
    return Schedule(load_workload(args.workload).with_overrides(duration_s=args.duration, seed=args.seed))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jobs.kafka_producer", description=__doc__.split("\n\n")[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--workload", help="a catalogue name or a spec file (as jobs.run takes)")
    what.add_argument("--schedule", metavar="FILE", help="a run's schedule file (the spec and its schedule state)")
    p.add_argument("--seed", type=int, default=None, help="overrides the spec's seed")
    p.add_argument("--duration", type=float, default=None, help="seconds of the workload to write (default: all)")
    p.add_argument("--topic", required=True)
    p.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (default: %(default)s)")
    p.add_argument("--anchor-file", metavar="FILE", help="wait for schedule time 0 in this file (a run's anchor; "
                   "default: time 0 is now)")
    p.add_argument("--report-json", metavar="FILE", help="write the events written and the lag behind the schedule "
                   "here")
    args = p.parse_args(argv)
    schedule = _schedule(args)
    spec = schedule.spec
    anchor_us = wait_for_anchor(Path(args.anchor_file), timeout_s=600) if args.anchor_file else None
    print(f"writing {schedule.total_events} events of {spec.name} (seed {spec.seed}) into {args.topic} on "
          f"{args.bootstrap} over {spec.duration_s:.0f} s", flush=True)
    report = replay(schedule, args.bootstrap, args.topic, anchor_us=anchor_us)
    print(f"wrote {report.events} events in {report.seconds:.1f} s; the producer ran behind the schedule by at most "
          f"{report.lag_max_ms:.0f} ms (p99 {report.lag_p99_ms:.0f} ms)")
    if args.report_json:
        Path(args.report_json).write_text(json.dumps(asdict(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
