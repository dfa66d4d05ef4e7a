"""The micro-batch cost model: how long an operator takes on a batch, given its degree and the task slots.

Pure arithmetic shared by the oracle (which plans against it) and the simulator (which runs a whole job on it):
operator i spreads its records over p_i tasks, in waves of `slots`; each task pays a fixed overhead.
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


def operator_timing(op: OperatorModel, records: int, degree: int, slots: int) -> tuple[float, float]:
    """(span_s, busy_s) of one operator for one batch."""
    per_task = records * op.service_s / degree + op.task_overhead_s
    waves = math.ceil(degree / slots)
    return waves * per_task, degree * per_task
