"""The action-budget bound (studies/action_budget.py): its dynamic programme against brute force on a small plant,
and the relaxation below what the plant itself reaches."""
import itertools

import numpy as np

from simulator.plant import OperatorModel, PlantConfig
from studies.action_budget import (cheapest_static, degree_vectors, least_cost_by_actions, least_cost_unlimited,
                                   on_time_table, trigger_batches)
from workloads import Schedule, parse_workload

PLANT = PlantConfig(operators=(OperatorModel("a", 40e-6, task_overhead_s=0.01),
                               OperatorModel("b", 200e-6, task_overhead_s=0.01)),
                    trigger_interval_s=2.0, slots=3, batch_overhead_s=0.2, max_degree=4, stage_overhead_s=0.1)


def spiky(seed=1):
    return Schedule(parse_workload(
        {"name": "spiky", "profile": "random_peaks", "duration_s": 16, "seed": seed, "arrivals": "poisson",
         "params": {"base": 1000, "peak": 8000, "first_at_s": 4, "first_peak_s": 1, "min_peak_s": 1,
                    "max_peak_s": 2, "min_trough_s": 3, "max_trough_s": 6}}, source="test"))


def brute_force(table, held, non_empty, target, k):
    """Every way to cut the batches into at most k + 1 stretches and give each a vector."""
    n, best = table.shape[1], None
    for cuts in range(k + 1):
        for points in itertools.combinations(range(1, n), cuts):
            bounds = (0, *points, n)
            stretches = list(zip(bounds, bounds[1:]))
            for choice in itertools.product(range(len(table)), repeat=len(stretches)):
                on_time = sum(table[v, i:j].sum() for v, (i, j) in zip(choice, stretches))
                cost = sum(held[v] * non_empty[i:j].sum() for v, (i, j) in zip(choice, stretches))
                if on_time >= target and (best is None or cost < best):
                    best = cost
    return None if best is None else float(best)


def test_the_dynamic_programme_finds_what_brute_force_finds():
    schedule = spiky()
    batches = trigger_batches(schedule, PLANT.trigger_interval_s)
    vectors = degree_vectors(PLANT)
    assert len(vectors) == 9  # degrees 1..3 (the slots) for two operators
    table = on_time_table(PLANT, batches, vectors, 3.0)
    held, non_empty = vectors.sum(axis=1), (batches.sizes > 0).astype(np.int64)
    assert (table.min(axis=0) < batches.sizes).any()  # at some vector some batch misses: vectors matter
    total = batches.total_events
    for share in (0.5, 0.8, 0.95):
        target = int(share * total)
        found = least_cost_by_actions(table, held, non_empty, target, 2)
        assert found == [brute_force(table, held, non_empty, target, k) for k in range(3)], share
        # more actions never cost more, and any number of them reaches the least
        assert all(a is None or (b is not None and b <= a) for a, b in zip(found, found[1:]))
        unlimited = least_cost_unlimited(table, held, non_empty, target)
        assert unlimited is not None and all(c is None or unlimited <= c for c in found)


def test_the_relaxation_is_below_what_a_static_run_reaches_on_the_plant():
    schedule = spiky(2)
    batches = trigger_batches(schedule, PLANT.trigger_interval_s)
    vectors = degree_vectors(PLANT)
    table = on_time_table(PLANT, batches, vectors, 3.0)
    held, non_empty = vectors.sum(axis=1), (batches.sizes > 0).astype(np.int64)
    static = cheapest_static(schedule, PLANT, vectors, 0.9, slo_latency_s=3.0)
    assert static is not None
    [bound] = least_cost_by_actions(table, held, non_empty, int(np.ceil(0.9 * batches.total_events)), 0)
    assert bound is not None and bound * PLANT.trigger_interval_s <= static[2] + 1e-9
