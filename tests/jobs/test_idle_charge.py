"""What a Spark run is charged for a silence (jobs/recording/run_record.py: skipped_trigger_time, summary.py:
charged_slot_seconds): the triggers Spark skipped for want of data are charged at the vector decided after the last
batch, the batches themselves at the degrees they ran with. No Spark: the batch table is written by hand."""
import pandas as pd
import pytest

from jobs.recording.run_record import batch_table, skipped_trigger_time
from jobs.recording.summary import charged_slot_seconds
from params.units import US

ANCHOR_US = 1_000_000_500_000  # the 2-s grid falls at 1.5 s, 3.5 s, 5.5 s ... on the run's clock
OPS = ("parse", "enrich")


def idle(starts, ends):
    return list(skipped_trigger_time(pd.Series(starts).to_numpy(), pd.Series(ends).to_numpy(), 2.0, ANCHOR_US))


def test_batches_at_every_trigger_leave_no_idle_time_whatever_the_planning_delay():
    # the batch function runs 0.1-0.3 s after its trigger: the delay is the batch's own, not a skipped trigger
    assert idle([1.7, 3.6, 5.8, 7.7], [2.4, 4.1, 6.5, 8.0]) == [0.0, 0.0, 0.0, 0.0]


def test_a_batch_after_an_overrun_starts_at_once_and_leaves_no_idle_time():
    # 3.6 -> 6.2 overran the 5.5 s trigger; the next batch was planned when it ended
    assert idle([1.7, 3.6, 6.3], [2.4, 6.2, 6.9]) == [0.0, 0.0, 0.0]


def test_the_triggers_skipped_between_two_batches_are_idle_time():
    # nothing arrived for the triggers at 3.5, 5.5, 7.5 and 9.5 s: the next batch ran at the 11.5 s trigger
    assert idle([1.7, 11.6], [2.4, 12.0]) == pytest.approx([8.0, 0.0])
    # after an overrun that ended at 6.2 s, the trigger then (empty) was the first that could have run a batch
    assert idle([3.6, 13.6], [6.2, 14.0]) == pytest.approx([7.3, 0.0])


def table(rows):
    return batch_table([{"spark_batch_id": i, "start_s": s, "time_s": e, "batch_duration_s": e - s,
                         "degree_parse": d[0], "degree_enrich": d[1], "next_degree_parse": n[0],
                         "next_degree_enrich": n[1]} for i, (s, e, d, n) in enumerate(rows)], {}, 2.0, ANCHOR_US)


def test_a_silence_is_charged_at_the_vector_decided_before_it():
    # a burst batch at 4 + 4 lowered to 1 + 1 as it ended; 8 s of silence; the next batch at 1 + 2
    batches = table([(1.7, 3.4, (4, 4), (1, 1)), (11.6, 12.0, (1, 2), (1, 2))])
    assert list(batches["idle_after_s"]) == pytest.approx([8.0, 0.0])
    # the burst batch at 8 slots to the trigger at 3.5 s (and the next batch's 0.1 s planning delay), the silence
    # at 2, the last batch its own 0.4 s at 3
    assert charged_slot_seconds(batches, OPS) == pytest.approx(8 * 1.9 + 2 * 8.0 + 3 * 0.4)


def test_continuous_batches_are_charged_as_before():
    batches = table([(1.7, 2.4, (1, 2), (1, 3)), (3.6, 4.1, (1, 3), (1, 3)), (5.8, 6.5, (1, 3), (1, 1))])
    assert list(batches["idle_after_s"]) == [0.0, 0.0, 0.0]
    assert charged_slot_seconds(batches, OPS) == pytest.approx(3 * 1.9 + 4 * 2.2 + 4 * 0.7)


def test_without_the_trigger_grid_nothing_counts_as_idle():
    rows = [{"spark_batch_id": 0, "start_s": 1.7, "time_s": 3.4, "batch_duration_s": 1.7, "degree_parse": 4,
             "degree_enrich": 4, "next_degree_parse": 1, "next_degree_enrich": 1},
            {"spark_batch_id": 1, "start_s": 11.6, "time_s": 12.0, "batch_duration_s": 0.4, "degree_parse": 1,
             "degree_enrich": 1, "next_degree_parse": 1, "next_degree_enrich": 1}]
    batches = batch_table(rows, {})
    assert charged_slot_seconds(batches, OPS) == pytest.approx(8 * 9.9 + 2 * 0.4)
    assert US == 1_000_000  # the grid arithmetic above is in microseconds
