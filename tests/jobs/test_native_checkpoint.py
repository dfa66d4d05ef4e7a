"""Native queries without Spark: loading the user's function, reading Spark's checkpoint logs, turning a decision
into a pending restart. (On real Spark: tests/jobs/test_native_queries.py.)"""
from __future__ import annotations

import json

import pytest

from controllers.loop import DecisionRecord
from jobs.native import checkpoint as ck
from jobs.native.query import NativeQueryError, load_native_query
from jobs.native.run import NATIVE_OPERATOR, PartitionsActuator


def _offsets(folder, batch_id, events, partitions, anchor=5_000_000):
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "conf": {ck.SHUFFLE_PARTITIONS: str(partitions)}}
    (folder / "offsets" / str(batch_id)).write_text(
        f"v1\n{json.dumps(meta)}\n{json.dumps({'events': events, 'anchor_us': anchor})}")
    (folder / "offsets" / f".{batch_id}.crc").write_text("")  # Spark's checksum files sit beside them


def _commit(folder, batch_id):
    (folder / "commits").mkdir(parents=True, exist_ok=True)
    (folder / "commits" / str(batch_id)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_batch_reads_come_from_the_offsets_log(tmp_path):
    for batch_id, events, partitions in [(0, 100, 2), (1, 250, 2), (2, 250, 4), (3, 400, 4)]:
        _offsets(tmp_path, batch_id, events, partitions)
    assert ck.batch_read(tmp_path, 0) == ck.BatchRead(0, 100, 5_000_000, 2)
    assert ck.batch_read(tmp_path, 1) == ck.BatchRead(100, 150, 5_000_000, 2)
    # batch 2 is a repartition's own batch: no events, the new partition count
    assert ck.batch_read(tmp_path, 2) == ck.BatchRead(250, 0, 5_000_000, 4)
    assert ck.batch_read(tmp_path, 3).first == 250
    assert ck.partitions_of(tmp_path) == 4
    with pytest.raises(FileNotFoundError):
        ck.batch_read(tmp_path, 9)


def test_a_stop_inside_a_batch_is_seen(tmp_path):
    _offsets(tmp_path, 0, 100, 2)
    _commit(tmp_path, 0)
    assert ck.ends_on_a_commit(tmp_path)
    _offsets(tmp_path, 1, 200, 2)  # planned, cut before its commit
    assert not ck.ends_on_a_commit(tmp_path)
    assert (ck.last_planned(tmp_path), ck.last_committed(tmp_path)) == (1, 0)


def test_a_rescale_after_every_event_was_read_waits_for_no_batch(tmp_path):
    """A rescale at the stream's end (a slow start read the whole replay before it): no batch follows the restart,
    so none is waited for; one with events still to read waits for its first batch."""
    from jobs.native.rescale import RestartingQuery

    def restarting(total):
        return RestartingQuery(None, lambda: None, tmp_path, tmp_path / "hold", lambda after, timeout: None,
                               total_events=total)

    _offsets(tmp_path, 0, 600, 2)
    _commit(tmp_path, 0)
    assert not restarting(1000).source_exhausted()
    _offsets(tmp_path, 1, 1000, 2)
    assert not restarting(1000).source_exhausted(), "planned, not committed: the batch reruns after the restart"
    _commit(tmp_path, 1)
    assert restarting(1000).source_exhausted()
    assert not restarting(None).source_exhausted()


def test_a_checkpoint_is_claimed_by_one_query(tmp_path):
    ck.claim(tmp_path / "a", "native:q5")
    ck.claim(tmp_path / "a", "native:q5")  # the same query resumes it
    with pytest.raises(ValueError, match="written by query 'native:q5', not 'native:q7'"):
        ck.claim(tmp_path / "a", "native:q7")
    _offsets(tmp_path / "b", 0, 10, 2)
    with pytest.raises(ValueError, match="another query's batches"):
        ck.claim(tmp_path / "b", "native:q5")


@pytest.mark.parametrize("ref,message", [
    ("windowed_count", "expected MODULE:FUNCTION"),
    ("native:nope", "has no function 'nope'; it has windowed_count, q5, q7, q8"),
    ("no_such_module_here:build", "no module named 'no_such_module_here'"),
])
def test_bad_references_name_what_is_wrong(ref, message):
    with pytest.raises(NativeQueryError, match=message):
        load_native_query(ref)


def test_a_function_must_take_the_events(tmp_path):
    path = tmp_path / "my_job.py"
    path.write_text("def build():\n    return None\n\ndef wide(a, b, c):\n    return None\n")
    for function in ("build", "wide"):
        with pytest.raises(NativeQueryError, match=r"must take the events DataFrame"):
            load_native_query(f"{path}:{function}")


def test_a_users_file_and_its_workload_parameter(tmp_path):
    path = tmp_path / "my_job.py"
    path.write_text("def build(events):\n    return events\n\ndef with_workload(events, workload):\n"
                    "    return events\n")
    assert not load_native_query(f"{path}:build").takes_workload
    assert load_native_query(f"{path}:with_workload").takes_workload


def test_a_change_of_partitions_becomes_one_pending_restart():
    actuator = PartitionsActuator(2)

    def record(after):
        return DecisionRecord(3, 12.5, {NATIVE_OPERATOR: 2}, {NATIVE_OPERATOR: after}, True, "test", None)

    assert actuator.apply(record(2)) is None and actuator.pending is None
    outcome = actuator.apply(record(4))
    assert actuator.pending is outcome and actuator.wake.is_set()
    assert (outcome.requested, outcome.requested_s, outcome.status) == (4, 12.5, "applied")
