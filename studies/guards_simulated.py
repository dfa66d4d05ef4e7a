"""The guard layer on bursty load, in the micro-batch plant model (no Spark): DS2 and threshold, guards off, on
without burst sizing, on (the defaults), and on with a 30 s stabilisation of scale-downs.

    python -m studies.guards_simulated            # the markdown table (3 seeds per cell, ~20 s)
    python -m studies.guards_simulated --seeds 5

For each workload and configuration, 3 seeds: scaling actions (decisions that changed a degree), SLO attainment
(share of events whose latency from its scheduled arrival is within 5 s), cost (slot-seconds, Σ degrees × time, the
plant's measure) and cost ÷ the oracle's on the same seed, as means with 95 % bootstrap intervals
(analysis.stats.bootstrap_mean). The oracle row is the reference: the project's oracle controller, given the
schedule and the plant's exact costs (headroom 1).

The plant is the benchmark topology's shape with the default topology's costs (enrich an emulated ~150 µs lookup
plus its CPU, the rest a few µs of CPU per record), a 2 s trigger, 4 task slots, a fixed 0.3 s per batch and 10 ms
per task, degrees up to 8: tasks beyond the 4 slots add waves, not speed; parallel_slots stays 0, but the run
tells the controllers its 4 slots as a local[4] Spark run does (the guards stay within them, the published
controllers do not look). Controllers are bound to the run (2 s trigger, 5 s SLO) as on Spark, and use their
defaults except `guards` and the stabilisation named in a row. Workloads: synthetic random peaks (1,500 ev/s with peaks of 12,000 ev/s lasting 4-15 s
every 10-35 s, Poisson arrivals, 20 % lognormal noise; the seed draws the peaks) and, when the traces are present
(../shared/traces or $ELASTIC_TRACES_DIR), windows of the Google 2011 task events (x30 events) and of the Alibaba
2017 batch tasks (x250), 30 minutes of trace replayed 10x faster (180 s): for a trace the seed picks the window (seed
k starts (k - 1) x 30 min later), since a trace's counts do not depend on a seed.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence


from analysis.stats import bootstrap_mean
from simulator.evaluate import calibrated_prior, simulate_configuration
from simulator.plant import OperatorModel, PlantConfig
from workloads import Schedule, WorkloadError, load_workload, parse_workload

OPS = ("parse", "enrich", "aggregate", "sink")
PLANT = PlantConfig(
    operators=(OperatorModel("parse", 10e-6, task_overhead_s=0.01), OperatorModel("enrich", 160e-6, task_overhead_s=0.01),
               OperatorModel("aggregate", 15e-6, task_overhead_s=0.01), OperatorModel("sink", 5e-6, task_overhead_s=0.01)),
    trigger_interval_s=2.0, slots=4, batch_overhead_s=0.3, max_degree=8)
SLO_LATENCY_S = 5.0
DURATION_S = 180.0
CONTROLLERS = ("ds2", "threshold")


def random_peaks(seed: int) -> dict[str, Any]:
    return {"name": "random-peaks", "profile": "random_peaks",
            "params": {"base": 1500, "peak": 12000, "first_at_s": 15, "first_peak_s": 8, "min_peak_s": 4,
                       "max_peak_s": 15, "min_trough_s": 10, "max_trough_s": 35},
            "duration_s": DURATION_S, "seed": seed, "arrivals": "poisson", "noise": {"sigma": 0.2, "step_s": 1}}


def trace_window(trace: str, first_s: float, rate_scale: float) -> Callable[[int], dict[str, Any]]:
    def spec(seed: int) -> dict[str, Any]:
        start = first_s + (seed - 1) * 1800.0
        return {"name": f"{trace}@{start:.0f}", "seed": seed,
                "trace": {"name": trace, "start_s": start, "length_s": 1800, "compression": 10,
                          "rate_scale": rate_scale}}
    return spec


def catalogue(name: str) -> Callable[[int], dict[str, Any]]:
    """A catalogue workload as the nightly suite runs it (its own length), at the given seed."""
    def spec(seed: int) -> dict[str, Any]:
        return {**load_workload(name).to_dict(), "seed": seed}
    return spec


WORKLOADS: dict[str, Callable[[int], dict[str, Any]]] = {
    "random-peaks (synthetic)": random_peaks,
    "google2011_task_events": trace_window("google2011_task_events", 3600.0, 30.0),
    "alibaba2017_batch_task": trace_window("alibaba2017_batch_task", 0.0, 250.0),
    # the nightly suite's workloads: what turning the guards on by default would change there
    "step (nightly)": catalogue("step"),
    "autoscale-paper (nightly)": catalogue("autoscale-paper"),
}


@dataclass(frozen=True)
class Outcome:
    actions: int
    slo_attainment: float
    cost_slot_s: float


def schedule(workload: str, seed: int) -> Schedule:
    return Schedule(parse_workload(WORKLOADS[workload](seed), source=f"studies.guards_simulated:{workload}"))


# off: the published controller; on without burst sizing: the guards reacting after each batch only; on: the
# defaults (burst sizing, scale-downs at once); on with the 30 s stabilisation of scale-downs the defaults had until
# 2026-11-26 (the capacity a burst needed held for 30 s after it)
GUARD_MODES = (("off", False, {}), ("on, no burst sizing", True, {"burst_sizing": False}), ("on", True, {}),
               ("on, 30 s stabilisation", True, {"stabilisation_s": 30}))


def run_once(controller: str, guards: bool, arrivals: Schedule, params: dict[str, Any] | None = None,
             plant: PlantConfig = PLANT, duration_s: float = DURATION_S) -> Outcome:
    run = simulate_configuration(controller, {"guards": guards, **(params or {})}, arrivals, plant,
                                 slo_latency_s=SLO_LATENCY_S, duration_s=duration_s, cost_prior=calibrated_prior(plant))
    return Outcome(run.scaling_actions, run.slo_attainment, run.cost_slot_seconds)


def oracle_params(plant: PlantConfig = PLANT) -> dict[str, Any]:
    """The oracle's parameters for a plant: its exact costs (headroom 1)."""
    return {"service_s": {op.name: op.service_s for op in plant.operators},
            "selectivity": {op.name: op.selectivity for op in plant.operators},
            "task_overhead_s": plant.operators[0].task_overhead_s, "batch_overhead_s": plant.batch_overhead_s,
            "slots": plant.slots, "headroom": 1.0}


def run_oracle(arrivals: Schedule, plant: PlantConfig = PLANT, duration_s: float = DURATION_S) -> Outcome:
    """The oracle on the same plant: it knows the schedule and the plant's exact costs (headroom 1), the least
    cost any controller keeping the SLO could reach (when the SLO is feasible at all)."""
    run = simulate_configuration("oracle", oracle_params(plant), arrivals, plant, slo_latency_s=SLO_LATENCY_S,
                                 duration_s=duration_s, knows_schedule=True)
    return Outcome(run.scaling_actions, run.slo_attainment, run.cost_slot_seconds)


def available(workload: str) -> str | None:
    """None when the workload can be built here, else why not (a trace that is not on this machine)."""
    try:
        parse_workload(WORKLOADS[workload](1), source="check")
    except WorkloadError as exc:
        return str(exc)
    return None


# the study's own bursty workloads (three seeds each: a trace window moves half an hour per seed)
STUDY_WORKLOADS = ("google2011_task_events", "alibaba2017_batch_task", "random-peaks (synthetic)")


def study_cases(catalogue: Sequence[str], source: str, windows: bool = True
                ) -> tuple[list[tuple[str, Schedule]], list[str]]:
    """(name, schedule) of the study's bursty workloads at seeds 1-3 (unless `windows` is false) and of the
    catalogue's `catalogue` workloads at seed 1, and the reasons of those skipped (a trace that is not on this
    machine)."""
    found, skipped = [], []
    for workload in STUDY_WORKLOADS if windows else ():
        why = available(workload)
        if why:
            skipped.append(f"{workload}: skipped ({why})")
            continue
        found += [(f"{workload}, seed {seed}", schedule(workload, seed)) for seed in (1, 2, 3)]
    for workload in catalogue:
        try:
            spec = {**load_workload(workload).to_dict(), "seed": 1}
            found.append((workload, Schedule(parse_workload(spec, source=f"{source}:{workload}"))))
        except WorkloadError as exc:
            skipped.append(f"{workload}: skipped ({exc})")
    return found, skipped


def interval_cell(values: list[float], fmt: str) -> str:
    """'mean [low, high]': the mean and its 95 % bootstrap interval."""
    iv = bootstrap_mean(values)
    return f"{iv.mean:{fmt}} [{iv.low:{fmt}}, {iv.high:{fmt}}]"


def table(seeds: tuple[int, ...] = (1, 2, 3)) -> tuple[str, list[str]]:
    lines = ["| workload | controller | guards | scaling actions | SLO attainment % | cost slot-s | cost ÷ oracle |",
             "|---|---|---|---|---|---|---|"]
    skipped = []
    for workload in WORKLOADS:
        why = available(workload)
        if why:
            skipped.append(f"{workload}: skipped ({why})")
            continue
        arrivals = {seed: schedule(workload, seed) for seed in seeds}
        oracle = {seed: run_oracle(schedule(workload, seed)) for seed in seeds}
        rows = [("oracle", "—", [oracle[seed] for seed in seeds])]
        for controller in CONTROLLERS:
            for label, guards, params in GUARD_MODES:
                rows.append((controller, label,
                             [run_once(controller, guards, arrivals[seed], params) for seed in seeds]))
        for controller, guards, runs in rows:
            ratios = [r.cost_slot_s / oracle[seed].cost_slot_s for r, seed in zip(runs, seeds)]
            lines.append(f"| {workload} | {controller} | {guards} | "
                         f"{interval_cell([r.actions for r in runs], '.1f')} | "
                         f"{interval_cell([100 * r.slo_attainment for r in runs], '.1f')} | "
                         f"{interval_cell([r.cost_slot_s for r in runs], '.0f')} | {interval_cell(ratios, '.2f')} |")
    return "\n".join(lines), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per cell (3)")
    args = parser.parse_args(argv)
    text, skipped = table(tuple(range(1, args.seeds + 1)))
    print(f"Plant: 4 operators, trigger {PLANT.trigger_interval_s:g} s, {PLANT.slots} slots, max degree "
          f"{PLANT.max_degree}; SLO latency <= {SLO_LATENCY_S:g} s; the traces and random peaks {DURATION_S:.0f} s, the nightly workloads their own length; {args.seeds} seeds; "
          f"means with 95 % bootstrap intervals.\n")
    print(text)
    for line in skipped:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
