"""AUTOSCALE's activity (NdA = charge ÷ capacity) on Spark against the plant's, iteration by iteration, for one Spark
run: is the plant's capacity the job's, or is it the charge that differs?

    python -m studies.autoscale_capacity --run-id RUN                        # the guard study's hand-set plant
    python -m studies.autoscale_capacity --run-id RUN --calibration .local/calibration/oracle.yaml

Why: AUTOSCALE's thresholds for the champion were chosen in the plant (studies.autoscale_thresholds, 2026-11-28), and
on Spark they did not transfer (the champion took no action on two of three bursty traces); the reading offered then
was that the plant's AUTOSCALE does not measure the capacity Spark's task times give it. That is testable from the
records alone: each AUTOSCALE iteration logs, per operator, the capacity it estimated (degree × iteration span ÷
measured service time), the charge (forecast arrivals plus the events waiting) and their ratio. This reads them from
the Spark run's decisions.jsonl, runs the same configuration on the same workload in the plant, and prints (1) per
operator and degree the capacity per slot per second on both (capacity ÷ (degree × span), the span being the time
since the previous iteration), and (2) the first iterations side by side. Where (1) agrees and (2) does not, the
thresholds did not transfer because the charge each iteration sees differs (where a burst falls against the
iteration's batches), not the capacity.

The plant replays the run at the run's own trigger phase (where its time 0 fell on Spark's trigger grid, logged as
param `trigger_phase_s`); for a run that did not record it each noise seed draws one, as the plant does for any noisy
run.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from controllers import ControlLoop, RunContext, build_controller
from simulator.plant import PlantConfig, simulate
from studies.autoscale_thresholds import add_plant_options, load_predictor, study_plant
from studies.guards_simulated import OPS

FIRST_ITERATIONS = 6


@dataclass(frozen=True)
class Iteration:
    """One AUTOSCALE iteration as its decision record has it; `span_s` is None for the first (its start is not
    recorded)."""
    time_s: float
    span_s: float | None
    degrees: Mapping[str, int]
    nda: Mapping[str, float]
    charge: Mapping[str, float]
    capacity: Mapping[str, float]


def iterations(records: Iterable[Mapping[str, Any]], operators: Sequence[str]) -> list[Iteration]:
    """The iterations among decision records (dicts with time_s, before, details), in time order."""
    found, last = [], None
    for record in sorted(records, key=lambda r: r["time_s"]):
        details = record.get("details") or {}
        if not all(f"nda_{op}" in details for op in operators):
            continue
        t = float(record["time_s"])
        found.append(Iteration(t, None if last is None else t - last, dict(record["before"]),
                               {op: float(details[f"nda_{op}"]) for op in operators},
                               {op: float(details[f"charge_{op}"]) for op in operators},
                               {op: float(details[f"capacity_{op}"]) for op in operators}))
        last = t
    return found


def capacity_per_slot(found: Sequence[Iteration], op: str) -> dict[int, list[float]]:
    """{degree: [capacity ÷ (degree × span), per iteration]}: events per slot per second the controller credited."""
    out: dict[int, list[float]] = defaultdict(list)
    for it in found:
        if it.span_s and it.span_s > 0 and np.isfinite(it.capacity[op]) and it.degrees[op] > 0:
            out[it.degrees[op]].append(it.capacity[op] / (it.degrees[op] * it.span_s))
    return dict(out)


def plant_records(params: Mapping[str, Any], schedule: Any, plant: PlantConfig, noise_seed: int,
                  predictor: Any = None, slo_latency_s: float = 5.0) -> list[dict[str, Any]]:
    """The plant run's decision records, in the Spark records' shape."""
    ops = tuple(op.name for op in plant.operators)
    controller = build_controller("autoscale", dict(params), ops, plant.max_degree)
    controller.bind(RunContext(trigger_s=plant.trigger_interval_s, slo_latency_s=slo_latency_s,
                               max_degree=plant.max_degree, slots=plant.slots, predictor=predictor,
                               duration_s=float(schedule.spec.duration_s)))
    loop = ControlLoop(controller)
    simulate(plant, schedule, loop, schedule.spec.duration_s, noise_seed=noise_seed)
    return [{"time_s": r.time_s, "before": r.before, "details": r.details} for r in loop.log]


def capacity_table(spark: Sequence[Iteration], plants: Sequence[Sequence[Iteration]], operators: Sequence[str]
                   ) -> list[str]:
    lines = ["| operator | degree | Spark: ev/s per slot (iterations) | plant: ev/s per slot (iterations) | "
             "Spark ÷ plant |", "|---|---|---|---|---|"]
    for op in operators:
        on_spark = capacity_per_slot(spark, op)
        on_plant: dict[int, list[float]] = defaultdict(list)
        for found in plants:
            for degree, values in capacity_per_slot(found, op).items():
                on_plant[degree] += values
        for degree in sorted(set(on_spark) | set(on_plant)):
            s, p = on_spark.get(degree, []), on_plant.get(degree, [])
            ratio = f"{np.mean(s) / np.mean(p):.2f}" if s and p else "—"
            lines.append(f"| {op} | {degree} | {_mean_cell(s)} | {_mean_cell(p)} | {ratio} |")
    return lines


def _mean_cell(values: Sequence[float]) -> str:
    return f"{np.mean(values):,.0f} ({len(values)})" if values else "—"


def timeline(spark: Sequence[Iteration], plant: Sequence[Iteration], op: str, n: int = FIRST_ITERATIONS) -> list[str]:
    lines = [f"| iteration | Spark: t s, {op} degree, charge, capacity, NdA | plant: t s, degree, charge, capacity, "
             "NdA |", "|---|---|---|"]
    for i in range(min(n, max(len(spark), len(plant)))):
        cells = []
        for found in (spark, plant):
            if i < len(found):
                it = found[i]
                cells.append(f"{it.time_s:.1f}, {it.degrees[op]}, {it.charge[op]:,.0f}, {it.capacity[op]:,.0f}, "
                             f"{it.nda[op]:.2f}")
            else:
                cells.append("—")
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return lines


def spark_run(run_id: str, tracking_uri: str) -> tuple[dict[str, str], dict[str, Any], list[dict[str, Any]]]:
    """The run's params, its recorded configuration (controller, workload) and its decision records."""
    from mlflow.tracking import MlflowClient

    from jobs.recording.run_record import recorded_configuration

    client = MlflowClient(tracking_uri)
    run = client.get_run(run_id)
    recorded = recorded_configuration(client, run_id, "controller", "workload")
    if recorded["controller"]["controller"] != "autoscale":
        raise SystemExit(f"run {run_id} is not an AUTOSCALE run (its controller: "
                         f"{recorded['controller']['controller']!r})")
    with tempfile.TemporaryDirectory() as scratch:
        path = client.download_artifacts(run_id, "decisions.jsonl", scratch)
        with open(path) as f:
            records = [json.loads(line) for line in f if line.strip()]
    return run.data.params, recorded, records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.autoscale_capacity", description=__doc__.split("\n")[0])
    ap.add_argument("--run-id", required=True, help="an AUTOSCALE run on Spark (its MLflow run id)")
    add_plant_options(ap)
    args = ap.parse_args(argv)
    from jobs.recording.run_record import recorded_trigger_phase
    from workloads import Schedule, parse_workload

    tracking_uri, plant, note = study_plant(args)
    params, recorded, records = spark_run(args.run_id, tracking_uri)
    schedule = Schedule(parse_workload(recorded["workload"], source=f"run {args.run_id}"))
    name, seed = schedule.spec.name, schedule.spec.seed
    # a run records every parameter resolved; one without `guards` ran before AUTOSCALE had the guard layer
    settings = {"guards": False, **recorded["controller"]["params"]}
    predictor = None
    if settings.get("predictor") == "registry":
        predictor = load_predictor(tracking_uri, settings.get("predictor_alias", "champion"))
    phase = recorded_trigger_phase(params)
    plant = replace(plant, trigger_phase_s=phase)  # the run's own (None when unrecorded: one per noise seed)
    note += (f", the run's trigger phase {phase:.2f} s" if phase is not None else
             ", the trigger phase drawn per noise seed (this run did not record its own)")
    spark = iterations(records, OPS)
    plants = [iterations(plant_records(settings, schedule, plant, n, predictor,
                                       float(params.get("slo.latency_s", 5.0))), OPS)
              for n in range(args.noise_seeds)]
    print(f"Spark run {args.run_id} ({name}, seed {seed}, θ {settings['theta_min']:g}/{settings['theta_max']:g}, "
          f"predictor {settings.get('predictor')}) against {note}, {args.noise_seeds} noise seeds\n")
    print("\n".join(capacity_table(spark, plants, OPS)))
    print(f"\nThe first {FIRST_ITERATIONS} iterations, enrich (the plant's noise seed 0):\n")
    print("\n".join(timeline(spark, plants[0], "enrich")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
