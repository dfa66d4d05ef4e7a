"""Spark's trigger grid on the run's clock (jobs/trigger_grid.py): pure arithmetic, checked against Spark's rule
(triggers at wall-clock multiples of the interval; after an overrun the next batch at once)."""
import pytest
from hypothesis import given, strategies as st

from jobs.trigger_grid import (anchor_at_phase_us, batch_trigger_us, chosen_phase_s, next_trigger_us, read_planned,
                               seeded_phase_s, trigger_phase_s, write_planned)

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


@given(earliest_us=st.integers(1_600_000_000_000_000, 1_900_000_000_000_000),
       trigger_us=st.integers(100_000, 10_000_000), phase=st.floats(0.0, 1.0, exclude_max=True))
def test_the_anchor_puts_the_grid_at_the_phase_asked_for_within_one_interval(earliest_us, trigger_us, phase):
    trigger_s = trigger_us / 1e6
    phase_s = round(phase * trigger_us) % trigger_us / 1e6
    anchor = anchor_at_phase_us(earliest_us, trigger_s, phase_s)
    assert earliest_us <= anchor < earliest_us + trigger_us
    assert trigger_phase_s(anchor, trigger_s) == pytest.approx(phase_s, abs=1e-6)
    assert anchor_at_phase_us(earliest_us, trigger_s, None) == earliest_us  # free: no later than start-up


def test_a_seed_has_one_phase_and_successive_seeds_spread_over_the_interval():
    phases = [seeded_phase_s(seed, 2.0) for seed in (1, 2, 3)]
    assert phases == [1.236068, 0.472136, 1.708204]
    assert chosen_phase_s("seeded", 2, 2.0) == 0.472136 and chosen_phase_s(" free ", 2, 2.0) is None
    assert chosen_phase_s("0.25", 2, 2.0) == 0.25
    # ten seeds leave no gap wider than a fifth of the interval (a random draw often would)
    ten = sorted(seeded_phase_s(seed, 1.0) for seed in range(1, 11))
    assert max(b - a for a, b in zip([ten[-1] - 1.0, *ten], [*ten, ten[0] + 1.0])) < 0.2


@pytest.mark.parametrize("setting", ["2", "-0.5", "nan", "soon", ""])
def test_a_phase_outside_the_interval_or_not_a_number_is_refused(setting):
    with pytest.raises(ValueError, match=r"must be 'seeded', 'free' or seconds in \[0, 2\)"):
        chosen_phase_s(setting, 1, 2.0)
