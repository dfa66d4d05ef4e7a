"""A margin for the batch burst sizing raises: `burst_headroom`, in the noisy plant with Spark's slower batch after a
degree change (no Spark).

    python -m studies.burst_headroom                  # the markdown tables, ~4 min on 2 cores
    python -m studies.burst_headroom --noise-seeds 5

Why: burst sizing fits the batch that reads a burst into its budget exactly, and that batch always runs at changed
degrees; on Spark such a batch runs longer than the costs of the batch before predict (a burst batch predicted at
2.94 s of a 2.95 s budget ran 3.19 s; the fidelity study: batches after a change 8.5 % longer than the plant model,
steady ones 3.3 % shorter, so 8.5-13 % against a steady batch). The plant charges that as `change_slowdown`
(simulator/plant.py); this study asks which headroom, if any, buys back the SLO it costs, and at what price.

Cases: those of studies.settle_actions (the guard study's Google, Alibaba and random-peak windows at three seeds, the
bursty suite's five workloads and the nightly suite's two, each trace skipped with the reason where ../shared/traces
is absent), on the study's noisy plant (studies.burst_wait_budget.NOISY) with change_slowdown 0 (the plant as
before: what a margin costs where none is needed), 0.085 and 0.13 (the two readings of the Spark measurements).
Per plant and controller (DS2 and threshold, default guards): per headroom, the mean over the cases (each counts once)
of SLO points and cost against headroom 0 on the same noisy runs, with 95 % bootstrap intervals; the oracle's cost on
the same runs as the reference. The headroom is not chosen per trace: one value must hold on every case.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache

import numpy as np

from studies.burst_wait_budget import NOISY
from studies.guards_simulated import interval_cell, oracle_params, study_cases
from studies.settle_actions import CATALOGUE, measure

SLOWDOWNS = (0.0, 0.085, 0.13)
HEADROOMS = (0.0, 0.05, 0.10, 0.15)
CONTROLLERS = ("ds2", "threshold")


@lru_cache(maxsize=1)
def _schedules() -> dict:
    """The cases' schedules, built once per process (a trace is read and resampled for each)."""
    return dict(study_cases(CATALOGUE, "studies.burst_headroom")[0])


def _case(args: tuple[str, float, int]) -> dict[tuple[str, float], tuple[float, float, float]]:
    """One case on one plant: (controller, headroom) -> (mean actions, mean SLO attainment, mean cost ÷ the oracle's)
    over the noisy runs; ("oracle", 0) -> the oracle's own (actions, SLO, slot-seconds)."""
    name, slowdown, noise_seeds = args
    arrivals = _schedules()[name]
    plant = dataclasses.replace(NOISY, change_slowdown=slowdown)

    out = {("oracle", 0.0): measure("oracle", oracle_params(plant), arrivals, noise_seeds, knows=True, plant=plant)}
    for controller in CONTROLLERS:
        for headroom in HEADROOMS:
            actions, slo, cost = measure(controller, {"burst_headroom": headroom}, arrivals, noise_seeds, plant=plant)
            out[(controller, headroom)] = (actions, slo, cost / out[("oracle", 0.0)][2])
    return out


def tables(noise_seeds: int, workers: int, slowdowns: tuple[float, ...] = SLOWDOWNS) -> tuple[str, list[str]]:
    found, skipped = study_cases(CATALOGUE, "studies.burst_headroom")
    names = [name for name, _ in found]
    jobs = [(name, slowdown, noise_seeds) for slowdown in slowdowns for name in names]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_case, jobs))
    by_plant = {slowdown: results[i * len(names):(i + 1) * len(names)] for i, slowdown in enumerate(slowdowns)}
    lines = []
    for slowdown, cases in by_plant.items():
        lines += [f"### change_slowdown {slowdown:g} ({len(cases)} cases, {noise_seeds} noisy runs each)", "",
                  "| controller | headroom | SLO % (mean) | SLO points − headroom 0 | cost ÷ oracle (mean) | "
                  "cost ÷ headroom 0 | actions (mean) | cases losing > 1 point to headroom 0 |",
                  "|---|---|---|---|---|---|---|---|"]
        for controller in CONTROLLERS:
            for headroom in HEADROOMS:
                rows = [(c[(controller, headroom)], c[(controller, 0.0)]) for c in cases]
                slo = [100 * r[1] for r, _ in rows]
                points = [100 * (r[1] - base[1]) for r, base in rows]
                ratio = [r[2] for r, _ in rows]
                cost_vs = [r[2] / base[2] for r, base in rows]
                worse = sum(p < -1.0 for p in points)
                lines.append(f"| {controller} | {headroom:.2f} | {np.mean(slo):.1f} | "
                             f"{interval_cell(points, '+.2f')} | {np.mean(ratio):.2f} | "
                             f"{interval_cell(cost_vs, '.3f')} | {np.mean([r[0] for r, _ in rows]):.1f} | {worse} |")
        lines.append("")
        lines += ["Per case, DS2 (SLO % at headroom 0 → 0.10; cost ÷ oracle 0 → 0.10; the oracle's SLO %):", "",
                  "| case | oracle SLO % | SLO % | cost ÷ oracle |", "|---|---|---|---|"]
        for name, c in zip(names, cases):
            (_, s0, r0), (_, s1, r1) = c[("ds2", 0.0)], c[("ds2", 0.10)]
            lines.append(f"| {name} | {100 * c[('oracle', 0.0)][1]:.1f} | {100 * s0:.1f} → {100 * s1:.1f} | "
                         f"{r0:.2f} → {r1:.2f} |")
        lines.append("")
    return "\n".join(lines), skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.burst_headroom", description=__doc__.split("\n")[0])
    parser.add_argument("--noise-seeds", type=int, default=3, help="noisy plant runs per case and setting (3)")
    parser.add_argument("--workers", type=int, default=2, help="processes (2: this machine's cores)")
    parser.add_argument("--slowdowns", type=lambda text: tuple(float(x) for x in text.split(",")), default=SLOWDOWNS,
                        help="the plant's change_slowdown values, comma-separated (0,0.085,0.13; jobs.calibrate "
                             "measures this machine's)")
    args = parser.parse_args(argv)
    text, skipped = tables(args.noise_seeds, args.workers, args.slowdowns)
    print(text)
    for line in skipped:
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
