"""Spark's trigger grid on the run's clock (jobs/trigger_grid.py): pure arithmetic, checked against Spark's rule
(triggers at wall-clock multiples of the interval; after an overrun the next batch at once)."""
from jobs.trigger_grid import batch_trigger_us, next_trigger_us, read_planned, trigger_phase_s, write_planned

ANCHOR_US = 1_000_000_500_000  # time 0 at epoch 1,000,000.5 s: the 2-s grid (even epoch seconds) 1.5 s later


def test_the_phase_is_where_the_first_wall_clock_multiple_falls_after_time_0():
    assert trigger_phase_s(ANCHOR_US, 2.0) == 1.5
    assert trigger_phase_s(1_000_000_000_000, 2.0) == 0.0  # an anchor on a multiple
    assert trigger_phase_s(ANCHOR_US, 0.5) == 0.0


def test_a_batch_on_the_grid_was_planned_at_the_grid_point_before_its_function_ran():
    # the batch function runs 0.2 s after the trigger at 3.5 s on the run's clock
    assert batch_trigger_us(3_700_000, ANCHOR_US, 2.0, prev_end_us=2_100_000) == 3_500_000
    assert batch_trigger_us(1_700_000, ANCHOR_US, 2.0, prev_end_us=None) == 1_500_000


def test_after_an_overrun_the_batch_was_planned_when_the_previous_one_ended():
    # the previous batch ran from 3.5 s to 6.2 s, past the 5.5 s trigger: the next starts at once
    assert batch_trigger_us(6_300_000, ANCHOR_US, 2.0, prev_end_us=6_200_000) == 6_200_000


def test_the_next_trigger_is_the_first_grid_point_strictly_after():
    assert next_trigger_us(3_500_000, ANCHOR_US, 2.0) == 5_500_000  # on a grid point: the next one
    assert next_trigger_us(6_200_000, ANCHOR_US, 2.0) == 7_500_000  # after an overrun


def test_the_planned_offset_is_replaced_whole_and_absent_until_written(tmp_path):
    path = str(tmp_path / "planned.json")
    assert read_planned(path) is None
    write_planned(path, 1200)
    write_planned(path, 53_000)
    assert read_planned(path) == 53_000
    assert [p.name for p in tmp_path.iterdir()] == ["planned.json"]  # no temporary file left
    (tmp_path / "planned.json").write_text("{")
    assert read_planned(path) is None  # unreadable: the caller falls back to the grid
