"""A case retried by Airflow: the retry's MLflow run and the failed attempts' runs are linked both ways.

The experiment DAGs give each case's run the suite's parent run and the case's index (`airflow.case`, the mapped
task's map index); a retry of the task starts a new run with the same two. When a run starts, earlier runs of its
case are its failed attempts: each gets `retried_by` = the new run, the new run gets `retry_of` = them (comma
separated, oldest first), and an attempt still RUNNING whose heartbeat stopped (its driver was killed with its
task) is marked KILLED with the reason, at once instead of when the next reader reaps it. Only FINISHED runs are
ever compared or promoted, and each attempt wrote its own output folder, so a failed attempt's output is never
counted with the retry's.
"""
from __future__ import annotations

import time

from jobs.recording.liveness import HEARTBEAT_S, stale_runs

CASE_TAG = "airflow.case"  # the case's index = its mapped task's map_index: how a task finds its MLflow run
RETRY_OF_TAG = "retry_of"
RETRIED_BY_TAG = "retried_by"
# an earlier attempt is dead when it missed two heartbeats: Airflow retries a case at least 30 s after it failed
SUPERSEDED_AFTER_S = 2 * HEARTBEAT_S


def link_earlier_attempts(client, run_id: str, experiment_id: str, parent_run_id: str, case: str,
                          now_s: float | None = None) -> list[str]:
    """Link `run_id` with the earlier runs of the same case of the same suite; returns their ids, oldest first."""
    found = client.search_runs([experiment_id], max_results=100, order_by=["attributes.start_time ASC"],
                               filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}' and "
                                             f"tags.`{CASE_TAG}` = '{case}'")
    earlier = [r for r in found if r.info.run_id != run_id]
    if not earlier:
        return []
    now_s = time.time() if now_s is None else now_s
    dead = {r.info.run_id for r, _ in stale_runs(earlier, now_s, SUPERSEDED_AFTER_S)}
    for run in earlier:
        client.set_tag(run.info.run_id, RETRIED_BY_TAG, run_id)
        if run.info.run_id in dead:
            client.set_tag(run.info.run_id, "failure_reason",
                           f"its process was lost (no heartbeat for more than {SUPERSEDED_AFTER_S:g} s) and Airflow "
                           f"retried the case as run {run_id}")
            client.set_terminated(run.info.run_id, "KILLED")
    ids = [r.info.run_id for r in earlier]
    client.set_tag(run_id, RETRY_OF_TAG, ",".join(ids))
    return ids
