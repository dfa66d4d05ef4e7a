"""The promotion rule on fabricated suites with known answers (no MLflow: analysis.decision is pure)."""
import pandas as pd
import pytest

from analysis.decision import Incumbent, completeness, decide


def suite(configs: dict[str, list[tuple[float, float]]], failed: dict[str, list[int]] | None = None) -> pd.DataFrame:
    """config -> per-seed (slo_attainment, cost); `failed` adds FAILED runs for those seeds."""
    rows = []
    for config, values in configs.items():
        for seed, (slo, cost) in enumerate(values):
            rows.append({"config": config, "config_id": f"id-{config}", "seed": seed, "status": "FINISHED",
                         "slo_attainment": slo, "cost_slot_seconds": cost, "latency_p99_s": 3.0})
    for config, seeds in (failed or {}).items():
        for seed in seeds:
            rows.append({"config": config, "config_id": f"id-{config}", "seed": seed, "status": "FAILED",
                         "slo_attainment": None, "cost_slot_seconds": None, "latency_p99_s": None})
    return pd.DataFrame(rows)


CHEAP_GOOD = [(0.99, 200), (0.98, 205), (0.99, 198), (0.99, 202)]
DEAR_GOOD = [(1.0, 360), (1.0, 362), (1.0, 359), (1.0, 361)]
CHEAP_BAD = [(0.2, 120), (0.21, 121), (0.19, 119), (0.2, 120)]


def champion(config: str, version: str = "1") -> Incumbent:
    return Incumbent(version, config, f"id-{config}")


def test_first_champion_is_the_best_complete_configuration_meeting_the_slo():
    d = decide("step", suite({"a": CHEAP_GOOD, "b": DEAR_GOOD, "c": CHEAP_BAD}), None, 0.95)
    assert d.promote and d.challenger == "a" and d.challenger_config_id == "id-a" and d.champion is None
    assert "no champion yet" in d.reasons[0]


def test_the_oracle_is_a_bound_never_a_candidate_and_a_pruned_configuration_is_incomplete():
    runs = suite({"oracle:slots=4": CHEAP_GOOD, "b": DEAR_GOOD, "c": DEAR_GOOD[:3]})
    runs["controller"] = runs["config"].str.split(":").str[0]
    runs.loc[(runs["config"] == "c"), "status"] = ["FINISHED", "FINISHED", "PRUNED"]
    d = decide("step", runs, None, 0.95)
    assert d.promote and d.challenger == "b", "the oracle knows the future: no live job can run it"
    assert any("c (1 run(s) PRUNED" in r for r in d.reasons)


def test_a_configuration_with_a_failed_or_missing_seed_is_never_a_candidate():
    runs = suite({"a": CHEAP_GOOD[:3], "b": DEAR_GOOD}, failed={"a": [3]})
    d = decide("step", runs, None, 0.95)
    assert d.challenger == "b", "a failed seed 3, so b (complete) is the candidate"
    assert "not a candidate: a (1 run(s) FAILED (seeds 3))" in d.reasons
    # a seed that another configuration ran but this one did not is missing
    runs = suite({"a": CHEAP_GOOD[:3], "b": DEAR_GOOD})
    assert completeness(runs, {0, 1, 2, 3}) == {"a": "seeds 3 not run"}
    assert decide("step", runs, None, 0.95).challenger == "b"


def test_nothing_is_promoted_when_no_candidate_meets_the_slo():
    d = decide("step", suite({"c": CHEAP_BAD}), None, 0.95)
    assert not d.promote and "no complete configuration meets the SLO target" in d.reasons[0]


def test_a_significantly_cheaper_challenger_replaces_the_champion():
    d = decide("step", suite({"a": CHEAP_GOOD, "b": DEAR_GOOD}), champion("b"), 0.95)
    assert d.promote and d.challenger == "a" and d.champion == "b"
    assert d.evidence["deciding_metric"] == "cost_slot_seconds" and d.evidence["p_value"] < 0.05
    assert d.evidence["relative_gain"] == pytest.approx(1 - 201.25 / 360.5)


def test_the_champion_ranking_first_keeps_it_idempotently():
    d = decide("step", suite({"a": CHEAP_GOOD, "b": DEAR_GOOD}), champion("a"), 0.95)
    assert not d.promote and d.reasons[0] == "the champion a ranks first"


def test_a_gain_below_the_margin_keeps_the_champion():
    slightly_cheaper = [(0.99, 350), (0.99, 351), (0.99, 349), (0.99, 350)]
    d = decide("step", suite({"a": slightly_cheaper, "b": DEAR_GOOD}), champion("b"), 0.95)
    assert not d.promote and "less than the margin 5%" in d.reasons[0]
    assert decide("step", suite({"a": slightly_cheaper, "b": DEAR_GOOD}), champion("b"), 0.95,
                  min_margin=0.02).promote


def test_a_better_mean_without_significance_keeps_the_champion():
    # 3 seeds against 3: the exact permutation test cannot go below p = 0.1
    d = decide("step", suite({"a": CHEAP_GOOD[:3], "b": DEAR_GOOD[:3]}), champion("b"), 0.95)
    assert not d.promote and "not significantly" in d.reasons[0] and d.evidence["p_value"] == pytest.approx(0.1)


def test_a_tie_keeps_the_champion_even_when_it_sorts_after_the_challenger():
    same = [(0.99, 200), (0.99, 230), (0.99, 190), (0.99, 215)]
    other = [(0.99, 205), (0.99, 225), (0.99, 195), (0.99, 212)]
    assert decide("step", suite({"a": same, "b": other}), champion("b"), 0.95).reasons[0] == \
        "the champion b ranks first"


def test_a_champion_missing_the_slo_is_replaced_on_attainment():
    d = decide("step", suite({"a": CHEAP_GOOD, "c": CHEAP_BAD}), champion("c"), 0.95)
    assert d.promote and d.evidence["deciding_metric"] == "slo_attainment"


def test_a_champion_not_run_in_the_suite_cannot_be_beaten_in_it():
    d = decide("step", suite({"a": CHEAP_GOOD}), champion("z"), 0.95)
    assert not d.promote and "was not run in this suite" in d.reasons[0]


def test_a_champion_that_failed_every_run_is_replaced():
    d = decide("step", suite({"a": CHEAP_GOOD}, failed={"z": [0, 1, 2, 3]}), champion("z"), 0.95)
    assert d.promote and "failed every run" in d.reasons[0]


def test_the_champion_is_recognised_by_config_id_under_another_label():
    runs = suite({"a": CHEAP_GOOD, "b": DEAR_GOOD})
    runs.loc[runs["config"] == "a", "config"] = "threshold:cooldown_s=6"
    d = decide("step", runs, Incumbent("3", "old-label", "id-a"), 0.95)
    assert not d.promote and d.champion == "threshold:cooldown_s=6"
