"""The Souravlas model page (studies/souravlas_placement.py) on a fabricated per-run table, and one real run each."""
import pandas as pd

from controllers.placement import build_placement
from simulator.task_migration import TaskCluster, initial_placement, simulate_tasks
from studies.souravlas_placement import SCENARIOS, page


def test_the_initial_placement_is_eq_1_per_sub_cluster():
    placement = initial_placement(TaskCluster(sub_clusters=2))
    assert len(placement) == 60 and placement[:7].tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert placement[30] == 5 and set(placement[30:]) == {5, 6, 7, 8, 9}


def test_migrating_off_a_degraded_node_balances_the_load_and_the_run_is_seeded():
    cluster = TaskCluster(duration_s=300)
    none = simulate_tasks(cluster, None, seed=2)
    moved = simulate_tasks(cluster, build_placement("souravlas", {"share": "headroom", "round_s": 5}), seed=2)
    assert moved.migrations > 0 and moved.load_std_mean < none.load_std_mean
    assert moved == simulate_tasks(cluster, build_placement("souravlas", {"share": "headroom", "round_s": 5}), 2)


def test_the_page_compares_each_reading_with_no_migration():
    rows = []
    for nodes in (5, 25):
        for k, (scenario, _) in enumerate(SCENARIOS):
            for seed in (1, 2):
                rows.append({"nodes": nodes, "scenario": scenario, "seed": seed,
                             "load_std_mean": 0.4 - 0.1 * k, "latency_mean_s": 1.0, "latency_p99_s": 5.0,
                             "migrations": 3 * k, "wall_s": 0.1})
    text = page(pd.DataFrame(rows), TaskCluster(), "fabricated.")
    assert "| 5 | souravlas, headroom reading (project) | 0.100 [0.100, 0.100] |" in text
    assert "-75 [-75, -75] %" in text  # 0.1 against 0.4
    assert "better than the split as printed on 2 of 2 cluster sizes" in text
