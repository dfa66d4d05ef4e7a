"""How few scaling actions can any controller take on a bursty trace, and at what cost? A lower bound, in the plant.

    python -m studies.action_budget                       # the study's plant (studies.guards_simulated), ~1 min
    python -m studies.action_budget --calibration RUN_ID  # the plant of a calibration (jobs.calibrate)
    python -m studies.action_budget --seeds 1,2,3         # the catalogue's seeds move keys, which the plant ignores

The bursty suite's goals (docs/bursty.md) ask two things of DS2 with guards on real bursty load: cost at most 1.6x the
oracle's, and at least 50 % fewer scaling actions than DS2 without guards. Measured, the guarded DS2 meets the first
and takes more actions, not fewer (docs/bursty.md). This study asks whether *any* controller could meet both while
holding the SLO, by bounding from below the cost of every run that changes its degree vector at most k times.

The relaxation (each step only makes the bound lower, so the bound is valid for every controller):

- batches start on the trigger grid and each reads exactly the events due since the previous trigger, with no
  backlog (a backlog, or a batch that overran its trigger, only delays events further);
- a run with at most k actions holds at most k + 1 degree vectors, each over a contiguous stretch of batches, and the
  first vector is free (a controller could start on it without an action);
- an event is on time when its batch, run alone at its stretch's vector on the plant's costs, ends within the SLO
  latency of the event's arrival; cost is Σ degrees × trigger interval per non-empty batch (the plant's measure, with
  overruns not charged);
- degrees range over 1..min(slots, max degree): a degree beyond the task slots adds a wave and is never faster.

An exact dynamic programme over (stretches, end batch, cost) then gives, for every k, the least cost at which at
least a target number of events is on time. The target is the goals' own standard: the oracle's SLO attainment on
the same plant and workload, less 5 points. The same relaxation without a limit on actions is printed as a check:
it must not exceed the oracle's cost (it is a lower bound on the oracle too).

Rows: the bursty suite's Google 10x, Alibaba and Google real-time workloads (catalogue `bursty-*`, 180 s, mean 2,000
ev/s), skipped with the reason when ../shared/traces is absent; seed 1 (a trace workload's seed moves its keys and
nothing the plant models: seeds 1-3 give the same figures). For each, the plant's oracle, DS2 without guards and
with the default guards (actions, SLO attainment, cost), the actions the goal allows (half of DS2 without guards),
the bound on cost at that many actions as a multiple of the oracle's, and the cheapest static vector that reaches
the target on the plant itself (no relaxation: zero actions, so an achievable cost at every k). Then the guard
settings that trade cost for fewer actions (`stabilisation_s`, `settle`) on the same plant.
"""
from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import dataclass

import numpy as np

from analysis.stats import bootstrap_mean
from controllers.cost_model import extra_stages, operator_timing
from params.units import US
from simulator.evaluate import simulate_configuration
from simulator.plant import PlantConfig
from studies.guards_simulated import PLANT, run_oracle, run_once
from workloads import Schedule, WorkloadError, load_workload, parse_workload

SLO_LATENCY_S = 5.0
SLO_SLACK = 0.05  # the goals' "within 5 points of the oracle's"
WORKLOADS = ("bursty-google-tasks", "bursty-alibaba-batch", "bursty-google-tasks-1s")
MAX_ACTIONS = 8
# guard settings for an engine where a change restarts the job: fewer actions, paid in held slots
FEW_ACTIONS = (("ds2", {}), ("ds2", {"stabilisation_s": 60}), ("threshold", {}), ("threshold", {"stabilisation_s": 60}),
               ("settle", {}))


@dataclass(frozen=True)
class Batches:
    """The trigger grid's batches of one workload: the events each reads (a range of the sorted arrivals)."""

    arrivals_s: np.ndarray  # every event's arrival, seconds, sorted
    start_s: np.ndarray  # batch b starts at trigger b
    first: np.ndarray  # batch b reads events [first[b], stop[b])
    stop: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return self.stop - self.first

    @property
    def total_events(self) -> int:
        return int(self.arrivals_s.size)


def trigger_batches(schedule: Schedule, trigger_s: float) -> Batches:
    arrivals = np.asarray(schedule.arrival_us(0, schedule.total_events), dtype=np.float64) / US
    n_triggers = int(math.ceil(arrivals[-1] / trigger_s)) + 1 if arrivals.size else 1
    starts = np.arange(n_triggers) * trigger_s
    due = np.array([schedule.count_due(int(round(t * US))) for t in starts])
    first = np.concatenate(([0], due[:-1]))
    return Batches(arrivals, starts, first, due)


def degree_vectors(plant: PlantConfig) -> np.ndarray:
    top = max(1, min(plant.slots, plant.max_degree))
    return np.array(list(itertools.product(range(1, top + 1), repeat=len(plant.operators))), dtype=np.int64)


def batch_seconds(plant: PlantConfig, vector: np.ndarray, records: np.ndarray) -> np.ndarray:
    """Each batch's duration at one degree vector, by the plant's own arithmetic (controllers.cost_model)."""
    degrees = {op.name: int(d) for op, d in zip(plant.operators, vector)}
    fixed = plant.batch_overhead_s + plant.stage_overhead_s * extra_stages(plant.operators, degrees, plant.chaining)

    def one(n: int) -> float:
        total = fixed
        for op in plant.operators:
            total += operator_timing(op, n, degrees[op.name], plant.slots)[0]
            n = int(round(n * op.selectivity))
        return total

    return np.array([one(int(n)) for n in records], dtype=float)


def on_time_table(plant: PlantConfig, batches: Batches, vectors: np.ndarray, slo_latency_s: float) -> np.ndarray:
    """(vectors, batches): events of each batch on time when it runs alone at each vector."""
    table = np.zeros((len(vectors), batches.sizes.size), dtype=np.int64)
    for row, vector in enumerate(vectors):
        ends = batches.start_s + batch_seconds(plant, vector, batches.sizes)
        earliest_on_time = np.searchsorted(batches.arrivals_s, ends - slo_latency_s, side="left")
        table[row] = batches.stop - np.clip(earliest_on_time, batches.first, batches.stop)
    return table


def stretch_best(table: np.ndarray, slots_held: np.ndarray) -> dict[int, np.ndarray]:
    """For each total degree s: best[s][i, j] = the most events on time over batches [i, j) at one vector of total
    degree s (-1 where i >= j)."""
    n = table.shape[1]
    best = {}
    for s in np.unique(slots_held):
        prefix = np.concatenate([np.zeros((int((slots_held == s).sum()), 1), dtype=np.int64),
                                 np.cumsum(table[slots_held == s], axis=1)], axis=1)
        gain = (prefix[:, None, :] - prefix[:, :, None]).max(axis=0)  # [i, j] = prefix[j] - prefix[i]
        gain[np.tril_indices(n + 1)] = -1
        best[int(s)] = gain
    return best


def least_cost_by_actions(table: np.ndarray, slots_held: np.ndarray, non_empty: np.ndarray, target: int,
                          max_actions: int) -> list[float | None]:
    """For k = 0..max_actions: the least cost (Σ degrees per non-empty batch, in trigger intervals) of covering every
    batch with at most k + 1 stretches of constant vectors, with at least `target` events on time (None: none does)."""
    best = stretch_best(table, slots_held)
    n = table.shape[1]
    held = np.concatenate(([0], np.cumsum(non_empty)))  # non-empty batches before j
    top = int(slots_held.max()) * int(held[-1])
    impossible = np.iinfo(np.int64).min // 4
    layer = np.full((n + 1, top + 1), impossible, dtype=np.int64)
    layer[0, 0] = 0
    found: list[float | None] = []
    reach = np.full(top + 1, impossible, dtype=np.int64)
    for _ in range(max_actions + 1):
        nxt = np.full_like(layer, impossible)
        for i in range(n):
            if layer[i].max() < 0:
                continue
            for s, gain in best.items():
                for j in range(i + 1, n + 1):
                    shift = s * int(held[j] - held[i])
                    candidate = layer[i, :top + 1 - shift] + gain[i, j]
                    np.maximum(nxt[j, shift:], candidate, out=nxt[j, shift:])
        layer = nxt
        reach = np.maximum(reach, layer[n])
        ok = np.nonzero(reach >= target)[0]
        found.append(float(ok[0]) if ok.size else None)
    return found


def least_cost_unlimited(table: np.ndarray, slots_held: np.ndarray, non_empty: np.ndarray, target: int) -> float | None:
    """The same relaxation with any number of actions: each batch takes its own vector."""
    top = int(slots_held.max()) * int(non_empty.sum())
    impossible = np.iinfo(np.int64).min // 4
    reach = np.full(top + 1, impossible, dtype=np.int64)
    reach[0] = 0
    for b in range(table.shape[1]):
        nxt = np.full_like(reach, impossible)
        for s in np.unique(slots_held):
            shift = int(s) * int(non_empty[b])
            gain = int(table[slots_held == s, b].max())
            np.maximum(nxt[shift:], reach[:top + 1 - shift] + gain, out=nxt[shift:])
        reach = nxt
    ok = np.nonzero(reach >= target)[0]
    return float(ok[0]) if ok.size else None


@dataclass(frozen=True)
class Bound:
    workload: str
    seed: int
    oracle: tuple[int, float, float]  # actions, SLO attainment, cost slot-s
    ds2_off: tuple[int, float, float]
    ds2_on: tuple[int, float, float]
    target_attainment: float
    unlimited_slot_s: float | None
    by_actions_slot_s: list[float | None]  # k = 0..
    static: tuple[str, float, float] | None  # the cheapest static vector reaching the target on the plant itself

    @property
    def allowed_actions(self) -> int:
        return self.ds2_off[0] // 2

    def ratio(self, cost: float | None) -> float:
        return math.inf if cost is None else cost / self.oracle[2]


def cheapest_static(schedule: Schedule, plant: PlantConfig, vectors: np.ndarray, target_attainment: float,
                    slo_latency_s: float = SLO_LATENCY_S) -> tuple[str, float, float] | None:
    """(vector, SLO attainment, cost) of the cheapest static run on the plant itself (no relaxation) that reaches the
    target: a run with no action at all, so an upper bound on the least cost at every k."""
    names = [op.name for op in plant.operators]
    best = None
    for vector in vectors.tolist():
        run = simulate_configuration("static", {"degrees": dict(zip(names, vector))}, schedule, plant,
                                     slo_latency_s=slo_latency_s)
        if run.slo_attainment >= target_attainment and (best is None or run.cost_slot_seconds < best[2]):
            best = (",".join(f"{n}={d}" for n, d in zip(names, vector)), run.slo_attainment, run.cost_slot_seconds)
    return best


def bound(workload: str, seed: int, plant: PlantConfig, max_actions: int = MAX_ACTIONS) -> Bound:
    spec = {**load_workload(workload).to_dict(), "seed": seed}
    schedule = Schedule(parse_workload(spec, source=f"studies.action_budget:{workload}"))
    oracle = run_oracle(schedule, plant)
    ds2_off = run_once("ds2", False, schedule, plant=plant)
    ds2_on = run_once("ds2", True, schedule, plant=plant)
    batches = trigger_batches(schedule, plant.trigger_interval_s)
    vectors = degree_vectors(plant)
    table = on_time_table(plant, batches, vectors, SLO_LATENCY_S)
    slots_held = vectors.sum(axis=1)
    non_empty = (batches.sizes > 0).astype(np.int64)
    target_attainment = max(0.0, oracle.slo_attainment - SLO_SLACK)
    target = int(math.ceil(target_attainment * batches.total_events))
    unit = plant.trigger_interval_s
    unlimited = least_cost_unlimited(table, slots_held, non_empty, target)
    limited = least_cost_by_actions(table, slots_held, non_empty, target, max_actions)
    return Bound(workload, seed, (oracle.actions, oracle.slo_attainment, oracle.cost_slot_s),
                 (ds2_off.actions, ds2_off.slo_attainment, ds2_off.cost_slot_s),
                 (ds2_on.actions, ds2_on.slo_attainment, ds2_on.cost_slot_s), target_attainment,
                 None if unlimited is None else unlimited * unit, [None if c is None else c * unit for c in limited],
                 cheapest_static(schedule, plant, vectors, target_attainment))


def few_actions(workloads: list[str], seed: int, plant: PlantConfig) -> str:
    """The guard settings that trade cost for fewer actions, on the same plant: actions, SLO, cost ÷ the oracle."""
    lines = ["| workload | configuration | scaling actions | SLO attainment % | cost ÷ oracle |",
             "|---|---|---|---|---|"]
    for workload in workloads:
        schedule = Schedule(parse_workload({**load_workload(workload).to_dict(), "seed": seed},
                                           source=f"studies.action_budget:{workload}"))
        oracle = run_oracle(schedule, plant)
        for controller, params in FEW_ACTIONS:
            run = run_once(controller, True, schedule, params, plant=plant)
            settings = ",".join(f"{k}={v}" for k, v in params.items())
            label = f"{controller}:{settings}" if settings else f"{controller} (defaults)"
            lines.append(f"| {workload} | `{label}` | {run.actions} | {100 * run.slo_attainment:.1f} | "
                         f"{run.cost_slot_s / oracle.cost_slot_s:.2f} |")
    return "\n".join(lines)


def _run(values: tuple[int, float, float]) -> str:
    actions, attainment, cost = values
    return f"{actions} / {100 * attainment:.1f} % / {cost:.0f}"


def _ratio(value: float) -> str:
    return "none" if math.isinf(value) else f"{value:.2f}"


def report(bounds: list[Bound], max_actions: int) -> str:
    lines = ["| workload | seed | oracle: actions / SLO / slot-s | DS2 off | DS2 guarded | SLO target | "
             "bound, any actions ÷ oracle | actions the goal allows | bound at those ÷ oracle | "
             "cheapest static run (0 actions) reaching the target: vector / SLO / ÷ oracle |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for b in bounds:
        k = b.allowed_actions
        lines.append(f"| {b.workload} | {b.seed} | {_run(b.oracle)} | {_run(b.ds2_off)} | {_run(b.ds2_on)} | "
                     f"{100 * b.target_attainment:.1f} % | {_ratio(b.ratio(b.unlimited_slot_s))} | {k} | "
                     f"{_ratio(b.ratio(b.by_actions_slot_s[min(k, max_actions)]))} | "
                     + ("none" if b.static is None else
                        f"{b.static[0]} / {100 * b.static[1]:.1f} % / {b.ratio(b.static[2]):.2f}") + " |")
    lines += ["", "The bound: no run with at most k actions keeps the SLO target for less than this multiple of "
              "the oracle's cost (mean [95 % bootstrap interval] over seeds when several; 'none': no run with so few "
              "actions reaches the target):", "",
              "| workload | " + " | ".join(f"k={k}" for k in range(max_actions + 1)) + " |",
              "|---|" + "---|" * (max_actions + 1)]
    for workload in dict.fromkeys(b.workload for b in bounds):
        cells = []
        for k in range(max_actions + 1):
            ratios = [b.ratio(b.by_actions_slot_s[k]) for b in bounds if b.workload == workload]
            if any(math.isinf(r) for r in ratios):
                cells.append(f"none on {sum(math.isinf(r) for r in ratios)} of {len(ratios)}")
            elif len(ratios) == 1:
                cells.append(f"{ratios[0]:.2f}")
            else:
                iv = bootstrap_mean(ratios)
                cells.append(f"{iv.mean:.2f} [{iv.low:.2f}, {iv.high:.2f}]")
        lines.append(f"| {workload} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1", help="comma-separated seeds (1)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="catalogue workloads (the bursty suite's)")
    parser.add_argument("--calibration", help="a calibration file or MLflow run id: its plant instead of the study's")
    parser.add_argument("--tracking-uri", help="where the calibration run is (with --calibration RUN_ID)")
    parser.add_argument("--max-actions", type=int, default=MAX_ACTIONS)
    args = parser.parse_args(argv)
    plant = PLANT
    if args.calibration:
        from analysis.tuning.calibrations import load_calibration
        plant = load_calibration(args.calibration, args.tracking_uri).plant(
            [op.name for op in PLANT.operators], PLANT.trigger_interval_s, PLANT.max_degree)
    bounds, skipped = [], []
    for workload in args.workloads.split(","):
        try:
            for seed in (int(s) for s in args.seeds.split(",")):
                bounds.append(bound(workload, seed, plant, args.max_actions))
        except WorkloadError as exc:
            skipped.append(f"{workload}: skipped ({exc})")
    print(f"Plant: {', '.join(op.name for op in plant.operators)}; trigger {plant.trigger_interval_s:g} s, "
          f"{plant.slots} slots, batch overhead {plant.batch_overhead_s:.3f} s; SLO latency {SLO_LATENCY_S:g} s; "
          f"target = the oracle's SLO attainment less {100 * SLO_SLACK:.0f} points.\n")
    print(report(bounds, args.max_actions))
    workloads = list(dict.fromkeys(b.workload for b in bounds))
    if workloads:
        print("\nGuard settings for fewer actions (seed 1):\n")
        print(few_actions(workloads, bounds[0].seed, plant))
    for line in skipped:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
