"""A workload's schedule where a Spark task runs: rebuilt on first use from the spec's JSON and the driver's
per-bucket state (no trace files needed on workers), then cached per Python worker process."""
from __future__ import annotations

import hashlib
from typing import Any

_SCHEDULES: dict[str, Any] = {}


class ScheduleRef:
    """The workload's schedule where a task runs: built on first use from the spec and the driver's per-bucket
    state (no trace files needed on workers), then cached per Python worker."""

    def __init__(self, spec_json: str, state: str | None = None):
        self.spec_json = spec_json
        self.state = state
        self.digest = hashlib.sha1((spec_json + (state or "")).encode()).hexdigest()

    def get(self):
        schedule = _SCHEDULES.get(self.digest)
        if schedule is None:
            import json

            from workloads.schedule import Schedule
            from workloads.spec import parse_workload

            spec = parse_workload(json.loads(self.spec_json), source="schedule", check_traces=False)
            schedule = Schedule.from_state(spec, self.state) if self.state else Schedule(spec)
            _SCHEDULES[self.digest] = schedule
        return schedule
