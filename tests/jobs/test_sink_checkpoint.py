"""What a run that never reached its end committed, checked from Spark's checkpoint (the fault suite's account of
stopped and killed runs): the replay source's offsets say what each committed batch read."""
import json

import pyarrow as pa

from jobs.sink import commit_batch
from jobs.sink_check import committed_from_checkpoint, verify_output


def _checkpoint(root, ends, committed):
    for folder in ("offsets", "commits"):
        (root / folder).mkdir(parents=True)
    for batch_id, end in enumerate(ends):
        (root / "offsets" / str(batch_id)).write_text(
            "v1\n" + json.dumps({"batchWatermarkMs": 0}) + "\n" + json.dumps({"events": end, "anchor_us": 1}) + "\n")
        (root / "offsets" / f".{batch_id}.crc").write_bytes(b"crc")
    for batch_id in committed:
        (root / "commits" / str(batch_id)).write_text("v1\n{}\n")


def _partials(first, n, split=2):
    """Window partials of events [first, first + n): counts and id sums, in `split` rows."""
    ids = list(range(first, first + n))
    parts = [ids[i::split] for i in range(split)]
    return pa.table({"events": [len(p) for p in parts], "event_id_sum": [sum(p) for p in parts]})


def test_committed_batches_are_read_from_offsets_and_commits(tmp_path):
    # batch 0 read nothing, 1 read [0, 300), 2 read [300, 650); batch 3 was planned but never committed
    _checkpoint(tmp_path / "checkpoint", [0, 300, 650, 900], committed=[0, 1, 2])
    assert committed_from_checkpoint(tmp_path / "checkpoint") == {0: (0, 0), 1: (0, 300), 2: (300, 350)}


def test_a_killed_runs_output_is_exact_and_a_missing_or_doubled_batch_is_not(tmp_path):
    _checkpoint(tmp_path / "checkpoint", [0, 300, 650, 900], committed=[0, 1, 2])
    sink = tmp_path / "sink"
    commit_batch(sink, 1, _partials(0, 300))
    commit_batch(sink, 2, _partials(300, 350))
    commit_batch(sink, 3, _partials(650, 250))  # written, but the checkpoint never committed it: removed, not counted
    committed = committed_from_checkpoint(tmp_path / "checkpoint")
    assert verify_output(sink, committed) == (650, 0, 0)
    assert not (sink / "batch_id=3").exists()
    commit_batch(sink, 2, pa.concat_tables([_partials(300, 350), _partials(300, 10)]))
    assert verify_output(sink, committed) == (660, 0, 10)
    import shutil

    shutil.rmtree(sink / "batch_id=1")
    assert verify_output(sink, committed) == (360, 300, 10)
