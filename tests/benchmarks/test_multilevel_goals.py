"""The cluster suite's goals read-out, on fabricated runs with known answers (MLflow store, no Spark)."""
from benchmarks.multilevel_goals import goals
from tests.benchmarks.suite_runs import fabricated_suite


def fabricate(tmp_path, runs):
    """runs: (config, seed, slo attainment, executor-core-seconds)."""
    return fabricated_suite(tmp_path, "c", (
        ({"config": config, "controller": config.split(":")[0], "workload": "step", "seed": str(seed)},
         {"slo_attainment": slo, "cost_executor_core_seconds": cores, "cost_slot_seconds": 2 * cores,
          "scaling_actions": 1, "executors_mean": cores / 60, "records_lost": 0, "records_duplicated": 0})
        for config, seed, slo, cores in runs))


def test_each_goal_is_read_against_its_own_baseline(tmp_path):
    rows = []
    for seed in (1, 2, 3):
        rows += [("static:degree=2", seed, 0.99, 120.0),
                 ("spark-dynamic-allocation:max_executors=2", seed, 0.70, 120.0),
                 ("executor-autoscaler", seed, 0.95, 100.0),  # +25 points at 0.83x the cores
                 ("multilevel", seed, 0.96, 114.0),           # 0.95x static 2's cores: too many
                 ("ds2", seed, 0.92, 120.0), ("threshold", seed, 0.85, 120.0)]
    uri, parent = fabricate(tmp_path, rows)
    text = "\n".join(goals(uri, [parent]))
    assert "| `multilevel` | 3 | 96.0 [96.0, 96.0] | 114 [114, 114] | 0.95 [0.95, 0.95] |" in text
    assert "multilevel: SLO 96.0% (goal >= 95%), cores 0.95x static 2's (goal <= 0.9x): MISSED" in text
    assert ("executor-autoscaler vs spark-dynamic-allocation:max_executors=2: +25.0 SLO points (goal >= +20) at "
            "0.83x its cores (goal <= 1): met") in text
    assert "ds2: SLO 92.0% (goal >= 90%): met" in text and "threshold: SLO 85.0% (goal >= 90%): MISSED" in text
