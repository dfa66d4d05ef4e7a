"""The micro-batch cost model: how long an operator takes on a batch, given its degree and the task slots.

Pure arithmetic shared by the oracle (which plans against it) and the simulator (which runs a whole job on it):
operator i spreads its records over p_i tasks, in waves of `slots`; each task pays a fixed overhead (busy time), and
the stage pays a launch time for every task after its first that no task's busy time shows: the scheduler hands
tasks out one after another, so a stage of 8 tiny tasks takes about 7 launches longer than its work (measured by
jobs.calibrate's degree sweep: about 20 ms per task in local mode; a calibration at one degree cannot see it and
leaves it at 0).

Stages: the job runs an operator in its predecessor's tasks when it needs no shuffle (not keyed, same degree:
`stage_groups`, Flink's operator chaining, jobs.operators.chains), and each stage beyond that costs a fixed time of
its own (task launch, a Python worker's hand-over, an Arrow round trip: about 0.1 s per batch on 2 cores,
docs/benchmarks.md). The batch's fixed overhead is that of the fewest stages (every operator at one degree, as a
calibration's chained batches run); `extra_stages` counts the stages a degree vector adds to it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence


# Stage times are sums and ratios of measured floats: a vector that fits a budget exactly can come out a few ulps
# over it (a speed-up of 0.9999999999999998 from summed busy and wall times), and a task more would be bought for
# nothing. Comparisons against a budget allow this relative slack.
BUDGET_SLACK = 1e-9


def within_budget(seconds: float, budget_s: float) -> bool:
    """`seconds` <= `budget_s`, up to float rounding (BUDGET_SLACK, relative)."""
    return seconds <= budget_s + BUDGET_SLACK * abs(budget_s)


class ArrivalSchedule(Protocol):
    """A workload's arrivals (workloads.Schedule has these): times in µs since the run's anchor."""

    total_events: int

    def count_due(self, t_us: int) -> int: ...

    def arrival_us(self, first: int, stop: int) -> Any: ...


@dataclass(frozen=True)
class OperatorModel:
    name: str
    service_s: float  # busy seconds per input record
    selectivity: float = 1.0
    task_overhead_s: float = 0.002
    task_launch_s: float = 0.0  # stage wall time per task outside any task's busy time
    keyed: bool = False  # its input is shuffled by key: it always starts a stage of its own


def calibrated_models(params: Mapping[str, Any], operators: Sequence[str]) -> tuple[OperatorModel, ...]:
    """The operators' models from the parameters `python -m jobs.calibrate` writes (the oracle's: service_s per
    operator, and selectivity, task_overhead_s, task_launch_s, keyed where given), in `operators`' order."""
    selectivity, keyed = params.get("selectivity") or {}, params.get("keyed") or {}
    return tuple(OperatorModel(op, float(params["service_s"][op]), float(selectivity.get(op, 1.0)),
                               float(params.get("task_overhead_s", 0.0)), float(params.get("task_launch_s", 0.0)),
                               bool(keyed.get(op))) for op in operators)


def operator_timing(op: OperatorModel, records: int, degree: int, slots: int) -> tuple[float, float]:
    """(span_s, busy_s) of one operator for one batch."""
    per_task = records * op.service_s / degree + op.task_overhead_s
    waves = math.ceil(degree / slots)
    return waves * per_task + (degree - 1) * op.task_launch_s, degree * per_task


def joins_predecessor(keyed: bool, degree: int, predecessor_degree: int, chaining: bool = True) -> bool:
    """Whether an operator (not the first) runs in its predecessor's stage: chaining is on, it is not keyed and it has
    its predecessor's degree (the repartition before it would only move records between the same number of tasks)."""
    return chaining and not keyed and degree == predecessor_degree


def stage_groups(keyed: Sequence[bool], degrees: Sequence[int], chaining: bool = True) -> list[list[int]]:
    """The operators (by position) grouped into the stages they run in (`joins_predecessor`)."""
    groups: list[list[int]] = []
    for i, (is_keyed, degree) in enumerate(zip(keyed, degrees)):
        if groups and joins_predecessor(is_keyed, degree, degrees[i - 1], chaining):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def extra_stages(operators: Sequence[OperatorModel], degrees: Mapping[str, int], chaining: bool = True) -> int:
    """The stages a degree vector runs beyond the fewest its operators can run in (all at one degree, chained)."""
    keyed = [op.keyed for op in operators]
    fewest = len(stage_groups(keyed, [1] * len(operators), chaining))
    return len(stage_groups(keyed, [degrees[op.name] for op in operators], chaining)) - fewest


@dataclass(frozen=True)
class CostPrior:
    """The job's costs as a calibration measured them (`python -m jobs.calibrate`), for controllers that size a batch
    before they have observed one. Not the load: only what the operators cost per record and what a batch costs on
    its own, which the run's first measured batch tells a controller anyway — one batch too late when the run opens
    on a burst. `source` says where the numbers come from (recorded with the decisions that use them)."""

    operators: tuple[OperatorModel, ...]
    batch_overhead_s: float
    source: str = ""

    def covers(self, names: Sequence[str]) -> bool:
        return {op.name for op in self.operators} >= set(names)
