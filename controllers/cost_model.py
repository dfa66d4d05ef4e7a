"""The micro-batch cost model: how long an operator takes on a batch, given its degree and the task slots.

Pure arithmetic shared by the oracle (which plans against it) and the simulator (which runs a whole job on it):
operator i spreads its records over p_i tasks, in waves of `slots`; each task pays a fixed overhead (busy time), and
the stage pays a launch time for every task after its first that no task's busy time shows: the scheduler hands
tasks out one after another, so a stage of 8 tiny tasks takes about 7 launches longer than its work (measured by
jobs.calibrate's degree sweep: about 20 ms per task in local mode; a calibration at one degree cannot see it and
leaves it at 0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol


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


def operator_timing(op: OperatorModel, records: int, degree: int, slots: int) -> tuple[float, float]:
    """(span_s, busy_s) of one operator for one batch."""
    per_task = records * op.service_s / degree + op.task_overhead_s
    waves = math.ceil(degree / slots)
    return waves * per_task + (degree - 1) * op.task_launch_s, degree * per_task
