"""Where Spark's trigger grid falls against a bursty trace, and what pinning it per seed buys a comparison (no Spark).

    python -m studies.trigger_phase                  # the markdown tables, ~40 s
    python -m studies.trigger_phase --phases 32 --workloads bursty-google-tasks-1s

Why: Spark fires a query's triggers at wall-clock multiples of the interval, so where a run's time 0 falls between
them (its trigger phase, jobs.trigger_grid) decides which batch reads each burst. On the bursty suite's real-time
Google trace the oracle's Spark runs of 2026-12-03 kept 29-70 % of the events on time with nothing changed but the
run. Left free (`--trigger-phase free`), the phase is wherever start-up ends, different in every run, and a
configuration is judged against an oracle that met other batch boundaries. So a run's phase comes from its seed by
default (`--trigger-phase seeded`).

Per workload, the study's noisy plant (studies.burst_wait_budget.NOISY, one noise draw) at evenly spaced phases:
each configuration's SLO attainment per phase; then, over the phases, the spread of a configuration's attainment
less the oracle's when both ran at the same phase (paired: seeded phases) and at independent phases (free phases),
as the standard deviation of one seed's difference and the half-width of a 95 % interval for a 3-seed mean of it.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from simulator.evaluate import calibrated_prior, simulate_configuration
from studies.burst_wait_budget import NOISY
from studies.guards_simulated import SLO_LATENCY_S, oracle_params, study_cases

WORKLOADS = ("bursty-google-tasks-1s", "bursty-google-tasks", "bursty-alibaba-batch")
CONFIGURATIONS = (("ds2", "ds2", {}), ("threshold", "threshold", {}), ("ds2:guards=false", "ds2", {"guards": False}))
T_95_2DF = 4.303  # Student's t, 95 %, two degrees of freedom: a 3-seed mean's interval


def attainment_by_phase(arrivals, phases: np.ndarray) -> dict[str, np.ndarray]:
    """Each configuration's SLO attainment (and the oracle's) at each phase, on the same noise draw."""
    found = {label: [] for label in ("oracle", *(c[0] for c in CONFIGURATIONS))}
    for phase in phases:
        plant = dataclasses.replace(NOISY, trigger_phase_s=float(phase))
        runs = [("oracle", "oracle", oracle_params(plant), True),
                *((label, controller, params, False) for label, controller, params in CONFIGURATIONS)]
        for label, controller, params, knows in runs:
            result = simulate_configuration(controller, params, arrivals, plant, slo_latency_s=SLO_LATENCY_S,
                                            knows_schedule=knows, noise_seed=0, cost_prior=calibrated_prior(plant))
            found[label].append(result.slo_attainment)
    return {label: np.array(values) for label, values in found.items()}


def spreads(controller: np.ndarray, oracle: np.ndarray) -> tuple[float, float]:
    """(paired, free): the standard deviation of one seed's attainment less the oracle's, at the same phase and at
    independent phases (every pair of phases)."""
    paired = controller - oracle
    free = (controller[:, None] - oracle[None, :]).ravel()
    return float(np.std(paired)), float(np.std(free))


def tables(workloads: tuple[str, ...], phase_count: int) -> tuple[str, list[str]]:
    found, skipped = study_cases(workloads, "studies.trigger_phase", windows=False)
    phases = np.arange(phase_count) * NOISY.trigger_interval_s / phase_count
    labels = ("oracle", *(c[0] for c in CONFIGURATIONS))
    lines = []
    summary = ["| workload | configuration | oracle SLO % over the phases (min-max) | one seed less the oracle, sd: "
               "paired / free (points) | 3-seed mean's 95 % half-width: paired / free (points) |",
               "|---|---|---|---|---|"]
    for name, arrivals in found:
        by_phase = attainment_by_phase(arrivals, phases)
        lines += [f"\n`{name}`: SLO attainment % per trigger phase\n", "| phase s | " + " | ".join(labels) + " |",
                  "|---|" + "---|" * len(labels)]
        lines += [f"| {phase:.3f} | " + " | ".join(f"{100 * by_phase[label][i]:.1f}" for label in labels) + " |"
                  for i, phase in enumerate(phases)]
        oracle = by_phase["oracle"]
        for label in labels[1:]:
            paired, free = spreads(by_phase[label], oracle)
            summary.append(f"| `{name}` | `{label}` | {100 * oracle.min():.1f}-{100 * oracle.max():.1f} | "
                           f"{100 * paired:.1f} / {100 * free:.1f} | {100 * T_95_2DF * paired / np.sqrt(3):.1f} / "
                           f"{100 * T_95_2DF * free / np.sqrt(3):.1f} |")
    return "\n".join(["", *summary, *lines]), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", type=int, default=16, help="evenly spaced phases over the interval (16)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="catalogue workloads (three of the suite's)")
    args = parser.parse_args(argv)
    if args.phases < 2:
        parser.error("--phases must be at least 2")
    text, skipped = tables(tuple(w for w in args.workloads.split(",") if w), args.phases)
    print("\n".join([text, *skipped]))  # a trace not on this machine is said where its table would be
    return 0


if __name__ == "__main__":
    sys.exit(main())
