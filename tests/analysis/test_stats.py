"""Comparison statistics on fabricated run tables with known answers."""
import numpy as np
import pandas as pd
import pytest

from analysis.stats import bootstrap_mean, pareto_front, permutation_test, rank, regressions, summarise_configs


def runs(spec):
    """{config: [(slo_attainment, cost), ...]} -> a run table (one row per seed)."""
    rows = []
    for config, values in spec.items():
        for seed, (slo, cost) in enumerate(values):
            rows.append({"config": config, "workload": "step", "seed": seed, "slo_attainment": slo,
                         "cost_slot_seconds": cost, "latency_p99_s": 3.0})
    return pd.DataFrame(rows)


def test_bootstrap_interval_contains_the_mean_and_shrinks_with_agreement():
    wide = bootstrap_mean([1, 5, 9, 2, 8])
    narrow = bootstrap_mean([5.0, 5.1, 4.9, 5.0, 5.0])
    assert wide.low < wide.mean == 5.0 < wide.high
    assert narrow.high - narrow.low < 0.2 * (wide.high - wide.low)
    assert bootstrap_mean([3.0]) .low == 3.0 and bootstrap_mean([]).n == 0
    assert bootstrap_mean([1, 2, 3]) == bootstrap_mean([1, 2, 3]), "seeded: reports are reproducible"


def test_exact_permutation_test_known_values():
    # 4 vs 4 fully separated: the two extreme splits out of C(8,4) = 70
    assert permutation_test([1, 2, 3, 4], [11, 12, 13, 14]) == pytest.approx(2 / 70)
    # 3 vs 3 can never go below 2/20 = 0.1
    assert permutation_test([1, 2, 3], [11, 12, 13]) == pytest.approx(0.1)
    assert permutation_test([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    big = permutation_test(np.arange(10), np.arange(10) + 100)
    assert big < 0.001


def test_ranking_rule_cheapest_meeting_slo_first_then_by_attainment():
    table = runs({
        "cheap_but_late": [(0.80, 100), (0.82, 101), (0.79, 99), (0.81, 100)],
        "expensive_ok": [(0.99, 300), (0.99, 301), (0.98, 299), (0.99, 300)],
        "cheaper_ok": [(0.97, 200), (0.96, 202), (0.97, 199), (0.97, 201)],
        "worst": [(0.50, 50), (0.52, 51), (0.49, 50), (0.51, 50)],
    })
    ranked = rank(table, slo_target=0.95)
    assert list(ranked["config"]) == ["cheaper_ok", "expensive_ok", "cheap_but_late", "worst"]
    assert list(ranked["rank"]) == [1, 2, 3, 4] and ranked["tied_with"].isna().all()
    assert list(ranked["meets_slo"]) == [True, True, False, False]


def test_overlapping_insignificant_costs_tie_and_the_incumbent_keeps_its_place():
    table = runs({"a": [(0.99, 100), (0.99, 130), (0.99, 90)], "b": [(0.99, 105), (0.99, 125), (0.99, 95)]})
    plain = rank(table, slo_target=0.95)
    assert list(plain["rank"]) == [1, 1] and plain.loc[1, "tied_with"] == plain.loc[0, "config"]
    assert list(plain["config"]) == ["a", "b"]  # no incumbent: alphabetical inside the tie
    favoured = rank(table, slo_target=0.95, incumbent="b")
    assert list(favoured["config"]) == ["b", "a"] and favoured.loc[1, "tied_with"] == "b"


def test_pareto_front_drops_dominated_configurations():
    table = summarise_configs(runs({
        "cheap_bad": [(0.5, 50)], "mid": [(0.9, 100)], "dominated": [(0.85, 150)], "best_slo": [(1.0, 300)]}))
    assert pareto_front(table) == ["cheap_bad", "mid", "best_slo"]


def test_regressions_need_size_and_significance():
    before = runs({"threshold": [(0.99, 100), (0.98, 101), (0.99, 99), (0.99, 100)]})
    worse = runs({"threshold": [(0.90, 130), (0.91, 131), (0.90, 129), (0.89, 130)]})
    found = regressions(before, worse, {"slo_attainment": 0.02, "cost_slot_seconds": 0.05})
    assert {r.metric for r in found} == {"slo_attainment", "cost_slot_seconds"}
    assert "0.9875 -> 0.9" in str([r for r in found if r.metric == "slo_attainment"][0])
    # within tolerance, or noisy enough not to be significant: nothing
    slightly = runs({"threshold": [(0.985, 102), (0.98, 101), (0.99, 103), (0.985, 102)]})
    assert regressions(before, slightly, {"slo_attainment": 0.02, "cost_slot_seconds": 0.05}) == []
    noisy = runs({"threshold": [(0.99, 60), (0.99, 180), (0.99, 70), (0.99, 190)]})
    assert regressions(before, noisy, {"cost_slot_seconds": 0.05}) == []
    # better is never a regression
    better = runs({"threshold": [(1.0, 80), (1.0, 81), (1.0, 79), (1.0, 80)]})
    assert regressions(before, better, {"slo_attainment": 0.0, "cost_slot_seconds": 0.0}) == []
