"""How far the plant model is from Spark, and how much faster: every finished run of the given suites, re-run in the
plant model calibrated by a `jobs.calibrate` run, side by side with what Spark measured.

    python -m jobs.calibrate --tracking-uri URI                      # the job's costs on this machine
    python -m benchmarks.simulator_fidelity --tracking-uri URI --parent-run-id ID [--parent-run-id ID ...] \\
        --calibration <calibration run id or its oracle.yaml>

Each run is re-simulated from what it recorded (config/controller.json, config/workload.json, its trigger, max
degree and SLO), so the plant runs the same controller configuration on the same events. Printed: per run, cost
(slot-seconds), p95 latency and SLO attainment measured and simulated; then the errors against the simulator's
fidelity goals (cost <= 10 %, p95 <= 15 %, SLO attainment within 5 points), the rank agreement of the configurations
per workload (Kendall tau of the ranking rule's order: configurations meeting the SLO target by cost, then the
others by attainment; goal >= 0.8) and the speed ratio (simulated seconds per wall-clock second; goal >= 1000).

With `--noise-draws N` (and a calibration that measured noise), each run is also simulated N times with the plant's
seeded noise, as screening does: printed per run is the range of those costs and whether Spark's cost fell inside
it, and per configuration the spread of Spark's seeds beside the plant's — whether the noise the simulator draws is
the noise Spark has (too little, and the plant's verdicts are overconfident; too much, and screening over-protects).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from analysis.runs import load_runs
from analysis.tuning.calibrations import load_calibration
from analysis.tuning.screening import noise_seeds_of
from jobs.recording.recorder import default_tracking_uri
from jobs.recording.run_record import recorded_configuration, recorded_trigger_phase
from simulator.evaluate import simulate_configuration
from workloads import Schedule, parse_workload

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one line per download otherwise
GOALS = {"cost": 0.10, "p95": 0.15, "slo_points": 5.0, "tau": 0.8, "speed": 1000.0}


def resimulate(client, run_id: str, calibration, noise_draws: int = 0) -> tuple[dict, float, float]:
    """(simulated figures, simulated seconds, wall seconds) of one recorded run; with noise draws, the figures also
    hold `noisy_costs` and `noisy_slo` (one per draw, noise seeds [workload seed, draw] as screening uses)."""
    run = client.get_run(run_id)
    recorded = recorded_configuration(client, run_id, "controller", "workload", "topology")
    controller, workload, topology = recorded["controller"], recorded["workload"], recorded["topology"]
    params = run.data.params
    operators = [op["name"] for op in topology["operators"]]
    plant = calibration.plant(operators, float(params["trigger_s"]), int(params["max_degree"]), _chaining(params))
    plant = replace(plant, trigger_phase_s=recorded_trigger_phase(params))  # unrecorded: drawn per noise seed
    schedule = Schedule(parse_workload(workload, source=f"run {run_id}"))
    started = time.perf_counter()
    settings = dict(slo_latency_s=float(params["slo.latency_s"]), slo_target=float(params["slo.target"]),
                    knows_schedule=controller["controller"] == "oracle")
    simulated = simulate_configuration(controller["controller"], controller["params"], schedule, plant, **settings)
    figures = simulated.to_dict()
    took = time.perf_counter() - started
    if noise_draws and plant.noisy:
        noisy = [simulate_configuration(controller["controller"], controller["params"], schedule, plant, **settings,
                                        noise_seed=seed) for seed in noise_seeds_of(schedule, noise_draws)]
        figures["noisy_costs"] = [r.cost_slot_seconds for r in noisy]
        figures["noisy_slo"] = [r.slo_attainment for r in noisy]
    return figures, schedule.spec.duration_s, took


def _chaining(params: dict) -> bool:
    """Whether the run chained its operators (recorded since chaining exists; on before it was never off)."""
    return str(params.get("chain_operators", "True")).lower() != "false"


SIZE_BUCKETS = (0, 2_000, 8_000, 16_000, 40_000)  # records read per batch


def batch_fidelity(client, runs: pd.DataFrame, calibration) -> pd.DataFrame:
    """Per measured batch (pruned runs' batches too: they are real), the plant's batch duration for the records and
    degrees Spark actually had, against the measured one — fidelity where a run-level comparison has no complete
    run, e.g. on bursts that lose the SLO target early. Bucketed by records read, and by whether the batch is the
    first at new degrees."""
    from controllers.cost_model import extra_stages, operator_timing

    rows = []
    for _, r in runs.iterrows():
        with tempfile.TemporaryDirectory() as tmp:
            try:
                batches = pd.read_parquet(client.download_artifacts(r["run_id"], "batches.parquet", tmp))
            except Exception:  # a run that failed before writing its record
                continue
        plant = calibration.plant([c.removeprefix("degree_") for c in batches.columns if c.startswith("degree_")],
                                  2.0, 8)
        previous = None
        for _, b in batches[batches["records_read"] > 0].iterrows():
            spans = sum(operator_timing(op, int(b[f"records_in_{op.name}"]), int(b[f"degree_{op.name}"]),
                                        plant.slots)[0] for op in plant.operators)
            degrees = tuple(int(b[f"degree_{op.name}"]) for op in plant.operators)
            extra = extra_stages(plant.operators, {op.name: d for op, d in zip(plant.operators, degrees)},
                                 plant.chaining)
            rows.append({"records": int(b["records_read"]), "measured_s": float(b["batch_duration_s"]),
                         "simulated_s": plant.batch_overhead_s + plant.stage_overhead_s * extra + spans,
                         "degree_sum": sum(degrees),
                         "after_change": previous is not None and degrees != previous})
            previous = degrees
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["bucket"] = pd.cut(table["records"], [*SIZE_BUCKETS, np.inf], right=False,
                             labels=[f"{lo}-{hi}" for lo, hi in zip(SIZE_BUCKETS, [*SIZE_BUCKETS[1:], "inf"])])
    table["err"] = (table["simulated_s"] - table["measured_s"]) / table["measured_s"]
    # a batch whose degrees differ from its run's previous batch pays for the change (new shuffle partitions, moved
    # state): kept apart, since the plant has no such cost
    return table.groupby(["bucket", "after_change"], observed=True).agg(
        batches=("records", "size"), measured_median_s=("measured_s", "median"),
        simulated_median_s=("simulated_s", "median"), err_median=("err", "median"),
        err_p10=("err", lambda e: e.quantile(0.1)), err_p90=("err", lambda e: e.quantile(0.9))).round(3)


LABEL_WIDTH = 40


def short(label: str) -> str:
    """A configuration's label cut for a table (a tuned or calibrated one runs to hundreds of characters)."""
    return label if len(label) <= LABEL_WIDTH else label[:LABEL_WIDTH - 1] + "…"


def rank_order(table: pd.DataFrame, cost: str, slo: str, target: float) -> list[str]:
    means = table.groupby("config")[[cost, slo]].mean()
    key = [(not row[slo] >= target, row[cost] if row[slo] >= target else -row[slo]) for _, row in means.iterrows()]
    return [c for _, c in sorted(zip(key, means.index))]


def print_noise(table: pd.DataFrame) -> None:
    """Spark's cost against the range of the plant's noisy draws, per run and per configuration (docstring)."""
    noisy = table[table["noisy_costs"].notna()].copy()
    noisy["sim_lo"] = noisy["noisy_costs"].map(min)
    noisy["sim_hi"] = noisy["noisy_costs"].map(max)
    noisy["inside"] = (noisy["cost"] >= noisy["sim_lo"]) & (noisy["cost"] <= noisy["sim_hi"])
    draws = len(noisy["noisy_costs"].iloc[0])
    print(f"\nnoise: each run simulated {draws} times with the calibration's noise; Spark's cost against the "
          f"draws' range")
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print(noisy[["config", "workload", "seed", "cost", "sim_lo", "sim_hi", "inside"]].round(1)
              .assign(config=noisy["config"].map(short)).to_string(index=False))
    spread = noisy.groupby(["config", "workload"]).agg(
        spark_sd=("cost", "std"), spark_range=("cost", lambda c: c.max() - c.min()),
        plant_sd=("noisy_costs", lambda c: float(np.std(np.concatenate(c.tolist()), ddof=1))),
        plant_range=("noisy_costs", lambda c: float(np.ptp(np.concatenate(c.tolist())))))
    print("\ncost spread per configuration (Spark over its seeds; plant over every draw of every seed):")
    print(spread.round(1).rename(index=short, level="config").to_string())
    print(f"\n{int(noisy['inside'].sum())} of {len(noisy)} Spark runs' costs inside the plant's noisy range")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.simulator_fidelity", description=__doc__.split("\n\n")[0])
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--parent-run-id", action="append", required=True)
    p.add_argument("--calibration", required=True, help="a calibration's MLflow run id or its oracle.yaml")
    p.add_argument("--noise-draws", type=int, default=0,
                   help="also simulate each run this many times with the calibration's noise (module docstring)")
    p.add_argument("--per-batch", action="store_true",
                   help="also compare every measured batch's duration (pruned runs' too) with the plant's, by size")
    args = p.parse_args(argv)
    from mlflow.tracking import MlflowClient

    uri = args.tracking_uri or default_tracking_uri()
    client = MlflowClient(uri)
    calibration = load_calibration(args.calibration, uri)
    runs = pd.concat([load_runs(uri, parent_run_id=pid) for pid in args.parent_run_id], ignore_index=True)
    if args.per_batch:
        per_batch = batch_fidelity(client, runs[runs["status"].isin(["FINISHED", "PRUNED"])], calibration)
        print(f"per batch (batch duration, plant vs Spark, same records and degrees; calibration batch overhead "
              f"{calibration.batch_overhead_s:.3f} s):")
        print(per_batch.to_string() if not per_batch.empty else "  no recorded batches", "\n")
    runs = runs[runs["status"] == "FINISHED"]
    rows, simulated_s, wall_s = [], 0.0, 0.0
    for _, r in runs.iterrows():
        sim, seconds, took = resimulate(client, r["run_id"], calibration, args.noise_draws)
        simulated_s, wall_s = simulated_s + seconds, wall_s + took
        rows.append({"config": r["config"], "workload": r["workload"], "seed": r["seed"],
                     "slo_target": r["slo_target"],
                     "cost": r["cost_slot_seconds"], "cost_sim": sim["cost_slot_seconds"],
                     "p95": r["latency_p95_s"], "p95_sim": sim["latency_p95_s"],
                     "slo": r["slo_attainment"], "slo_sim": sim["slo_attainment"],
                     "noisy_costs": sim.get("noisy_costs"), "noisy_slo": sim.get("noisy_slo")})
    table = pd.DataFrame(rows)
    if table.empty:
        print("no finished run in those suites")
        return 1
    table["cost_err"] = (table["cost_sim"] - table["cost"]) / table["cost"]
    table["p95_err"] = (table["p95_sim"] - table["p95"]) / table["p95"]
    table["slo_points"] = 100 * (table["slo_sim"] - table["slo"])
    print(f"calibration: {calibration.source}; batch overhead {calibration.batch_overhead_s:.3f} s, task overhead "
          f"{calibration.task_overhead_s:.4f} s, {calibration.slots} slots\n")
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 40):
        shown = table.assign(config=table["config"].map(short))
        print(shown[["config", "workload", "seed", "cost", "cost_sim", "cost_err", "p95", "p95_sim", "p95_err", "slo",
                     "slo_sim", "slo_points"]].round(3).to_string(index=False))
    taus = []
    for workload, part in table.groupby("workload"):
        target = float(part["slo_target"].iloc[0])
        measured, simulated = rank_order(part, "cost", "slo", target), rank_order(part, "cost_sim", "slo_sim", target)
        if len(measured) > 1:
            tau = kendalltau([measured.index(c) for c in measured], [simulated.index(c) for c in measured]).statistic
            taus.append(tau)
            print(f"\n{workload}: ranking measured {[short(c) for c in measured]}, simulated "
                  f"{[short(c) for c in simulated]}: Kendall tau {tau:.2f}")
    if table["noisy_costs"].notna().any():
        print_noise(table)
    speed = simulated_s / wall_s if wall_s else float("inf")
    checks = [("cost error, max |rel|", table["cost_err"].abs().max(), GOALS["cost"], "<="),
              ("cost error, median |rel|", table["cost_err"].abs().median(), GOALS["cost"], "<="),
              ("p95 error, max |rel|", table["p95_err"].abs().max(), GOALS["p95"], "<="),
              ("p95 error, median |rel|", table["p95_err"].abs().median(), GOALS["p95"], "<="),
              ("SLO attainment, max |points|", table["slo_points"].abs().max(), GOALS["slo_points"], "<="),
              ("Kendall tau, mean over workloads", float(np.mean(taus)) if taus else float("nan"), GOALS["tau"], ">="),
              ("speed, simulated s per wall s", speed, GOALS["speed"], ">=")]
    print(f"\n{len(table)} runs; {simulated_s:.0f} simulated seconds in {wall_s:.2f} s of wall time")
    for name, value, goal, sense in checks:
        met = value <= goal if sense == "<=" else value >= goal
        print(f"  {name:<34} {value:10.3f}   goal {sense} {goal:g}: {'met' if met else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
