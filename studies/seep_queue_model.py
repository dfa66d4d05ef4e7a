"""A deterministic tuple-at-a-time queue model: the SEEP thesis' setting, for its simulated tests T1-T6.

Why a second model next to `simulator.plant`: the thesis' tests (§5.2, pp. 67-78) are about an operator with a
fixed service rate mu per instance and an input queue fed at lambda — queue arithmetic by Little's law, sampled
every 5 s. The micro-batch plant quantises time into batches, which is exactly the effect the Spark run of T5 is
there to show; the policy semantics themselves are checked here, where the thesis' numbers hold exactly.

Each operator is a fluid queue: per step dt it receives what the upstream served, serves at most
instances x mu x dt, and keeps the rest (capped at 100,000 tuples like SEEP). Instances share the operator's queue
(work-conserving), so every instance reads queue / instances. A new instance serves from the next step on (the
thesis' VM pool had warm VMs; `provisioning_s` adds a delay when wanted).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from controllers.cost_model import ArrivalSchedule
from params.units import US
from controllers.policy.engine import Action, PolicyEngine
from controllers.policy.model import Policy

QUEUE_CAP = 100_000


@dataclass(frozen=True)
class QueueOperator:
    name: str
    service_rate: float  # mu: tuples per second per instance


@dataclass
class QueueRun:
    times: list[float] = field(default_factory=list)  # sampling times
    queue: dict[str, list[float]] = field(default_factory=dict)  # operator -> queue at each sampling time
    sizes: dict[str, list[int]] = field(default_factory=dict)  # operator -> instances after that sample's actions
    actions: list[Action] = field(default_factory=list)

    @property
    def executed(self) -> list[Action]:
        return [a for a in self.actions if a.executed]

    def first_time_queue_above(self, operator: str, value: float) -> float | None:
        return next((t for t, q in zip(self.times, self.queue[operator]) if q > value), None)

    def queue_at(self, operator: str, time_s: float) -> float:
        return self.queue[operator][self.times.index(min(self.times, key=lambda t: abs(t - time_s)))]


def simulate_policy(operators: Sequence[QueueOperator], arrivals: ArrivalSchedule, policy: Policy,
                    duration_s: float, initial_sizes: Mapping[str, int] | None = None, dt: float = 0.05,
                    provisioning_s: float = 0.0) -> QueueRun:
    names = [op.name for op in operators]
    sizes = {n: 1 for n in names} | dict(initial_sizes or {})
    engine = PolicyEngine(policy, names, sizes)
    period = policy.options.sampling_period_s
    steps_per_sample = max(1, round(period / dt))
    queue = {n: 0.0 for n in names}
    pending: list[tuple[float, str, int]] = []  # (effective at, operator, size)
    served_in_period = {n: 0.0 for n in names}
    offered_in_period = {n: 0.0 for n in names}
    run = QueueRun(queue={n: [] for n in names}, sizes={n: [] for n in names})
    steps = round(duration_s / dt)
    due_before = arrivals.count_due(0)
    queue[names[0]] += due_before
    offered_in_period[names[0]] += due_before
    for k in range(1, steps + 1):
        t = k * dt
        for when, op, size in [p for p in pending if p[0] <= t + 1e-9]:
            sizes[op] = size
            pending.remove((when, op, size))
        due = arrivals.count_due(int(round(t * US)))
        inflow = float(due - due_before)
        due_before = due
        for op in operators:
            offered_in_period[op.name] += inflow
            queue[op.name] += inflow
            served = min(queue[op.name], sizes[op.name] * op.service_rate * dt)
            queue[op.name] = min(queue[op.name] - served, QUEUE_CAP)
            served_in_period[op.name] += served
            inflow = served
        if k % steps_per_sample:
            continue
        readings = {}
        for op in operators:
            n = sizes[op.name]
            q = queue[op.name]
            busy = 100.0 * served_in_period[op.name] / (n * op.service_rate * period)
            latency_ms = 1000.0 * (q / (n * op.service_rate) + 1.0 / op.service_rate)
            offered, processed = offered_in_period[op.name] / period, served_in_period[op.name] / period
            readings[op.name] = {  # instances share the queue: every instance reads the same busy share
                "queue-length": {"sum": q, "mean": q / n},
                "input-rate": {"sum": offered, "mean": offered / n},
                "processed-rate": {"sum": processed, "mean": processed / n},
                "utilisation": {"mean": busy, "max": busy},
                "cpu": {"job": busy},
                "latency": {"job": latency_ms},
            }
            served_in_period[op.name] = offered_in_period[op.name] = 0.0
        actions = engine.observe(t, readings, sizes)
        for action in actions:
            if action.executed:
                if provisioning_s > 0 and action.action == "scale-out":
                    pending.append((t + provisioning_s, action.operator, action.new_size))
                else:
                    sizes[action.operator] = action.new_size
        run.actions.extend(actions)
        run.times.append(t)
        for op in operators:
            run.queue[op.name].append(queue[op.name])
            run.sizes[op.name].append(sizes[op.name])
    return run
