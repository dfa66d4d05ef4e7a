"""The AUTOSCALE predictor goal's read-out, on fabricated runs with known answers (MLflow store, no
Spark)."""
from benchmarks.predictor_goals import CHAMPION, PAPER, goals
from tests.benchmarks.suite_runs import fabricated_suite

CHAMPION_TAG = "guarded(load-predictor@champion=v1)"


def fabricate(tmp_path, runs, uri=None):
    """runs: (config, workload, seed, slo attainment, slot-seconds, predictor tag); configurations are tagged as
    runs tag them, their text parameters quoted."""
    return fabricated_suite(tmp_path, "p", (
        ({"config": config.replace("=registry", '="registry"'), "controller": "autoscale", "workload": workload,
          "seed": str(seed), "predictor": predictor},
         {"slo_attainment": slo, "cost_slot_seconds": cost, "latency_p99_s": 4.0, "scaling_actions": 3})
        for config, workload, seed, slo, cost, predictor in runs), uri)


def test_the_champion_is_compared_with_the_paper_pair_by_pair_and_each_workload_counts_once(tmp_path):
    rows = []
    for seed in (1, 2, 3):
        # workload a: the champion costs 0.8x at the same attainment; workload b: 0.9x and one point lower
        rows += [(PAPER, "a", seed, 0.95, 100.0 * seed, "paper-ols-extrapolated"),
                 (CHAMPION, "a", seed, 0.95, 80.0 * seed, CHAMPION_TAG),
                 (PAPER, "b", seed, 0.90, 200.0, "paper-ols-extrapolated"),
                 (CHAMPION, "b", seed, 0.89, 180.0, CHAMPION_TAG)]
    rows.append((PAPER, "b", 4, 0.9, 200.0, "paper-ols-extrapolated"))  # no partner: not a pair
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    assert (f"`{CHAMPION}` paired over 3 seed(s): cost 0.800 [0.800, 0.800]x the paper's, SLO attainment 0.0 "
            "[0.0, 0.0] points") in text
    assert f"`{CHAMPION}` paired over 3 seed(s): cost 0.900 [0.900, 0.900]x the paper's" in text
    assert f"`{CHAMPION}` forecast with: {CHAMPION_TAG}" in text
    # over the suite: (0.8 + 0.9) / 2, attainment (0 - 1) / 2 points, within the one point "equal SLO" allows
    assert "over 2 workload(s), 6 pair(s): cost 0.850 [0.800, 0.900]x the paper's" in text
    assert text.rstrip().endswith("met")


def test_another_registered_alias_is_shown_beside_the_champion_for_reference(tmp_path):
    conservative = f"{CHAMPION},predictor_alias=conservative"
    rows = []
    for seed in (1, 2):
        rows += [(PAPER, "a", seed, 0.90, 100.0, "paper-ols-extrapolated"),
                 (CHAMPION, "a", seed, 0.85, 80.0, CHAMPION_TAG),
                 (conservative, "a", seed, 0.95, 120.0, "guarded(load-predictor@conservative=v2)")]
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    assert f"| `{conservative}` (registered model) | 2 | 95.0" in text
    assert f"`{conservative}` paired over 2 seed(s): cost 1.200 [1.200, 1.200]x the paper's" in text
    assert "over 1 workload(s), 2 pair(s): cost 0.800 [0.800, 0.800]x the paper's, SLO attainment -5.0" in text
    assert text.splitlines()[-2] == f"for reference, `{conservative}` against the paper's OLS the same way:"
    assert text.splitlines()[-1].startswith("  over 1 workload(s), 2 pair(s): cost 1.200")


def test_a_dearer_or_less_punctual_champion_misses_and_runs_that_fell_back_are_left_out(tmp_path):
    rows = []
    for seed in (1, 2):
        rows += [(PAPER, "a", seed, 0.95, 100.0, "paper-ols-extrapolated"),
                 (CHAMPION, "a", seed, 0.90, 90.0, CHAMPION_TAG)]  # cheaper, but five points less punctual
    rows.append((CHAMPION, "a", 3, 0.99, 10.0, "paper-ols-extrapolated"))  # no champion in the store: fell back
    rows.append((PAPER, "a", 3, 0.95, 100.0, "paper-ols-extrapolated"))
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    assert "left out: 1 registry-steered run(s) that did not forecast with a registered model" in text
    assert "over 1 workload(s), 2 pair(s): cost 0.900" in text and text.rstrip().endswith("MISSED")


def test_each_reading_of_autoscale_is_compared_within_itself(tmp_path):
    """Runs of the paper's tables alone and runs with the guard layer: each steered configuration is paired with the
    paper's OLS of its own reading, never across them, and each reading has its own verdict."""
    from benchmarks.predictor_goals import READINGS

    (_, _, _), (_, layer_paper, layer_champion) = READINGS
    rows = []
    for seed in (1, 2):
        rows += [(PAPER, "a", seed, 0.90, 100.0, "paper-ols-extrapolated"),
                 (CHAMPION, "a", seed, 0.80, 90.0, CHAMPION_TAG),           # paper's tables: cheaper, 10 points less
                 (layer_paper, "a", seed, 0.99, 200.0, "paper-ols-extrapolated"),
                 (layer_champion, "a", seed, 0.99, 180.0, CHAMPION_TAG)]    # with the layer: 0.9x, equal SLO
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    paper_part, layer_part = text.split("## AUTOSCALE with the guard layer")
    assert "cost 0.900 [0.900, 0.900]x the paper's, SLO attainment -10.0" in paper_part and "MISSED" in paper_part
    assert f"`{layer_champion}` paired over 2 seed(s): cost 0.900 [0.900, 0.900]x the paper's, SLO attainment 0.0" \
        in layer_part
    assert layer_part.rstrip().endswith("met") and "MISSED" not in layer_part
