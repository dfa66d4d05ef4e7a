"""What a controller sees (Snapshot) and what it answers (Decision).

These types are the whole contract between decision logic and whatever runs it — the Spark control loop, the
plant model in tests, a simulator. A controller that only reads a Snapshot and returns a Decision cannot tell
them apart, which is what lets the same controller be unit-tested in microseconds and run on a cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

# width of the bins an arrival profile counts events in: fine enough to tell a one-second burst from a steady load
# within a two-second trigger, coarse enough to cost a handful of numbers per batch (the project's choice)
ARRIVAL_BIN_S = 0.25


def arrival_profile(count_due: Callable[[float], int], start_s: float, end_s: float,
                    bin_s: float = ARRIVAL_BIN_S) -> tuple[int, ...]:
    """Events that became due in consecutive `bin_s` bins from start_s to end_s (the last bin ends at end_s and may be
    shorter), from `count_due(t)`, the events due by run time t: what a source knows of when its records arrived
    (a Kafka record's timestamp), the same that the run's latencies are measured from."""
    if end_s <= start_s:
        return ()
    edges = [start_s]
    while edges[-1] + bin_s < end_s - 1e-9:
        edges.append(edges[-1] + bin_s)
    edges.append(end_s)
    due = [count_due(t) for t in edges]
    return tuple(int(b - a) for a, b in zip(due[:-1], due[1:]))


def vector_text(degrees: Mapping[str, int]) -> str:
    """A degree vector as `op=p,op=p` (decisions, ledgers, reasons)."""
    return ",".join(f"{op}={d}" for op, d in degrees.items())


@dataclass(frozen=True)
class OperatorMetrics:
    """One operator's work in one micro-batch.

    busy_s is the sum of its tasks' run times (what the operator cost, independent of how many ran at once);
    span_s is the wall time from its first task's start to its last task's end (what it added to the batch).
    """

    name: str
    degree: int
    records_in: int
    records_out: int
    busy_s: float
    tasks: int
    max_task_s: float
    span_s: float

    @property
    def service_s_per_record(self) -> float | None:
        """Mean busy time per input record, excluding queueing: the operator's own cost."""
        return self.busy_s / self.records_in if self.records_in else None

    @property
    def selectivity(self) -> float | None:
        return self.records_out / self.records_in if self.records_in else None


@dataclass(frozen=True)
class Snapshot:
    """What the loop observed after micro-batch `batch_id`.

    arrivals: events that became due since the previous snapshot (the offered load, not what was admitted);
    records_read: events the batch read; backlog: events due but not yet read when the batch finished;
    arrival_profile: the arrivals by when they became due, in ARRIVAL_BIN_S bins from time_s - interval_s
    (`arrival_profile`); None when the source does not say.
    """

    batch_id: int
    time_s: float
    trigger_interval_s: float
    batch_duration_s: float
    interval_s: float
    arrivals: int
    records_read: int
    backlog: int
    latency_p50_s: float | None
    latency_p95_s: float | None
    latency_p99_s: float | None
    operators: tuple[OperatorMetrics, ...]
    max_degree: int
    executors: int | None = None
    cpu_percent: float | None = None  # percent of one core, summed over the job's processes on this host
    memory_mb: float | None = None
    cpu_cores: int | None = None  # the host's cores, to read cpu_percent as a share of the machine
    slots: int | None = None  # task slots registered at this batch (executor cores on a cluster); None: not known
    arrival_profile: tuple[int, ...] | None = None

    @property
    def degrees(self) -> dict[str, int]:
        return {op.name: op.degree for op in self.operators}

    def operator(self, name: str) -> OperatorMetrics:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)


@dataclass(frozen=True)
class Decision:
    """Per-operator degrees for the next batch (and optionally an executor count), with the reason in words.

    A reason is required because every decision is logged: a user reading the decision log should see why the
    controller acted without re-deriving it from the metrics.
    """

    degrees: Mapping[str, int]
    reason: str
    executors: int | None = None
    details: Mapping[str, float] = field(default_factory=dict)

    def changes(self, current: Mapping[str, int]) -> dict[str, tuple[int, int]]:
        return {op: (current[op], d) for op, d in self.degrees.items() if current.get(op) != d}


@dataclass(frozen=True)
class RunContext:
    """What a run tells its controller besides the configuration, once, before the first batch (Controller.bind).

    schedule: the workload's arrivals (count_due / arrival_us, µs since the anchor) — only the oracle may plan
    with it, and it is what makes the oracle an oracle; predictor: a load predictor loaded from the MLflow registry
    for controllers that forecast (None: the controller's own), with a warning when it fell back; slots: the task
    slots the run has (executor cores; local[N]: N), 0 when the job cannot tell before it starts (a cluster master);
    capacity_table: the multi-level benchmark's table the run loaded for the `multilevel` controller;
    duration_s: how long the run lasts when it is bounded (a replayed workload, whose SLO attainment is judged over
    it), 0 when it is not (a stream that runs until stopped). Not the load: the horizon an error budget is spent over.
cost_prior: the job's per-record and per-batch costs as the run's calibration measured them, when there is one for
its master and topology (None: the controllers learn them from the first batches, as before).
    """

    trigger_s: float
    slo_latency_s: float
    slo_target: float = 0.95
    max_degree: int = 8
    schedule: Any = None
    predictor: Any = None
    predictor_warning: str = ""
    slots: int = 0
    capacity_table: Any = None  # controllers.multilevel.CapacityTable the run resolved for `multilevel`
    duration_s: float = 0.0
    cost_prior: Any = None  # controllers.cost_model.CostPrior: the calibrated costs, before any batch is observed
