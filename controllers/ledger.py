"""The decision ledger: every action a controller took, what it predicted when it took it, and what happened over
the batches that followed — so a user can see whether to trust a controller's reasons, not only its totals.

A controller that models the load says what it expects in its Decision's details, under these keys (all optional,
all for the vector it proposed, in source events):

- ``predicted.arrival_eps``: the arrival rate it expects over the next batches (DS2: the sustained rate it sized
  for, before adding the lag it wants drained; the oracle: the schedule's rate over the next trigger interval);
- ``predicted.records`` and ``predicted.batch_s``: how many events the next batch will read and how long the
  proposed vector takes for them; their ratio is the **capacity** predicted: events per second of batch time;
- ``predicted.vector``: the vector these predictions are for (a guard may apply another one; then only the rate is
  compared).

Realised, over the **window** after the action (the project's choice: the next 3 batches, `ledger_window_batches`;
cut short by the next action, whose vector would otherwise be judged): the arrival rate (arrivals ÷ time), the
mean batch time, the capacity (events read ÷ batch time: at the load read, like the prediction, so both include
the fixed per-batch cost), and whether the vector kept up (capacity ≥ arrival rate). Errors are predicted ÷
realised − 1: positive means the controller expected more than happened.

Actions are accepted decisions that changed the degrees or the executor count. A controller with no model
(threshold without guards, SEEP's policies, a script) gets rows with the realised side only: the ledger still
shows what each action led to. Pure: it reads the loop's DecisionRecords and per-batch rows (mappings), so the
Spark job and the simulator produce the same ledger.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Mapping, Sequence

from controllers.types import vector_text
from controllers.loop import DecisionRecord

DEFAULT_WINDOW_BATCHES = 3
PREDICTED = "predicted."
# a ledger's columns, in order (also those of an empty ledger: a run without actions still has the table)
LEDGER_COLUMNS = (
    "batch_id", "time_s", "before", "after", "executors_before", "executors", "direction", "reason",
    "predicted_arrival_eps", "predicted_records", "predicted_batch_s", "predicted_capacity_eps",
    "prediction_for_applied_vector", "window_batches", "realised_arrival_eps", "realised_batch_s",
    "realised_capacity_eps", "kept_up", "backlog_after_window", "arrival_error", "batch_error", "capacity_error")


def _ratio_error(predicted: float | None, realised: float | None) -> float | None:
    if predicted is None or realised is None or not realised > 0 or math.isnan(predicted):
        return None
    return predicted / realised - 1.0


def _number(details: Mapping[str, Any], key: str) -> float | None:
    value = details.get(PREDICTED + key)
    return None if value is None else float(value)


def ledger_rows(decisions: Sequence[DecisionRecord], batches: Sequence[Mapping[str, Any]],
                window_batches: int = DEFAULT_WINDOW_BATCHES) -> list[dict[str, Any]]:
    """One row per action (see the module's doc). `batches`: per-batch rows with batch_id, arrivals, interval_s,
    records_read, batch_duration_s, backlog (the job's batch table or the simulator's)."""
    if window_batches < 1:
        raise ValueError(f"window_batches must be >= 1, got {window_batches}")
    by_id = {int(b["batch_id"]): b for b in batches}
    actions = [d for d in decisions if d.changed or d.executors_changed]
    rows = []
    for i, d in enumerate(actions):
        next_action = actions[i + 1].batch_id if i + 1 < len(actions) else math.inf
        # the decision after batch b is in force from batch b + 1 (degrees change live, docs/benchmarks.md)
        ids = [b for b in range(d.batch_id + 1, d.batch_id + 1 + window_batches) if b <= next_action and b in by_id]
        window = [by_id[b] for b in ids]
        details = d.details
        predicted_vector = details.get(PREDICTED + "vector")
        for_applied = predicted_vector is None or predicted_vector == vector_text(d.after)
        records, batch_s = _number(details, "records"), _number(details, "batch_s")
        if not for_applied:
            records = batch_s = None
        capacity = records / batch_s if records is not None and batch_s and batch_s > 0 else None
        interval = sum(float(b["interval_s"]) for b in window)
        busy = sum(float(b["batch_duration_s"]) for b in window)
        arrival = sum(float(b["arrivals"]) for b in window) / interval if interval > 0 else None
        realised_capacity = sum(float(b["records_read"]) for b in window) / busy if busy > 0 else None
        realised_batch = busy / len(window) if window else None
        row = {
            "batch_id": d.batch_id, "time_s": round(d.time_s, 3), "before": vector_text(d.before),
            "after": vector_text(d.after), "executors_before": d.executors_before, "executors": d.executors,
            "direction": _direction(d), "reason": d.reason[:300],
            "predicted_arrival_eps": _number(details, "arrival_eps"), "predicted_records": records,
            "predicted_batch_s": batch_s, "predicted_capacity_eps": capacity,
            "prediction_for_applied_vector": for_applied,
            "window_batches": len(window), "realised_arrival_eps": arrival, "realised_batch_s": realised_batch,
            "realised_capacity_eps": realised_capacity,
            "kept_up": None if arrival is None or realised_capacity is None else realised_capacity >= arrival,
            "backlog_after_window": int(window[-1]["backlog"]) if window else None,
        }
        row["arrival_error"] = _ratio_error(row["predicted_arrival_eps"], arrival)
        row["batch_error"] = _ratio_error(batch_s, realised_batch)
        row["capacity_error"] = _ratio_error(capacity, realised_capacity)
        rows.append(row)
    return rows


def _direction(d: DecisionRecord) -> str:
    before, after = sum(d.before.values()), sum(d.after.values())
    if d.executors_changed and before == after:
        return "executors up" if (d.executors or 0) > (d.executors_before or 0) else "executors down"
    if all(d.after[op] >= p for op, p in d.before.items()):
        return "up"
    if all(d.after[op] <= p for op, p in d.before.items()):
        return "down"
    return "mixed"


def _median_abs(values: Sequence[float | None]) -> float | None:
    present = [abs(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def ledger_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """Per-run figures of the ledger, logged as metrics: how many actions, how many carried a prediction, the
    median absolute errors, and the share of actions after which the vector did not keep up."""
    judged = [r["kept_up"] for r in rows if r["kept_up"] is not None]
    return {
        "ledger_actions": float(len(rows)),
        "ledger_predicted_actions": float(sum(1 for r in rows if r["predicted_arrival_eps"] is not None)),
        "ledger_arrival_error_median_abs": _median_abs([r["arrival_error"] for r in rows]),
        "ledger_batch_error_median_abs": _median_abs([r["batch_error"] for r in rows]),
        "ledger_capacity_error_median_abs": _median_abs([r["capacity_error"] for r in rows]),
        "ledger_fell_behind_share": (sum(1 for k in judged if not k) / len(judged)) if judged else None,
    }
