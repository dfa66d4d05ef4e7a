"""studies.silence_charge: both charges of a silence from a batch table, and the ratios to the oracle per charge."""
import pandas as pd
import pytest

from studies.silence_charge import both_charges, ratios


def test_both_charges_differ_by_the_silence_at_the_two_vectors():
    batches = pd.DataFrame({"degree_a": [4, 1], "degree_b": [4, 2], "next_degree_a": [1, 1], "next_degree_b": [1, 2],
                            "interval_in_force_s": [9.9, 0.4], "idle_after_s": [8.0, 0.0]})
    idle, now, before = both_charges(batches, ["a", "b"])
    assert idle == 8.0
    assert now == pytest.approx(8 * 1.9 + 2 * 8.0 + 3 * 0.4)
    assert before == pytest.approx(8 * 9.9 + 3 * 0.4)


def test_ratios_are_to_the_oracle_on_the_same_seed_under_each_charge():
    runs = pd.DataFrame([
        {"workload": "w", "seed": "1", "config": "oracle", "idle_s": 10.0, "cost_now": 100.0, "cost_before": 100.0},
        {"workload": "w", "seed": "1", "config": "ds2", "idle_s": 10.0, "cost_now": 120.0, "cost_before": 190.0},
        {"workload": "w", "seed": "2", "config": "oracle", "idle_s": 12.0, "cost_now": 50.0, "cost_before": 80.0},
        {"workload": "w", "seed": "2", "config": "ds2", "idle_s": 12.0, "cost_now": 70.0, "cost_before": 80.0},
    ])
    table = ratios(runs)
    assert table.loc[("w", "ds2"), "ratio_now"] == pytest.approx((1.2 + 1.4) / 2)
    assert table.loc[("w", "ds2"), "ratio_before"] == pytest.approx((1.9 + 1.0) / 2)
    assert table.loc[("w", "oracle"), "ratio_now"] == 1.0
