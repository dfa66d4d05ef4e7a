"""The multi-level controller with the guard layer and as the seed describes it, in the noisy plant (no Spark).

    python -m studies.multilevel_guards            # the markdown table, ~1 min
    python -m studies.multilevel_guards --suite suites/bursty_heldout.yaml   # the held-out traces alone

Why: the bursty suite's goals (docs/bursty.md) ask for one guard layer shared by every parallelism controller;
`multilevel` (the multi-level seed's phase C: it moves between the rows of a capacity table, each row degrees and
1-core executors) wears it too. It is a cluster controller: its executors come 6.5 s after it asks (the plant's
`executor_delay_s`, measured on this machine's standalone cluster), so a burst shorter than that is met at the slots
already there. With the layer each batch start is sized within those slots (burst sizing) and returned after, the
row's proposal goes through the review, and the slots the plant registers bound the degrees as a cluster's do (the
run's slots are unknown before it starts: `RunContext.slots` 0).

The table is the one the seed's benchmark order gives when each configuration is judged at its capacity in the plant
without noise (`ladder_table`: partitions before executors, up to 4 executors); the benchmark itself does not
converge on a staircase in this plant (`ladder_table` says why). Cases: the bursty suite's five workloads and the nightly suite's two
(seed 1), 2 noise seeds each; per case and configuration: actions (degree or executor changes), SLO attainment and
executor core-seconds (what a cluster bills), with the seed's controller as the reference.
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from controllers import ControlLoop, RunContext, build_controller
from controllers.types import vector_text
from controllers.multilevel import CapacityTable
from simulator.evaluate import calibrated_prior
from simulator.plant import PlantConfig, simulate
from studies.burst_wait_budget import NOISY
from studies.guards_simulated import PLANT, study_cases
from studies.settle_actions import SLO_LATENCY_S, study_main
from workloads import Schedule, parse_workload

CASES = ("bursty-google-tasks", "bursty-alibaba-batch", "bursty-google-tasks-1s", "bursty-azure-conv",
         "bursty-nasa-day", "step", "autoscale-paper")
CONFIGURATIONS = (("multilevel:guards=false", {"guards": False}), ("multilevel (default guards)", {}))
MAX_EXECUTORS = 4


def cluster_plant(plant: PlantConfig = NOISY) -> PlantConfig:
    """The study's noisy plant with its slots as a cluster's: the controller's 1-core executors."""
    return dataclasses.replace(plant, slots=MAX_EXECUTORS)


def capacity(plant: PlantConfig, degrees: dict[str, int], executors: int) -> float:
    """The highest constant rate (ev/s, to 100) at which `degrees` on `executors` 1-core executors stays healthy as
    the seed's benchmark judges it: events read >= 95 % of those arrived and every batch's p95 within the SLO, over
    a minute after 20 s of warm-up, on the plant without noise."""
    operators = tuple(op.name for op in plant.operators)
    sized = dataclasses.replace(plant, slots=executors)

    def healthy(rate: float) -> bool:
        spec = parse_workload({"name": "constant", "profile": "constant", "params": {"rate": rate},
                               "duration_s": 80, "seed": 1}, source="studies.multilevel_guards")
        ctl = build_controller("static", {"degrees": degrees}, operators, plant.max_degree)
        run = simulate(sized, Schedule(spec), ControlLoop(ctl), 80.0)
        steady = [b.snapshot for b in run.batches if b.snapshot.time_s > 20.0]
        arrived, read = sum(s.arrivals for s in steady), sum(s.records_read for s in steady)
        worst = max((s.latency_p95_s or 0.0) for s in steady)
        return read >= 0.95 * arrived and worst <= SLO_LATENCY_S

    low, high = 0.0, 40_000.0
    while high - low > 100.0:
        mid = (low + high) / 2
        low, high = (mid, high) if healthy(mid) else (low, mid)
    return low


def ladder_table(plant: PlantConfig) -> CapacityTable:
    """Phase B's table as the seed's benchmark would find it if it judged each configuration at its capacity: from
    degree 1 on one executor, the operator whose stage is longest at that capacity goes up by one while it is below
    the executors (partitions, the cheaper level), else one executor more, to MAX_EXECUTORS. (The benchmark itself,
    on a staircase in this plant, falls behind after its first added executor: a 1-core executor at degree 1 adds no
    speed, and the backlog of the levels it climbs meanwhile never drains within its recovery time.)"""
    operators = tuple(op.name for op in plant.operators)
    models = {op.name: op for op in plant.operators}
    degrees, executors, rows = {op: 1 for op in operators}, 1, []
    level = "start"
    while True:
        rate = capacity(plant, degrees, executors)
        if not rows or rate > rows[-1]["rate_eps"]:
            rows.append({"rate_eps": rate, "degrees": dict(degrees), "executors": executors, "level": level,
                         "delay_s": plant.executor_delay_s if level == "executors" else 0.0})
        growable = [op for op in operators if degrees[op] < executors]
        if growable:
            op = max(growable, key=lambda o: models[o].service_s / degrees[o])
            degrees[op] += 1
            level = "partitions"
        elif executors < MAX_EXECUTORS:
            executors += 1
            level = "executors"
        else:
            break
    return CapacityTable.from_dict({"operators": list(operators), "query": "topology:default", "rows": rows},
                                   "the study's capacity table")


def run_once(params: dict, schedule: Schedule, plant: PlantConfig, table: CapacityTable,
             noise_seed: int) -> tuple[int, float, float]:
    """(actions, SLO attainment, executor core-seconds) of one noisy run; the context as on a cluster (slots 0)."""
    operators = tuple(op.name for op in plant.operators)
    ctl = build_controller("multilevel", params, operators, plant.max_degree)
    ctl.bind(RunContext(trigger_s=plant.trigger_interval_s, slo_latency_s=SLO_LATENCY_S, max_degree=plant.max_degree,
                        slots=0, capacity_table=table, cost_prior=calibrated_prior(plant),
                        duration_s=float(schedule.spec.duration_s)))
    run = simulate(plant, schedule, ControlLoop(ctl), schedule.spec.duration_s, noise_seed=noise_seed)
    latencies = run.latencies()
    actions = sum(1 for d in run.decisions if d.changed or d.executors_changed)
    slo = float(np.mean(latencies <= SLO_LATENCY_S)) if latencies.size else 1.0
    return actions, slo, float(run.executor_core_seconds)


def table(noise_seeds: int, catalogue: tuple[str, ...] | None = None) -> tuple[str, list[str]]:
    """The table over the study's cases, or over the catalogue workloads given (a suite's, at seed 1)."""
    plant = cluster_plant()
    measured = ladder_table(PLANT)
    found, skipped = study_cases(CASES if catalogue is None else catalogue, "studies.multilevel_guards",
                                 windows=False)
    labels = [label for label, _ in CONFIGURATIONS]
    lines = ["Capacity table (phase B in the plant): " + "; ".join(
                 f"{r.rate_eps:.0f} ev/s at {vector_text(r.degrees)} on {r.executors} executor(s)" for r in measured.rows),
             "",
             "| workload | " + " | ".join(f"`{label}`: actions / SLO % / core-s" for label in labels) + " |",
             "|---|" + "---|" * len(labels)]
    wins = 0
    for name, schedule in found:
        cells, slos, costs = [], [], []
        for _, params in CONFIGURATIONS:
            runs = [run_once(params, schedule, plant, measured, n) for n in range(noise_seeds)]
            actions, slo, cores = (float(np.mean(column)) for column in zip(*runs))
            cells.append(f"{actions:.1f} / {100 * slo:.1f} / {cores:.0f}")
            slos.append(slo)
            costs.append(cores)
        wins += slos[1] >= slos[0] - 0.005
        lines.append(f"| {name} | " + " | ".join(cells) + f" (÷ seed's {costs[1] / costs[0]:.2f}) |")
    lines += ["", f"The layer's SLO at least the seed's (within half a point) on {wins} of {len(found)} cases."]
    return "\n".join(lines), skipped


def main(argv: list[str] | None = None) -> int:
    study_main(argv, __doc__.splitlines()[0], table,
               f"the guard study's, with noise, as a cluster of up to {MAX_EXECUTORS} 1-core executors (each "
               f"registered {NOISY.executor_delay_s:g} s after the request)", oracle=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
