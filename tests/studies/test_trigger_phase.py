"""The trigger-phase study: attainment per phase, and the spread of a comparison with and without pinned phases."""
import numpy as np
import pytest

from studies.trigger_phase import CONFIGURATIONS, main, spreads


def test_a_controller_that_tracks_the_oracle_phase_by_phase_has_no_paired_spread():
    oracle = np.array([0.36, 0.36, 0.52, 0.76])  # the phase decides what anyone keeps
    tracking = oracle - 0.02
    paired, free = spreads(tracking, oracle)
    assert paired == pytest.approx(0.0) and free > 0.15
    # a controller whose shortfall depends on the phase keeps a paired spread, smaller than the free one here
    paired, free = spreads(np.array([0.36, 0.30, 0.52, 0.60]), oracle)
    assert 0.0 < paired < free


def test_the_command_prints_a_row_per_phase_and_the_spreads(capsys):
    assert main(["--phases", "2", "--workloads", "flash-crowd"]) == 0
    out = capsys.readouterr().out
    assert out.count("| `flash-crowd` | `") == len(CONFIGURATIONS)  # a summary row per configuration
    assert "| 0.000 | " in out and "| 1.000 | " in out  # phases 0 and 1 s of the 2 s trigger
