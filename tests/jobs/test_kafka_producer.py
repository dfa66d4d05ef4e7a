"""The workload producer (jobs/kafka_producer.py) against the project's real broker: the records are the replay
source's events for the same spec and seed, keyed and partitioned as a Java producer would (each at the offset the
run's topic layout expects), stamped with their scheduled arrival, and none is written before it is due."""
import struct
import time

import numpy as np
import pytest

from jobs.kafka_input import TopicLayout
from jobs.kafka_producer import KafkaRecords, replay
from workloads.schedule import Schedule
from workloads.spec import parse_workload

pytestmark = pytest.mark.spark  # starts a broker JVM: with the server tests


def _spec(**overrides):
    raw = {"name": "kafka-step", "profile": "step", "params": {"low": 200, "high": 800, "at_s": 1.0},
           "duration_s": 2.0, "seed": 7, "keys": {"count": 50}, "payload_bytes": 12, **overrides}
    return parse_workload(raw, source="test")


@pytest.fixture(scope="module")
def broker(kafka_broker):
    return kafka_broker


def _consume(bootstrap, topic, n):
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got, deadline = [], time.monotonic() + 60
    try:
        while len(got) < n and time.monotonic() < deadline:
            got += [m for m in consumer.consume(1000, timeout=1) if m.error() is None]
    finally:
        consumer.close()
    return got


def test_the_topic_holds_the_schedules_events_stamped_with_their_arrival_and_none_was_written_early(broker):
    schedule = Schedule(_spec())
    broker.create_topic("step", 3)
    anchor = time.time_ns() // 1000 + 300_000
    report = replay(schedule, broker.bootstrap, "step", anchor_us=anchor)
    finished_us = time.time_ns() // 1000
    assert report.events == schedule.total_events == 1000
    assert finished_us >= anchor + int(schedule.arrival_us(999, 1000)[0]), "the last event is written once due"

    records = _consume(broker.bootstrap, "step", schedule.total_events)
    assert len(records) == schedule.total_events
    by_id = {struct.unpack(">q", m.value()[:8])[0]: m for m in records}
    assert sorted(by_id) == list(range(schedule.total_events)), "each event once"
    events = schedule.events(0, schedule.total_events)
    for i in (0, 1, 499, 500, 999):
        m = by_id[i]
        assert int(m.key()) == events.key[i]
        assert struct.unpack(">q", m.value()[8:16])[0] == anchor + events.arrival_us[i]
        assert m.value()[16:] == events.payload[i].tobytes()
        assert m.timestamp()[1] == (anchor + events.arrival_us[i]) // 1000
    per_key_partitions = {}
    for m in records:
        per_key_partitions.setdefault(m.key(), set()).add(m.partition())
    assert all(len(p) == 1 for p in per_key_partitions.values()), "a key stays in one partition"
    assert {m.partition() for m in records} == {0, 1, 2}
    layout = TopicLayout(schedule, 3)
    where = {(m.partition(), m.offset()): i for i, m in by_id.items()}
    expected = {(p, k): int(layout.event_ids({p: (k, k + 1)})[0]) for p in range(3) for k in range(layout.size(p))}
    assert where == expected, "each event at the partition and offset the run's layout expects"


def test_an_anchor_in_the_past_writes_what_is_overdue_at_once_and_until_event_stops_early(broker):
    schedule = Schedule(_spec(duration_s=30.0))
    broker.create_topic("overdue", 1)
    started = time.monotonic()
    report = replay(schedule, broker.bootstrap, "overdue", anchor_us=time.time_ns() // 1000 - 60 * 1_000_000,
                    until_event=4000)
    assert report.events == 4000
    assert time.monotonic() - started < 30, "overdue events are not paced"
    assert report.lag_max_ms >= 30_000, "the lag behind the schedule is reported"


def test_records_are_built_from_the_schedule_by_index_alone():
    schedule = Schedule(_spec())
    records = KafkaRecords(schedule)
    keys, values, timestamps, arrival = records.chunk(100, 110, anchor_us=10_000_000)
    again = KafkaRecords(Schedule(_spec())).chunk(100, 110, anchor_us=10_000_000)
    assert (keys, values, timestamps) == again[:3]
    assert [struct.unpack(">q", v[:8])[0] for v in values] == list(range(100, 110))
    assert all(len(v) == 8 + 8 + 12 for v in values)
    assert [struct.unpack(">q", v[8:16])[0] for v in values] == list(10_000_000 + arrival)
    assert timestamps == list((10_000_000 + arrival) // 1000)
    assert np.array_equal(np.array([int(k) for k in keys]), schedule.events(100, 110).key)


def test_the_throughput_benchmark_runs_both_variants_and_prints_the_ratio(broker, capsys):
    from benchmarks import kafka_producer as bench

    rates = bench.measure(broker, events=20000, rounds=2)
    rounds = [line.split()[2] for line in capsys.readouterr().out.splitlines() if line.startswith("round ")]
    assert sorted(rounds) == ["bare", "bare", "producer", "producer"]
    assert all(len(v) == 2 and min(v) > 0 for v in rates.values())
    printed = bench.table(rates, 20000)
    assert "| producer ÷ bare |" in printed and "goal >= 200,000 events/s:" in printed
