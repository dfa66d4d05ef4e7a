"""A small deterministic model of the micro-batch job, to drive any controller without Spark.

Why: controllers must be testable in microseconds, and later an oracle must be able to plan against a model of
the job. The model keeps what matters for elasticity in a micro-batch engine and nothing else:

- a batch starts at a trigger and reads every event that is due. Triggers fall on a fixed grid, as Spark's
  ProcessingTimeExecutor puts them on multiples of the interval in wall-clock time: `trigger_phase_s` + k x interval
  on the schedule's clock. A batch that overran its trigger is followed at once by the next, and the one after that
  waits for the next grid point (the grid does not move). On Spark the phase is where the run's time 0 (its anchor)
  falls between two wall-clock multiples: any value, different in every run; a noisy plant run draws it from its
  seed when `trigger_phase_s` is None, so seeds vary where bursts fall against batches, as runs on Spark do;
- operator i processes its input with per-record service time s_i spread over p_i tasks, on at most `slots`
  tasks at a time (so degrees beyond the slots add waves, not speed), plus a fixed per-task overhead;
- operators run one after another, so the batch takes the sum of their spans plus a fixed per-batch overhead;
  an operator runs in its predecessor's stage unless it is keyed or has another degree (the job's operator
  chaining), and each stage beyond the fewest the operators can run in adds `stage_overhead_s`;
- records leave when their batch ends; latency is measured from each event's scheduled arrival;
- a controller that manages executors (one core each) sets the slots: an added executor's slot counts from
  `executor_delay_s` after the decision, a removed one at once; the run's cores held are integrated;
- optionally, noise: given a `noise_seed`, each batch's fixed overhead and each operator's per-task time are
  multiplied by lognormal factors whose spreads (`PlantConfig.batch_overhead_sigma`, `service_sigma`) a calibration
  measures on Spark. Without it the plant is deterministic, and a controller that reacts to Spark's jitter (DS2 reads
  each batch's busy time) looks steadier in the model than on Spark; with it, one configuration gives a
  distribution of runs, as seeds on Spark do.

It takes any arrival schedule with `count_due(t_us)` and `arrival_us(first, stop)` (workloads.Schedule has both),
and produces the same Snapshot type the Spark loop does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from controllers.cost_model import ArrivalSchedule, OperatorModel, extra_stages, operator_timing
from controllers.loop import ControlLoop, DecisionRecord
from controllers.types import OperatorMetrics, Snapshot, arrival_profile
from params.units import US

if TYPE_CHECKING:
    from simulator.key_groups import KeyedPlacement

__all__ = ["ArrivalSchedule", "BatchRecord", "ConstantArrivals", "OperatorModel", "PlantConfig", "PlantRun", "chain",
           "operator_timing", "simulate"]


@dataclass(frozen=True)
class PlantConfig:
    operators: tuple[OperatorModel, ...]
    trigger_interval_s: float = 1.0
    slots: int = 4
    batch_overhead_s: float = 0.05  # with every operator chained as far as it can be (the fewest stages)
    max_degree: int = 8
    # the fixed cost of each stage beyond the fewest (controllers.cost_model.extra_stages); `chaining` as the run's
    stage_overhead_s: float = 0.0
    chaining: bool = True
    # log-scale spreads of the noise (0: none). The overhead's factor has median 1 (the calibration fits the
    # overhead as a median); an operator's factor has mean 1 (its service time is a least-squares mean).
    batch_overhead_sigma: float = 0.0
    service_sigma: Mapping[str, float] = field(default_factory=dict)
    # a controller that manages executors (one core each): an added executor's slot is there this long after the
    # decision (6.4-6.9 s measured on this machine's standalone cluster, docs/multilevel.md); a removed one goes at once
    executor_delay_s: float = 6.5
    # the schedule time of the trigger grid's first point, in [0, trigger_interval_s); None: drawn per noisy run
    # from its seed (0 for a run without noise). A replay of a Spark run sets the run's own (simulator_fidelity).
    trigger_phase_s: float | None = 0.0
    # a batch run at other degrees than the batch before it takes this fraction longer (0: the model as before).
    # On Spark such a batch plans a new shuffle layout and starts tasks it has not run: the fidelity study found the
    # batches just after a degree change 8.5 % longer than the model says where steady ones of the same size were
    # 3.3 % shorter (docs/benchmarks.md), and a burst batch sized for 2.94 s ran 3.19 s (docs/bursty.md)
    change_slowdown: float = 0.0

    def __post_init__(self):
        if self.change_slowdown < 0:
            raise ValueError(f"change_slowdown must be >= 0, got {self.change_slowdown}")
        if self.trigger_phase_s is not None and not 0 <= self.trigger_phase_s < self.trigger_interval_s:
            raise ValueError(f"trigger_phase_s must be in [0, trigger_interval_s = {self.trigger_interval_s}), "
                             f"got {self.trigger_phase_s}")

    @property
    def noisy(self) -> bool:
        return self.batch_overhead_sigma > 0 or any(v > 0 for v in self.service_sigma.values())


class ConstantArrivals:
    """Events at a fixed rate, evenly spaced: the simplest schedule for controller tests."""

    def __init__(self, rate: float, duration_s: float):
        self.rate = rate
        self.total_events = int(rate * duration_s)

    def count_due(self, t_us: int) -> int:
        return max(0, min(self.total_events, int(math.floor(t_us * self.rate / US)) + 1)) if t_us >= 0 else 0

    def arrival_us(self, first: int, stop: int) -> np.ndarray:
        return np.ceil(np.arange(first, stop) * US / self.rate).astype(np.int64)


@dataclass
class BatchRecord:
    snapshot: Snapshot
    start_s: float
    end_s: float
    latencies_s: np.ndarray = field(repr=False)


@dataclass
class PlantRun:
    batches: list[BatchRecord]
    decisions: list[DecisionRecord]
    slot_seconds: float
    executor_core_seconds: float | None = None  # cores held, when the controller manages executors

    def latencies(self) -> np.ndarray:
        return np.concatenate([b.latencies_s for b in self.batches]) if self.batches else np.array([])

    def degrees_at(self, batch_id: int) -> dict[str, int]:
        return self.batches[batch_id].snapshot.degrees


_PHASE_STREAM = 7919  # appended to a run's seed for its phase's generator (any fixed number)


class _Noise:
    """The per-batch factors of one noisy run, drawn from one seeded generator in a fixed order (same seed, same
    run), and its trigger phase, drawn from a generator of its own so that it leaves the factors as they were."""

    def __init__(self, config: PlantConfig, seed: int | Sequence[int] | None):
        self.rng = np.random.default_rng(seed) if seed is not None and config.noisy else None
        if config.trigger_phase_s is not None or self.rng is None:
            self.phase_s = config.trigger_phase_s or 0.0
        else:
            entropy = [seed] if isinstance(seed, (int, np.integer)) else list(seed)
            self.phase_s = float(np.random.default_rng([*entropy, _PHASE_STREAM]).uniform(0, config.trigger_interval_s))
        self.overhead_sigma = config.batch_overhead_sigma
        self.sigmas = [float(config.service_sigma.get(op.name, 0.0)) for op in config.operators]

    def overhead(self) -> float:
        return 1.0 if self.rng is None else float(np.exp(self.overhead_sigma * self.rng.standard_normal()))

    def services(self) -> list[float]:
        if self.rng is None:
            return [1.0] * len(self.sigmas)
        z = self.rng.standard_normal(len(self.sigmas))
        return [float(np.exp(s * zi - s * s / 2)) for s, zi in zip(self.sigmas, z)]


def simulate(config: PlantConfig, arrivals: ArrivalSchedule, loop: ControlLoop, duration_s: float,
             noise_seed: int | Sequence[int] | None = None, keyed: "KeyedPlacement | None" = None) -> PlantRun:
    """Run micro-batches until `duration_s` and every due event is processed, steering with `loop`; with a
    `noise_seed` (and a config with spreads), one seeded noisy run (module docstring); with `keyed`, its operator's
    tasks get the records its key-group table sends them and its placement controller moves groups after each
    batch (simulator/key_groups.py; the arrivals must then have keys: workloads.Schedule)."""
    names = tuple(op.name for op in config.operators)
    if names != loop.controller.operators:
        raise ValueError(f"controller operators {loop.controller.operators} do not match the plant's {names}")
    degrees = dict(loop.degrees)
    previous_degrees = degrees  # the degrees of the batch before (a change costs change_slowdown)
    read = 0
    noise = _Noise(config, noise_seed)
    interval = config.trigger_interval_s
    t = noise.phase_s
    prev_end = 0.0
    batches: list[BatchRecord] = []
    slot_seconds = 0.0
    batch_id = 0
    due_at_prev_end = 0
    executors = loop.executors  # None: not managed, the plant's fixed slots
    coming: list[tuple[float, int]] = []  # (registered at, count) of executors asked for
    core_seconds = 0.0
    idle_s, held_slots, ran_cores = 0.0, 0, 0  # triggers skipped since the last batch; what was held over them
    while True:
        due = arrivals.count_due(int(t * US))
        if t >= duration_s and read >= arrivals.total_events:
            break
        n = due - read
        if n == 0:  # Spark skips a trigger with no new data
            idle_to = _next_trigger(t, noise.phase_s, interval)
            idle_s += idle_to - t
            t = idle_to
            continue
        # the triggers skipped for want of data are charged at the vector decided after the last batch, as a Spark
        # run is (jobs/recording/run_record.py: idle_after_s): that is what the controller held through them
        slot_seconds += held_slots * idle_s
        core_seconds += ran_cores * idle_s
        idle_s = 0.0
        # a controller may resize the batch now that it knows what the batch reads (guards' burst sizing)
        if executors is not None:
            executors = max([executors] + [c for at, c in coming if at <= t])
            coming = [(at, c) for at, c in coming if at > t]
        slots = config.slots if executors is None else executors
        arrived_s = arrivals.arrival_us(read, due) / US  # the batch's events: the oldest one's wait, then latencies
        degrees = loop.at_batch_start(batch_id - 1, t, n, t - arrived_s[0],
                                      arrival_profile(lambda s: arrivals.count_due(int(s * US)), prev_end, t))
        records = n
        ops = []
        span_total = 0.0
        if keyed is not None:
            keyed.batch_started(degrees[keyed.operator])
        for op, factor in zip(config.operators, noise.services()):
            if keyed is not None and op.name == keyed.operator:
                span, busy = keyed.timing(op, arrivals.keys(read, due), records, slots, factor, t,
                                          t - prev_end)
            else:
                span, busy = operator_timing(op, records, degrees[op.name], slots)
                span, busy = span * factor, busy * factor
            out = int(round(records * op.selectivity))
            ops.append(OperatorMetrics(op.name, degrees[op.name], records, out, busy, degrees[op.name],
                                       busy / degrees[op.name], span))
            span_total += span
            records = out
        fixed = config.batch_overhead_s
        if config.stage_overhead_s:  # counted only where it costs something: this runs for every simulated batch
            fixed += config.stage_overhead_s * extra_stages(config.operators, degrees, config.chaining)
        duration = fixed * noise.overhead() + span_total
        if config.change_slowdown:  # only where it is charged: this runs for every simulated batch
            if batch_id > 0 and degrees != previous_degrees:
                duration *= 1.0 + config.change_slowdown
            previous_degrees = dict(degrees)
        end = t + duration
        latencies = end - arrived_s
        read = due
        due_at_end = arrivals.count_due(int(end * US))
        snapshot = Snapshot(
            batch_id=batch_id,
            time_s=end,
            trigger_interval_s=config.trigger_interval_s,
            batch_duration_s=duration,
            interval_s=end - prev_end,
            arrivals=due_at_end - due_at_prev_end,
            records_read=n,
            backlog=due_at_end - read,
            latency_p50_s=float(np.percentile(latencies, 50)),
            latency_p95_s=float(np.percentile(latencies, 95)),
            latency_p99_s=float(np.percentile(latencies, 99)),
            operators=tuple(ops),
            max_degree=config.max_degree,
            executors=executors,
            slots=None if executors is None else slots,
            arrival_profile=arrival_profile(lambda s: arrivals.count_due(int(s * US)), prev_end, end),
        )
        batches.append(BatchRecord(snapshot, t, end, latencies))
        next_start = max(end, _next_trigger(t, noise.phase_s, interval))
        slot_seconds += sum(degrees.values()) * (next_start - t)
        core_seconds += (executors or 0) * (next_start - t)
        ran_cores = executors or 0
        degrees = loop.step(snapshot)
        held_slots = sum(degrees.values())
        if executors is not None and loop.executors is not None:
            target = loop.executors
            if target > executors:
                coming = [(at, c) for at, c in coming if c <= target] + [(end + config.executor_delay_s, target)]
            elif target < executors:
                executors, coming = target, []
        if keyed is not None:
            keyed.decide(end, end - prev_end)
        prev_end, due_at_prev_end = end, due_at_end
        t = next_start
        batch_id += 1
    return PlantRun(batches, loop.log, slot_seconds, None if loop.executors is None else core_seconds)


def _next_trigger(t: float, phase_s: float, interval: float) -> float:
    """The first grid point after `t` (Spark's nextBatchTime); a start on the grid gives the next one."""
    k = math.floor((t - phase_s) / interval + 1e-9) + 1
    return phase_s + k * interval


def chain(specs: Sequence[tuple[str, float]], **kwargs) -> PlantConfig:
    """Shorthand for a linear topology: [(name, service_s), ...]."""
    return PlantConfig(operators=tuple(OperatorModel(n, s) for n, s in specs), **kwargs)
