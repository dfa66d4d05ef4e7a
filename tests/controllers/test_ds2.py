"""DS2 for micro-batches: the one-step computation on hand-worked examples, and convergence on the plant model."""
import itertools
import math

import numpy as np
import pytest

from controllers import ControlLoop, OperatorMetrics, Snapshot, build_controller
from controllers.ds2 import least_cost_degrees
from params.units import US
from simulator.plant import chain, simulate

OPS = ("parse", "enrich", "aggregate", "sink")
# DS2 as derived in docs/ds2.md: guards off (DS2 with the guard layer is in tests/controllers/test_guards.py)
PAPER = {"guards": False}


def snapshot(ops, *, arrivals=2000, interval=1.0, trigger=1.0, batch_s=0.5, backlog=0, batch_id=0, time_s=1.0):
    """ops: (name, degree, records_in, records_out, busy_s)."""
    return Snapshot(batch_id=batch_id, time_s=time_s, trigger_interval_s=trigger, batch_duration_s=batch_s,
                    interval_s=interval, arrivals=arrivals, records_read=arrivals, backlog=backlog,
                    latency_p50_s=None, latency_p95_s=None, latency_p99_s=None,
                    operators=tuple(OperatorMetrics(n, d, i, o, b, d, b / d, b / d) for n, d, i, o, b in ops),
                    max_degree=8)


def test_least_cost_vector_matches_brute_force():
    work = {"a": 1.3, "b": 0.2, "c": 0.55, "d": 0.05}
    for budget in (0.4, 0.7, 1.0, 2.5):
        got = least_cost_degrees(work, budget, 1, 8)
        feasible = [v for v in itertools.product(range(1, 9), repeat=4)
                    if sum(w / p for w, p in zip(work.values(), v)) <= budget]
        best = min(sum(v) for v in feasible)
        assert sum(got.values()) == best, (budget, got)
        assert sum(w / got[k] for k, w in work.items()) <= budget


def test_one_step_on_a_chain_with_selectivity():
    # 2000 ev/s arrive; parse halves the stream (selectivity 0.5); trigger 1 s, target utilisation 0.7, fixed cost 0.
    # Service times (busy / records): parse 0.1 ms, enrich 1 ms, aggregate 0.2 ms, sink 0.1 ms.
    # Work per trigger interval a_i = rate_i * T * s_i: parse 2000*1e-4 = 0.2 s; enrich 1000*1e-3 = 1.0 s;
    # aggregate 1000*2e-4 = 0.2 s; sink 1000*1e-4 = 0.1 s. Budget 0.7 s.
    # Greedy: (1,1,1,1) -> 1.5; enrich 2 -> 1.0; enrich 3 -> 0.833; then gains: parse 0.1, enrich 0.083,
    # aggregate 0.1 (parse first by name order, max picks the first) -> parse 2: 0.733; aggregate 2: 0.633 <= 0.7.
    ds2 = build_controller("ds2", PAPER, OPS, 8)
    snap = snapshot([("parse", 1, 2000, 1000, 0.2), ("enrich", 1, 1000, 1000, 1.0),
                     ("aggregate", 1, 1000, 1000, 0.2), ("sink", 1, 1000, 1000, 0.1)], batch_s=1.5)
    degrees, details = ds2.plan(snap)
    assert details["work_s_parse"] == pytest.approx(0.2) and details["work_s_enrich"] == pytest.approx(1.0)
    assert details["overhead_s"] == pytest.approx(0.0) and details["utilization"] == pytest.approx(1.5)
    assert degrees == {"parse": 2, "enrich": 3, "aggregate": 2, "sink": 1}
    decision = ds2.decide(snap)
    assert dict(decision.degrees) == degrees and "outside" in decision.reason


def test_the_true_rate_does_not_depend_on_the_current_degree():
    # the same operator observed at degree 1 and at degree 4 (same busy time per record) gives the same plan
    def plan(degree):
        ds2 = build_controller("ds2", PAPER, OPS, 8)
        snap = snapshot([("parse", 1, 2000, 2000, 0.1), ("enrich", degree, 2000, 2000, 1.2),
                         ("aggregate", 1, 2000, 2000, 0.1), ("sink", 1, 2000, 2000, 0.1)],
                        batch_s=0.3 + 1.2 / degree)
        return ds2.plan(snap)[0]

    assert plan(1) == plan(4)


def test_backlog_raises_the_target_rate_and_fixed_cost_shrinks_the_budget():
    ds2 = build_controller("ds2", {**PAPER, "catch_up_s": 10}, OPS, 8)
    ops = [("parse", 1, 1000, 1000, 0.05), ("enrich", 2, 1000, 1000, 0.5), ("aggregate", 1, 1000, 1000, 0.05),
           ("sink", 1, 1000, 1000, 0.05)]
    _, quiet = ds2.plan(snapshot(ops, arrivals=1000, batch_s=0.5, backlog=500))  # what arrived during the batch
    _, behind = ds2.plan(snapshot(ops, arrivals=1000, batch_s=0.5, backlog=5500))
    assert quiet["target_rate"] == 1000 and quiet["lag"] == 0
    assert behind["lag"] == 5000 and behind["target_rate"] == 1500
    assert quiet["overhead_s"] == pytest.approx(0.5 - 0.05 - 0.25 - 0.05 - 0.05)
    assert quiet["budget_s"] == pytest.approx(0.7 - quiet["overhead_s"])


def test_within_the_band_nothing_changes_and_a_scale_down_waits():
    ds2 = build_controller("ds2", {**PAPER, "scale_down_delay_s": 5}, OPS, 8)
    busy = [("parse", 1, 1000, 1000, 0.02), ("enrich", 4, 1000, 1000, 0.2), ("aggregate", 1, 1000, 1000, 0.02),
            ("sink", 1, 1000, 1000, 0.02)]
    first = ds2.decide(snapshot(busy, arrivals=1000, batch_s=0.11, time_s=1.0, batch_id=0))
    assert first.degrees["enrich"] == 4 and "pending" in first.reason, "utilisation 0.11 < 0.5: wait first"
    later = ds2.decide(snapshot(busy, arrivals=1000, batch_s=0.11, time_s=7.0, batch_id=3))
    assert later.degrees["enrich"] == 1, "after the delay the lower vector is applied"
    fits = build_controller("ds2", PAPER, OPS, 8)
    ok = fits.decide(snapshot([("parse", 1, 1000, 1000, 0.1), ("enrich", 2, 1000, 1000, 0.8),
                               ("aggregate", 1, 1000, 1000, 0.1), ("sink", 1, 1000, 1000, 0.1)], arrivals=1000,
                              batch_s=0.7))
    assert "within" in ok.reason and ok.degrees["enrich"] == 2


class StepArrivals:
    """rate1 events/s until step_s, then rate2 until duration_s, evenly spaced."""

    def __init__(self, rate1, rate2, step_s, duration_s):
        self.rate1, self.rate2, self.step_s = rate1, rate2, step_s
        self.first_after = int(rate1 * step_s)
        self.total_events = self.first_after + int(rate2 * (duration_s - step_s))

    def _due(self, t):
        if t < self.step_s:
            return int(math.floor(t * self.rate1)) + 1
        return self.first_after + int(math.floor((t - self.step_s) * self.rate2)) + 1

    def count_due(self, t_us):
        return max(0, min(self.total_events, self._due(t_us / US))) if t_us >= 0 else 0

    def arrival_us(self, first, stop):
        i = np.arange(first, stop)
        t = np.where(i < self.first_after, i / self.rate1, self.step_s + (i - self.first_after) / self.rate2)
        return np.ceil(t * US).astype(np.int64)


PLANT = chain([("parse", 0.00002), ("enrich", 0.0004), ("aggregate", 0.00005), ("sink", 0.00002)],
              trigger_interval_s=2.0, slots=4, max_degree=8)


@pytest.mark.parametrize("rates", [(1000, 4000), (500, 6000), (4000, 1500)])
def test_after_a_step_ds2_reaches_its_stable_configuration_within_three_decisions(rates):
    loop = ControlLoop(build_controller("ds2", {**PAPER, "parallel_slots": 4, "scale_down_delay_s": 0}, OPS, 8))
    run = simulate(PLANT, StepArrivals(*rates, step_s=30, duration_s=90), loop, 90)
    changes_after_step = [d for d in run.decisions if d.changed and 30 < d.time_s < 90]  # while the load is on
    assert len(changes_after_step) <= 3, [(d.time_s, d.after) for d in changes_after_step]
    tail = [b for b in run.batches if 60 < b.start_s < 88]
    assert len({tuple(b.snapshot.degrees.values()) for b in tail}) == 1, "stable once converged"
    assert max(b.snapshot.batch_duration_s for b in tail) <= PLANT.trigger_interval_s, "keeps up"


def test_an_unreachable_target_falls_back_to_keeping_up_not_to_every_task():
    # fixed cost 1.2 s of a 2 s trigger: the 0.7 target leaves 0.2 s for 1.2 s of stage work, out of reach at 4
    # tasks (0.3 s); keeping up (batch <= 2 s) leaves 0.8 s: enrich at 2 (0.5 s) plus the rest at 1 (0.3 s) fits.
    ds2 = build_controller("ds2", {**PAPER, "parallel_slots": 4}, OPS, 8)
    snap = snapshot([("parse", 1, 2000, 2000, 0.1), ("enrich", 1, 2000, 2000, 1.0), ("aggregate", 1, 2000, 2000, 0.1),
                     ("sink", 1, 2000, 2000, 0.1)], arrivals=2000, interval=2.0, trigger=2.0, batch_s=2.5)
    degrees, details = ds2.plan(snap)
    assert details["overhead_s"] == pytest.approx(1.2) and details["budget_s"] == pytest.approx(0.8)
    assert degrees == {"parse": 1, "enrich": 2, "aggregate": 1, "sink": 1}


def test_the_worked_example_of_docs_ds2_md():
    """docs/ds2.md's table: with a large per-batch cost the whole-batch inequality needs a third enrich task that
    streaming DS2's per-operator rule does not ask for."""
    work = {"parse": 0.06, "enrich": 1.8, "aggregate": 0.12, "sink": 0.006}
    rates = {"parse": 6000, "enrich": 6000, "aggregate": 6000, "sink": 600}
    service = {"parse": 5e-6, "enrich": 150e-6, "aggregate": 10e-6, "sink": 5e-6}
    streaming = {op: math.ceil(rates[op] * service[op] / 0.7) for op in work}
    assert streaming == {"parse": 1, "enrich": 2, "aggregate": 1, "sink": 1}
    for fixed_s, expected in ((0.3, (1, 2, 1, 1)), (0.6, (1, 3, 1, 1))):
        degrees = least_cost_degrees(work, 0.7 * 2.0 - fixed_s, 1, 8)
        assert tuple(degrees.values()) == expected
        assert sum(w / degrees[op] for op, w in work.items()) + fixed_s == pytest.approx(1.386)
    assert sum(w / streaming[op] for op, w in work.items()) + 0.6 == pytest.approx(1.686)
