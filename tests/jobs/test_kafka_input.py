"""A run's account of a Kafka topic (jobs.kafka_input), without a broker: Kafka's partitioner, where each event sits,
what Spark's offset log says a batch reads, what a batch read and what is left, and the exactly-once check on
offsets."""
import json

import numpy as np
import pyarrow as pa
import pytest

from jobs.errors import RunFailed
from jobs.kafka_input import KafkaAccount, OffsetRangesRead, TopicLayout, key_partition, murmur2, planned_offsets
from jobs.sink import commit_batch
from jobs.sink_check import verify_output
from workloads.schedule import Schedule
from workloads.spec import parse_workload


def test_murmur2_is_kafkas():
    # Kafka's own expectations (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2)
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    assert {data: murmur2(data) for data in cases} == cases
    assert key_partition(21, 7) == (-973932308 & 0x7FFFFFFF) % 7


def _schedule(**overrides):
    raw = {"name": "kafka-layout", "profile": "step", "params": {"low": 300, "high": 900, "at_s": 1.0},
           "duration_s": 2.0, "seed": 5, "keys": {"count": 40}, "payload_bytes": 8, **overrides}
    return Schedule(parse_workload(raw, source="test"))


def test_the_layout_puts_each_event_in_its_keys_partition_in_schedule_order():
    schedule = _schedule()
    layout = TopicLayout(schedule, 3)
    keys = schedule.keys(0, schedule.total_events)
    assert sum(layout.size(p) for p in range(3)) == schedule.total_events == 1200
    for p in range(3):
        ids = layout.event_ids({p: (0, layout.size(p))})
        assert np.all(np.diff(ids) > 0), "a partition holds its events in schedule order"
        assert {key_partition(int(k), 3) for k in keys[ids]} == {p}
    ranges = {0: (2, 5), 1: (0, 0), 2: (10, 11)}
    ids = layout.event_ids(ranges)
    assert ids.tolist() == layout.events[[2, 3, 4, layout.bounds[2] + 10]].tolist()


def _offset_log(checkpoint, batch_id, topic, offsets):
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    source = json.dumps({topic: {str(p): o for p, o in offsets.items()}})
    (checkpoint / "offsets" / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{source}\n')


class _Ends:
    def __init__(self):
        self.written = None

    def total(self):
        return self.written


def test_a_batch_is_accounted_from_the_offsets_spark_planned(tmp_path):
    schedule = _schedule()
    layout = TopicLayout(schedule, 2)
    ends = _Ends()
    account = KafkaAccount(layout, tmp_path, "t", ends)
    assert planned_offsets(tmp_path, 0, "t") is None and account.planned(0) is None

    _offset_log(tmp_path, 0, "t", {0: 4, 1: 6})
    expected = layout.event_ids({0: (0, 4), 1: (0, 6)})
    events, oldest = account.planned(0)
    assert events == 10 and oldest == int(layout.arrival_us[expected].min())
    with pytest.raises(RunFailed, match="read 9 events"):
        account.read(0, 9, int(expected.sum()))
    read = account.read(0, 10, int(expected.sum()))
    assert read.ranges == ((0, 0, 4), (1, 0, 6)) and read.marker() == {"offsets": {"0": [0, 4], "1": [0, 6]},
                                                                        "events": 10}
    account.advance(read)
    assert account.events_read == 10
    assert np.array_equal(account.arrival_us(read), layout.arrival_us[expected])
    # every event up to the watermark has been read, across both partitions
    watermark = account.watermark_us(read)
    unread = np.setdiff1d(np.arange(schedule.total_events), expected)
    assert layout.arrival_us[unread].min() > watermark >= layout.arrival_us[expected].min()

    _offset_log(tmp_path, 1, "t", {0: 4, 1: 9})  # partition 0 had nothing new
    nxt = account.read(1, 3, int(layout.event_ids({1: (6, 9)}).sum()))
    assert nxt.ranges == ((0, 4, 4), (1, 6, 9))

    ends.written = 25  # the consumer lag: on the broker, not read
    assert account.backlog(due_now=40) == 25 - 10
    ends.written = None  # the broker not answering: the schedule's count instead
    assert account.backlog(due_now=40) == 30


def test_the_exactly_once_check_reads_offset_markers(tmp_path):
    ids = np.array([3, 7, 8])
    read = OffsetRangesRead(((0, 1, 2), (1, 0, 2)), ids)
    partials = pa.table({"events": [3], "event_id_sum": [int(ids.sum())]})
    commit_batch(tmp_path, 1, partials, marker=read.marker())
    assert verify_output(tmp_path, {1: read}) == (3, 0, 0)
    other = OffsetRangesRead(((0, 1, 3), (1, 0, 2)), np.array([3, 7, 8, 9]))
    assert verify_output(tmp_path, {1: other}) == (0, 4, 3), "a folder of other offsets: lost and duplicated"


def test_what_a_stopped_run_committed_is_read_back_from_its_checkpoint(tmp_path):
    from jobs.kafka_input import committed_reads

    layout = TopicLayout(_schedule(), 2)
    _offset_log(tmp_path, 0, "t", {0: 0, 1: 0})
    _offset_log(tmp_path, 1, "t", {0: 4, 1: 6})
    _offset_log(tmp_path, 2, "t", {0: 9, 1: 6})  # planned, never committed
    (tmp_path / "commits").mkdir()
    for batch in (0, 1):
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}\n")
    committed = committed_reads(tmp_path, "t", layout)
    assert sorted(committed) == [0, 1] and committed[0].events == 0
    assert committed[1].ranges == ((0, 0, 4), (1, 0, 6))
    assert committed[1].ids.tolist() == layout.event_ids({0: (0, 4), 1: (0, 6)}).tolist()
