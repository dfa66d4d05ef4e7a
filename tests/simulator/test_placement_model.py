"""The placement model (simulator/placement.py): the thesis's setting, determinism, conservation, and the same
controller objects the Spark job uses."""
import numpy as np
import pytest

from controllers.placement import build_placement
from controllers.placement.types import PlacementDecision
from simulator.placement import (PlacementModel, PlacementWorkload, simulate, sousa_stable, sousa_variable)


def test_the_thesis_initial_placement_and_variable_schedule():
    w = sousa_variable()
    assert w.workers == 13 and w.duration_s == 600
    assert w.placement[0] == (0, 1) and w.placement[6] == (0, 1) and w.placement[12] == (0, 1)  # workers 1, 7, 13
    assert all(a != b for a, b in w.placement)  # the two replicas of a worker on different nodes
    per_node = np.bincount([n for pair in w.placement for n in pair], minlength=6)
    assert per_node.tolist() == [5, 5, 4, 4, 4, 4]  # Table 4.4: 26 replicas on VMs 6-11
    rates = w.rates(0.1, 0.0)
    assert rates[0, 0] == 600 and rates[0, 1] == 550 and rates[-1, 0] == 100  # worker 1: A ... B
    # the busiest node's peak under the initial placement: VM6 in period 2 (2,900 events/s, the digest's figure)
    node0 = [w_ for w_, pair in enumerate(w.placement) if 0 in pair]
    assert rates[int(90 / 0.1), node0].sum() == 2900


def test_same_seed_same_run_and_nothing_is_created_or_lost():
    w = sousa_variable()
    a = simulate(w, build_placement("sousa"), seed=3)
    b = simulate(w, build_placement("sousa"), seed=3)
    assert a == b
    assert a.events_processed <= a.events_offered + 1e-6
    assert simulate(w, None, seed=4).events_offered != a.events_offered  # another seed, other arrivals


def test_an_unloaded_pipeline_runs_at_its_service_time_and_nothing_moves():
    quiet = PlacementWorkload(low=(10.0,) * 13, high=(10.0,) * 13, schedule=tuple("BB" for _ in range(13)))
    run = simulate(quiet, build_placement("sousa", {"round_s": 2}), seed=1,
                   model=PlacementModel(node_speed_cv=0.0))
    assert run.latency_fast_mean_s == pytest.approx(PlacementModel().service_ms / 1000, rel=0.05)
    assert run.migrations == 0
    assert run.events_processed == pytest.approx(run.events_offered)


def test_on_bursty_load_the_controller_moves_replicas_apart_and_cuts_the_slow_replicas_latency():
    model = PlacementModel(service_ms=1.9, replica_cores=2)
    w = sousa_variable()
    base = simulate(w, None, seed=1, model=model)

    class Watching:  # the sousa controller, checking every snapshot it is given
        def __init__(self):
            self.inner = build_placement("sousa")

        def decide(self, snap) -> PlacementDecision:
            for together in snap.apart:
                assert len({snap.assignment[g] for g in together}) == len(together)
            return self.inner.decide(snap)

    adaptive = simulate(w, Watching(), seed=1, model=model)
    assert adaptive.migrations > 0
    assert adaptive.latency_slow_p99_s < 0.5 * base.latency_slow_p99_s


def test_stable_load_is_not_overloaded():
    run = simulate(sousa_stable(), None, seed=1, model=PlacementModel(service_ms=1.9, replica_cores=2))
    assert run.latency_slow_p99_s < 0.05
