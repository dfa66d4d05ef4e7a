"""The minimal Arrow source the replay source is measured against (benchmarks/minimal_source.py): in the replay
shape it serves exactly the replay source's Arrow schema and row width, so the benchmark's split of the replay
source's loss into wider rows and the schedule's computation compares like with like."""
from benchmarks.minimal_source import MinimalArrowSource, MinimalStreamReader, RowRange
from jobs.replay_source import ARROW_SCHEMA, SCHEMA, event_batches
from workloads import Schedule
from workloads.spec import parse_workload


def test_the_replay_shape_serves_the_replay_sources_schema_and_payload_width():
    reader = MinimalStreamReader({"rowsPerBatch": "100000", "numPartitions": "2", "shape": "replay"})
    ranges = reader.partitions(reader.initialOffset(), reader.latestOffset(reader.initialOffset(), None))
    assert [(r.first, r.stop) for r in ranges] == [(0, 50000), (50000, 100000)]
    batches = [b for r in ranges for b in reader.read(r)]
    assert all(b.schema == ARROW_SCHEMA for b in batches) and sum(b.num_rows for b in batches) == 100000
    assert MinimalArrowSource({"shape": "replay"}).schema() == SCHEMA
    spec = parse_workload({"name": "w", "profile": "constant", "params": {"rate": 1000}, "duration_s": 10,
                           "seed": 1, "payload_bytes": 32}, source="test")
    replayed = next(event_batches(Schedule(spec), 0, 0, 1000))
    mine = batches[0].slice(0, 1000)
    assert mine.column("payload").nbytes == replayed.column("payload").nbytes, "the same bytes per row"
    assert mine.column("event_id").to_pylist()[:3] == [0, 1, 2]


def test_the_default_shape_is_unchanged():
    reader = MinimalStreamReader({"rowsPerBatch": "10", "numPartitions": "1"})
    [batch] = list(reader.read(RowRange(0, 10)))
    assert batch.schema.names == ["timestamp", "value"] and batch.num_rows == 10
