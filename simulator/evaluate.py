"""One configuration on one workload, in the plant model instead of on Spark: the figures a run's summary has.

The same controller object a Spark run builds (controllers.build_controller, bound to the run's trigger and SLO)
steers the plant through the same ControlLoop, so a screened configuration is the configuration that will be
confirmed on Spark, not a re-implementation of it. Cost is slot-seconds (Σ degrees × time), SLO attainment the
share of events whose latency from its scheduled arrival is within the objective: the definitions of the run
summary (jobs.recording), so simulated and measured figures can be compared one to one.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from controllers import ControlLoop, RunContext, build_controller
from controllers.cost_model import CostPrior
from controllers.placement import build_placement
from simulator.key_groups import KeyedPlacement
from simulator.plant import PlantConfig, simulate
from workloads import Schedule


@dataclass(frozen=True)
class SimulatedRun:
    cost_slot_seconds: float
    slo_attainment: float
    latency_p95_s: float
    latency_p99_s: float
    scaling_actions: int
    batches: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def calibrated_prior(plant: PlantConfig) -> CostPrior:
    """The plant's own costs as a calibration of it would report them: its operators and its batch overhead."""
    return CostPrior(plant.operators, plant.batch_overhead_s, source="the plant's own costs")


def simulate_configuration(controller: str, params: Mapping[str, Any], schedule: Schedule, plant: PlantConfig, *,
                           slo_latency_s: float, slo_target: float = 0.95, duration_s: float | None = None,
                           knows_schedule: bool = False, judge_latency_s: float | None = None,
                           noise_seed: int | Sequence[int] | None = None,
                           placement: tuple[str, Mapping[str, Any]] | None = None, keyed_operator: str | None = None,
                           key_groups: int = 128, capacity_table: Any = None, predictor: Any = None,
                           cost_prior: CostPrior | None = None) -> SimulatedRun:
    """`controller` with `params` on the plant for the schedule's workload (its whole duration unless given).

    knows_schedule: bind the schedule into the controller's context, as a Spark run does for the oracle only.
    judge_latency_s: the latency an event must meet to count as on time (default: the SLO's); screening judges
    against less than the SLO the controller is given, as a margin for what the plant does not model.
    noise_seed: one seeded noisy run of a plant with spreads (simulator.plant); None: the deterministic run.
    placement: (name, params) of a placement controller moving `keyed_operator`'s `key_groups` key groups
    (simulator/key_groups.py), beside the parallelism controller as on Spark.
    capacity_table: the multi-level benchmark's table, for `multilevel` (the caller resolves it, as a Spark run does).
    predictor: a load predictor handed to the controller as a Spark run hands a registered one over (jobs.predictors
    loads it; the caller does, so the plant itself reads no registry).
    cost_prior: the costs a calibration measured, handed over as a Spark run hands over its calibration's
    (`calibrated_prior` gives the plant's own, as an exact calibration would measure them)."""
    operators = tuple(op.name for op in plant.operators)
    ctl = build_controller(controller, params, operators, plant.max_degree)
    ctl.bind(RunContext(trigger_s=plant.trigger_interval_s, slo_latency_s=slo_latency_s, slo_target=slo_target,
                        max_degree=plant.max_degree, schedule=schedule if knows_schedule else None,
                        slots=plant.slots, capacity_table=capacity_table, predictor=predictor, cost_prior=cost_prior,
                        duration_s=float(schedule.spec.duration_s if duration_s is None else duration_s)))
    keyed = None
    if placement is not None:
        if keyed_operator not in operators:
            raise ValueError(f"placement {placement[0]!r} needs the keyed operator among {operators}, got "
                             f"{keyed_operator!r}")
        name, settings = placement
        keyed = KeyedPlacement(keyed_operator, key_groups, lambda: build_placement(name, settings))
    run = simulate(plant, schedule, ControlLoop(ctl), schedule.spec.duration_s if duration_s is None else duration_s,
                   noise_seed=noise_seed, keyed=keyed)
    latencies = run.latencies()
    if latencies.size == 0:
        return SimulatedRun(run.slot_seconds, 1.0, 0.0, 0.0, 0, 0)
    return SimulatedRun(cost_slot_seconds=float(run.slot_seconds),
                        slo_attainment=float(np.mean(latencies <= (judge_latency_s or slo_latency_s))),
                        latency_p95_s=float(np.percentile(latencies, 95)),
                        latency_p99_s=float(np.percentile(latencies, 99)),
                        scaling_actions=sum(1 for d in run.decisions if d.changed),
                        batches=len(run.batches))
