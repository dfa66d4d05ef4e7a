"""The Sousa reproduction page (studies/sousa_placement.py) on a fabricated per-run table with known answers."""
import pandas as pd

from analysis.stats import Interval
from simulator.placement import PlacementModel
from studies.sousa_placement import SCENARIOS, _cut, _reduction, _verdict, page


def table(base_p99=(4.0, 5.0, 6.0), adaptive_p99=(1.0, 1.0, 1.0)):
    rows = []
    for scenario, load, controller, _params, thesis in SCENARIOS:
        for i, seed in enumerate((1, 2, 3)):
            p99 = base_p99[i] if controller is None else adaptive_p99[i] if controller == "sousa" else 2.0
            rows.append({"scenario": scenario, "load": load, "thesis_scenario": thesis, "seed": seed,
                         "latency_fast_mean_s": p99 / 10, "latency_fast_p99_s": p99,
                         "latency_slow_mean_s": p99 / 5, "latency_slow_p99_s": p99 * 2,
                         "events_processed": 1000.0, "events_offered": 1000.0,
                         "migrations": 0 if controller is None else 10 if "unlimited" in scenario else 5,
                         "wall_s": 0.5})
    return pd.DataFrame(rows)


def test_reductions_are_ratios_of_means_paired_by_seed():
    runs = table()
    cut = _reduction(runs, "variable", "adaptive d=0.25", "no scheduling", "latency_fast_p99_s")
    assert cut.mean == 1 - 1.0 / 5.0 and cut.n == 3 and cut.low <= cut.mean <= cut.high
    assert _cut(Interval(0.54, 0.31, 0.70, 3)) == "-54 [-70, -31] %"


def test_verdicts_need_an_interval_clear_of_no_change():
    assert _verdict([Interval(0.8, 0.75, 0.85, 30)], 0.71) == "holds"
    assert _verdict([Interval(0.5, 0.4, 0.6, 30)], 0.71).startswith("partly")
    assert _verdict([Interval(0.8, -0.1, 0.95, 30)], 0.71).startswith("not shown")


def test_the_page_states_each_claim_with_the_thesis_figure_beside_the_model():
    text = page(table(), PlacementModel(), "fabricated.")
    assert "| variable | adaptive d=0.25 (1) |" in text and "| variable | no scheduling (12) |" in text
    claim = next(line for line in text.splitlines() if line.startswith("| adaptive vs no scheduling, variable load, "
                                                                     "fast replica p99"))
    assert "-80 / -71 / -75 %" in claim and "-80 [" in claim and claim.endswith("| holds |")
    assert "5.0 -> 10.0" in text  # the migration limit lifted: more migrations
    # an adaptive controller no better than no scheduling on one seed out of three: not shown
    mixed = page(table(adaptive_p99=(1.0, 1.0, 9.0)), PlacementModel(), "fabricated.")
    assert "not shown" in mixed


def test_the_figure_is_drawn_from_the_table(tmp_path):
    from studies.sousa_placement import figure

    path = figure(table(), tmp_path / "f.png")
    assert path.stat().st_size > 5000
