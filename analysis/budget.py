"""The Spark-minutes budget while a confirmation runs: a case starts only if what was spent plus its own estimate
still fits; otherwise it is skipped, named on the suite's parent run, and the suite ends cleanly with what is known.

Why at the start of each case and not only when planning: the plan fits the budget with an estimate of each case
(workload length + a fixed start-up cost); a slow machine, a retried case or a busy cluster spend more. Checking
before each case keeps the overrun to at most the cases already in flight (one per pool slot), and never kills a
running case (a half-run case is a failed run; a skipped one is simply not known).

What is spent: the wall time of the suite's runs as MLflow recorded them (creation to end, or to now while one
runs), failed and retried attempts included — Spark minutes are minutes the cluster was busy, whatever came of
them. A skipped case leaves a parent tag `budget.skipped.<case index>` with the reason; closing the suite counts
those as expected absences (the promotion rule already treats a configuration missing seeds as not a candidate).
"""
from __future__ import annotations

import time

from mlflow.tracking import MlflowClient

SKIPPED_PREFIX = "budget.skipped."


def spent_minutes(client: MlflowClient, parent_run_id: str, now_ms: int | None = None) -> float:
    """The wall minutes of every run under the parent so far (module docstring)."""
    parent = client.get_run(parent_run_id)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    runs = client.search_runs([parent.info.experiment_id], max_results=10000,
                              filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'")
    return sum(max(0, (r.info.end_time or now_ms) - r.info.start_time) for r in runs) / 60000.0


def gate(tracking_uri: str, parent_run_id: str, case_index: int, case_minutes: float, budget_minutes: float
         ) -> str | None:
    """None when the case may start; otherwise why not (also recorded on the parent run)."""
    client = MlflowClient(tracking_uri)
    spent = spent_minutes(client, parent_run_id)
    if spent + case_minutes <= budget_minutes + 1e-9:
        return None
    reason = (f"over the Spark-minutes budget: {spent:.1f} of {budget_minutes:g} minutes spent, this case needs "
              f"about {case_minutes:.1f} more; skipped, the suite ends with what is known")
    client.set_tag(parent_run_id, f"{SKIPPED_PREFIX}{case_index}", reason)
    return reason


def skipped_cases(client: MlflowClient, parent_run_id: str) -> dict[int, str]:
    """case index -> why the budget skipped it."""
    tags = client.get_run(parent_run_id).data.tags
    return {int(k.removeprefix(SKIPPED_PREFIX)): v for k, v in tags.items() if k.startswith(SKIPPED_PREFIX)}
