"""A run's summary metrics, computed once from its per-batch table and latency histogram.

Definitions (ARCHITECTURE, "Cost and quality, defined once"):
- latency of an event = time its batch's output was committed - its scheduled arrival (so queueing in front of a
  slow job counts); events never processed by the end of the run count as SLO violations;
- SLO attainment = fraction of all scheduled events within the latency bound;
- cost = slot-seconds, sum over batches of (sum of operator degrees) x (time that configuration was in force),
  and executor-core-seconds = cores provisioned x wall time; on a cluster, where executors come and go, the
  cores of the executors Spark had at each batch x the time they were in force;
- reconfiguration delay = batches from a decision to the first batch whose stages ran with the decided degrees
  (1 means "in force in the very next batch").
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from controllers.guard_stages import BURST_RETURN
from controllers.loop import AT_BATCH_START, DecisionRecord
from controllers.oracle import INFEASIBLE


class LatencyHistogram:
    """Log-spaced latency histogram: 0.1 % relative precision from 0.1 ms to 1 day in ~17,000 bins, so run-level
    percentiles cost constant memory however many events a run has."""

    LOW_S = 1e-4
    HIGH_S = 86_400.0
    GROWTH = 1.001

    def __init__(self):
        self.n_bins = int(math.ceil(math.log(self.HIGH_S / self.LOW_S) / math.log(self.GROWTH))) + 2
        self.counts = np.zeros(self.n_bins, dtype=np.int64)
        self.total = 0
        self.max_s = 0.0

    def add(self, latencies_s: np.ndarray) -> None:
        if len(latencies_s) == 0:
            return
        clipped = np.clip(latencies_s, self.LOW_S, self.HIGH_S)
        idx = np.floor(np.log(clipped / self.LOW_S) / math.log(self.GROWTH)).astype(np.int64) + 1
        idx[latencies_s < self.LOW_S] = 0
        self.counts += np.bincount(idx, minlength=self.n_bins)[: self.n_bins]
        self.total += len(latencies_s)
        self.max_s = max(self.max_s, float(latencies_s.max()))

    def percentile(self, q: float) -> float | None:
        if self.total == 0:
            return None
        rank = math.ceil(q / 100.0 * self.total)
        b = int(np.searchsorted(np.cumsum(self.counts), max(rank, 1)))
        if b == 0:
            return self.LOW_S
        return min(self.LOW_S * self.GROWTH ** b, self.max_s)  # upper edge of the bin: conservative


def reconfiguration_delays(decisions: Sequence[DecisionRecord], batches: pd.DataFrame, operators: Sequence[str]) -> list[int]:
    """For each accepted change, batches until Spark ran the changed operators with the decided degrees."""
    delays = []
    observed = batches.set_index("batch_id")
    for d in decisions:
        if not d.changed:
            continue
        changed = [op for op in operators if d.after[op] != d.before[op]]
        later = observed.loc[observed.index > d.batch_id]
        for batch_id, row in later.iterrows():
            if all(row.get(f"tasks_{op}") == d.after[op] for op in changed):
                delays.append(int(batch_id - d.batch_id))
                break
    return delays


def oscillations(decisions: Sequence[DecisionRecord], window_batches: int = 5) -> int:
    """Reversals: an operator scaled one way and back the other way within `window_batches` batches. A burst sizing
    (a batch sized as it started) and the return after it are one planned excursion, not a reversal: neither counts."""
    last: dict[str, tuple[int, int]] = {}
    count = 0
    for d in decisions:
        if not d.changed or d.reason.startswith(AT_BATCH_START) or d.details.get(BURST_RETURN):
            continue
        for op, after in d.after.items():
            before = d.before[op]
            if after == before:
                continue
            direction = 1 if after > before else -1
            if op in last and last[op][1] == -direction and d.batch_id - last[op][0] <= window_batches:
                count += 1
            last[op] = (d.batch_id, direction)
    return count


def slo_out_of_reach(processed: int, within_slo: int, total_scheduled: int, slo_target: float) -> str | None:
    """Why the run can no longer meet its SLO target, or None while it still can.

    Attainment is within_slo / total_scheduled; an event already processed late stays late, so once the late ones
    exceed the (1 - target) share of all scheduled events, no later batch can bring the attainment back to the
    target. A certainty, not a forecast: a pruned run would have missed the target had it run to the end."""
    late = processed - within_slo
    allowed = (1.0 - slo_target) * total_scheduled
    if total_scheduled and late > allowed:
        return (f"SLO target {slo_target:.1%} out of reach: {late} of {total_scheduled} scheduled events already "
                f"late (at most {allowed:.0f} may be), so the attainment cannot exceed "
                f"{(total_scheduled - late) / total_scheduled:.1%}")
    return None


def charged_slot_seconds(batches: pd.DataFrame, operators: Sequence[str]) -> float:
    """The run's cost: each batch's degrees from its start to the first trigger that could have run the next batch,
    then, over triggers skipped for want of data (`idle_after_s`), the vector decided after it. A controller that
    lowers its vector as a burst's last batch ends holds the lower one through the silence that follows, and is
    charged for that, as the plant charges it (simulator/plant.py)."""
    if not len(batches):
        return 0.0
    ran = batches[[f"degree_{op}" for op in operators]].sum(axis=1)
    decided = [f"next_degree_{op}" for op in operators]
    held = batches[decided].sum(axis=1) if set(decided) <= set(batches.columns) else ran
    idle = batches["idle_after_s"] if "idle_after_s" in batches.columns else 0.0
    return float((ran * (batches["interval_in_force_s"] - idle) + held * idle).sum())


def summarise(
    batches: pd.DataFrame,
    decisions: Sequence[DecisionRecord],
    histogram: LatencyHistogram,
    *,
    operators: Sequence[str],
    total_scheduled: int,
    within_slo: int,
    slo_latency_s: float,
    slo_target: float,
    executor_cores: int | None,
    wall_s: float,
    records_out: int,
    lost: int,
    duplicated: int,
    keyed: str | None = None,
) -> dict[str, Any]:
    records_in = int(batches["records_read"].sum()) if len(batches) else 0
    unprocessed = max(0, total_scheduled - records_in)
    degree_sum = batches[[f"degree_{op}" for op in operators]].sum(axis=1) if len(batches) else pd.Series(dtype=float)
    slot_seconds = charged_slot_seconds(batches, operators)
    delays = reconfiguration_delays(decisions, batches, operators)
    attainment = within_slo / total_scheduled if total_scheduled else 1.0
    summary = {
        "latency_p50_s": histogram.percentile(50),
        "latency_p95_s": histogram.percentile(95),
        "latency_p99_s": histogram.percentile(99),
        "latency_max_s": histogram.max_s if histogram.total else None,
        "slo_latency_s": slo_latency_s,
        "slo_target": slo_target,
        "slo_attainment": attainment,
        "slo_met": float(attainment >= slo_target),
        "cost_slot_seconds": slot_seconds,
        "cost_executor_core_seconds": _executor_core_seconds(batches, executor_cores, wall_s),
        "mean_total_degree": float(degree_sum.mean()) if len(degree_sum) else None,
        "records_scheduled": total_scheduled,
        "records_in": records_in,
        "records_out": records_out,
        "records_unprocessed": unprocessed,
        "records_lost": lost,
        "records_duplicated": duplicated,
        "scaling_actions": sum(1 for d in decisions if d.changed),
        # of which taken as a batch started, for the events it was about to read (the guards' burst sizing)
        "batch_start_actions": sum(1 for d in decisions if d.changed and d.reason.startswith(AT_BATCH_START)),
        "rejected_decisions": sum(1 for d in decisions if not d.accepted),
        # a controller that knows it cannot meet the objective at the maximum degrees says so (the oracle does)
        "infeasible_decisions": sum(1 for d in decisions
                                    if d.reason.removeprefix(f"{AT_BATCH_START}: ").startswith(INFEASIBLE)),
        "oscillations": oscillations(decisions),
        "reconfiguration_delay_batches_mean": float(np.mean(delays)) if delays else None,
        "reconfiguration_delay_batches_max": float(max(delays)) if delays else None,
        "batches": int(len(batches)),
        "batch_duration_mean_s": float(batches["batch_duration_s"].mean()) if len(batches) else None,
        "backlog_max": int(batches["backlog"].max()) if len(batches) else 0,
        "backlog_integral_event_s": float((batches["backlog"] * batches["interval_in_force_s"]).sum()) if len(batches) else 0.0,
        "throughput_events_per_s": records_in / wall_s if wall_s > 0 else None,
        "wall_s": wall_s,
    }
    column = f"max_task_s_{keyed}"
    if keyed and column in batches.columns and len(batches):
        # the keyed operator's slowest task per batch: what skew costs, and what placement controllers cut
        summary["keyed_max_task_s_mean"] = float(batches[column].mean())
        summary["keyed_max_task_s_p95"] = float(batches[column].quantile(0.95))
    if "balanced_partition_s" in batches.columns and len(batches):
        # what a placement balanced in hindsight, batch by batch, would have made the slowest keyed task: the bound
        # a placement controller works against (PlacementSnapshot.balanced_busy_s)
        summary["keyed_balanced_task_s_mean"] = float(batches["balanced_partition_s"].mean())
    if "executors" in batches.columns and len(batches):
        summary["executors_mean"] = float(batches["executors"].mean())
        summary["executors_max"] = float(batches["executors"].max())
    return summary


def _executor_core_seconds(batches: pd.DataFrame, fixed_cores: int | None, wall_s: float) -> float | None:
    if "executor_cores" in batches.columns and len(batches):
        return float((batches["executor_cores"] * batches["interval_in_force_s"]).sum())
    return fixed_cores * wall_s if fixed_cores else None
