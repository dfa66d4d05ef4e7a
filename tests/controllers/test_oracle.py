"""The oracle: exact least-cost vectors (checked by brute force), infeasibility said out loud, and on the plant
model a cost no controller that keeps the SLO can beat."""
import itertools

import pytest

from controllers.types import RunContext
from controllers import ConfigError, ControlLoop, build_controller
from controllers.cost_model import extra_stages
from controllers.oracle import INFEASIBLE, least_cost_vector
from simulator.plant import OperatorModel, PlantConfig, operator_timing, simulate
from tests.controllers.test_ds2 import StepArrivals

OPS = ("parse", "enrich", "aggregate", "sink")
MODELS = (OperatorModel("parse", 0.00002), OperatorModel("enrich", 0.0004),
          OperatorModel("aggregate", 0.00005, selectivity=0.25), OperatorModel("sink", 0.0001))


def brute_force(models, records, budget, overhead, slots, max_degree, stage_overhead=0.0):
    best = None
    for vec in itertools.product(range(1, max_degree + 1), repeat=len(models)):
        flowing, span = float(records), 0.0
        for op, p in zip(models, vec):
            span += operator_timing(op, int(round(flowing)), p, slots)[0]
            flowing *= op.selectivity
        span += stage_overhead * extra_stages(models, dict(zip([m.name for m in models], vec)))
        if overhead + span <= budget and (best is None or sum(vec) < best):
            best = sum(vec)
    return best


@pytest.mark.parametrize("records, budget, slots", [(2000, 2.0, 4), (8000, 1.8, 4), (8000, 1.8, 8), (15000, 1.9, 3),
                                                    (500, 0.5, 4), (12000, 1.5, 8)])
def test_least_cost_vector_is_exact(records, budget, slots):
    degrees, duration, feasible = least_cost_vector(MODELS, records, budget, 0.05, slots, 1, 6)
    expected = brute_force(MODELS, records, budget, 0.05, slots, 6)
    assert feasible == (expected is not None)
    if feasible:
        assert sum(degrees.values()) == expected and duration <= budget


KEYED_MODELS = (MODELS[0], MODELS[1], OperatorModel("aggregate", 0.00005, selectivity=0.25, keyed=True), MODELS[3])


@pytest.mark.parametrize("records, budget, slots, stage", [(2000, 2.0, 4, 0.1), (8000, 1.8, 4, 0.1),
                                                           (8000, 1.3, 8, 0.2), (15000, 2.2, 3, 0.05),
                                                           (12000, 1.5, 8, 0.1)])
def test_least_cost_vector_is_exact_with_a_stage_cost(records, budget, slots, stage):
    """A stage cost couples neighbours: an operator may take a degree that is no faster to chain with the next."""
    degrees, duration, feasible = least_cost_vector(KEYED_MODELS, records, budget, 0.05, slots, 1, 6, stage)
    expected = brute_force(KEYED_MODELS, records, budget, 0.05, slots, 6, stage)
    assert feasible == (expected is not None)
    if feasible:
        assert sum(degrees.values()) == expected and duration <= budget + 1e-9


def test_stages_follow_the_jobs_chaining_rule():
    """Equal degrees chain (the keyed operator still starts its own stage); each change of degree adds one."""
    models = KEYED_MODELS
    assert extra_stages(models, {"parse": 2, "enrich": 2, "aggregate": 2, "sink": 2}) == 0
    assert extra_stages(models, {"parse": 1, "enrich": 3, "aggregate": 3, "sink": 3}) == 1
    assert extra_stages(models, {"parse": 1, "enrich": 3, "aggregate": 2, "sink": 4}) == 2
    assert extra_stages(models, {"parse": 1, "enrich": 1, "aggregate": 1, "sink": 1}, chaining=False) == 0
    assert extra_stages(models, {"parse": 1, "enrich": 3, "aggregate": 3, "sink": 3}, chaining=False) == 0


def test_when_nothing_fits_it_takes_the_fastest_vector_and_says_so():
    degrees, duration, feasible = least_cost_vector(MODELS, 60000, 1.0, 0.05, 4, 1, 8)
    assert not feasible and duration > 1.0
    assert degrees["enrich"] == 4, "beyond the slots more tasks only add waves"
    ctl = build_controller("oracle", {"service_s": {m.name: 0.01 for m in MODELS}}, OPS, 4)
    ctl.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, schedule=StepArrivals(5000, 5000, step_s=10, duration_s=20)))
    loop = ControlLoop(ctl)
    run = simulate(PlantConfig(MODELS, trigger_interval_s=2.0, slots=4, max_degree=4),
                   StepArrivals(5000, 5000, step_s=10, duration_s=20), loop, 20)
    assert any(d.reason.startswith(INFEASIBLE) for d in run.decisions)


def test_on_the_plant_the_oracle_keeps_the_slo_at_the_least_cost():
    plant = PlantConfig(MODELS, trigger_interval_s=2.0, slots=4, batch_overhead_s=0.05, max_degree=8)
    arrivals = lambda: StepArrivals(1500, 6000, step_s=20, duration_s=60)  # noqa: E731
    params = {"service_s": {m.name: m.service_s for m in MODELS}, "selectivity": {"aggregate": 0.25},
              "batch_overhead_s": 0.05, "task_overhead_s": 0.002, "slots": 4, "headroom": 1.0}
    oracle = build_controller("oracle", params, OPS, 8)
    oracle.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, schedule=arrivals()))
    run = simulate(plant, arrivals(), ControlLoop(oracle), 60)
    assert run.latencies().max() <= 5.0
    assert not any(d.reason.startswith(INFEASIBLE) for d in run.decisions)
    # every static vector, DS2, the threshold rule and AUTOSCALE that also keep every event within the SLO cost at
    # least as much
    others = []
    for vec in itertools.product((1, 2), range(1, 7), (1, 2), (1, 2)):  # the cheap operators never need more
        loop = ControlLoop(build_controller("static", {"degrees": dict(zip(OPS, vec))}, OPS, 8))
        others.append(simulate(plant, arrivals(), loop, 60))
    for name, p in (("ds2", {"parallel_slots": 4}), ("threshold", {}), ("autoscale", {})):
        others.append(simulate(plant, arrivals(), ControlLoop(build_controller(name, p, OPS, 8)), 60))
    keeping = [r.slot_seconds for r in others if r.latencies().max() <= 5.0]
    assert keeping and run.slot_seconds <= min(keeping) * 1.001, (run.slot_seconds, min(keeping))


def test_an_oracle_without_calibrated_costs_is_rejected():
    with pytest.raises(ConfigError, match=r"'service_s' lacks operator\(s\) parse, enrich, aggregate, sink; run "
                                          r"`python -m jobs.calibrate`"):
        build_controller("oracle", {}, OPS, 8)
    with pytest.raises(ConfigError, match=r"service_s\['enrich'\] must be of type float, got 'fast'"):
        build_controller("oracle", {"service_s": {"parse": 1e-5, "enrich": "fast", "aggregate": 1e-5,
                                                  "sink": 1e-5}}, OPS, 8)


def test_after_an_idle_stretch_the_oracle_sizes_the_batch_that_starts_with_the_burst(tmp_path):
    """Spark runs no batch while nothing arrives, so the batch after an idle stretch starts when a burst does, not at
    the trigger the decision after the last batch planned for (which read nothing: degree 1 everywhere). The
    oracle plans again as that batch starts, and keeps every event within the SLO where planning after batches
    alone meets the burst at degree 1."""
    from workloads import Schedule
    from workloads.spec import parse_workload

    trace = tmp_path / "rate.csv"  # 10 s at 1000 ev/s, 20 s idle, one second of 12,000 events, idle to the end
    trace.write_text("t_seconds,events\n" + "".join(f"{t},{1000 if t < 10 else 12000 if t == 30 else 0}\n"
                                                   for t in range(60)))
    schedule = lambda: Schedule(parse_workload({"name": "on-off", "trace": {"path": str(trace)}, "seed": 1}))  # noqa
    plant = PlantConfig(MODELS, trigger_interval_s=2.0, slots=4, batch_overhead_s=0.05, max_degree=8)
    params = {"service_s": {m.name: m.service_s for m in MODELS}, "selectivity": {"aggregate": 0.25},
              "batch_overhead_s": 0.05, "task_overhead_s": 0.002, "slots": 4, "headroom": 1.0}

    def run(plans_at_batch_start: bool):
        oracle = build_controller("oracle", params, OPS, 8)
        if not plans_at_batch_start:
            oracle.at_batch_start = lambda *args, **kwargs: None
        oracle.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, schedule=schedule()))
        loop = ControlLoop(oracle)
        return simulate(plant, schedule(), loop, 60), loop

    sized, loop = run(True)
    assert sized.latencies().max() <= 5.0
    burst = [d for d in loop.log if d.changed and 30 <= d.time_s < 34]
    assert burst and burst[0].reason.startswith("at batch start: least-cost vector; this batch reads 12000 events")
    assert burst[0].after["enrich"] > 1
    unsized, _ = run(False)
    assert unsized.latencies().max() > 5.0  # the same oracle, planning after batches only
