"""Is a RUNNING MLflow run still alive? A heartbeat while it runs, and a reaper for the runs whose process died.

Why: a run's process can die without a word — SIGKILL from an out-of-memory killer, a lost Airflow worker, a machine
that went away — and its MLflow run then stays RUNNING for ever: the UI shows it as in progress, and a comparison
cannot tell it from a run still going. So each job run tags itself with a heartbeat (`liveness.heartbeat`, epoch
seconds) every HEARTBEAT_S while it runs, and whoever next reads the runs (analysis.runs.load_runs: the comparison,
promotion, the nightly check, the reports, the DAGs' analysis) marks a RUNNING run whose heartbeat is older than
STALE_AFTER_S as KILLED, with the reason in `failure_reason`. Runs without a heartbeat tag (suite parent runs,
which a suite closes itself, and runs recorded before this existed) are never touched.
"""
from __future__ import annotations

import os
import socket
import threading
import time

HEARTBEAT_TAG = "liveness.heartbeat"
HEARTBEAT_S = 15.0  # the project's choice: one small tag write per 15 s, next to the per-batch metric writes
STALE_AFTER_S = 120.0  # 8 missed heartbeats: longer than any pause of a live run (a slow Spark start, a GC, a drain)


def heartbeat_tags(now_s: float) -> dict[str, str]:
    """The tags a run starts with: its first heartbeat and which process on which host writes the next ones."""
    return {HEARTBEAT_TAG: f"{now_s:.3f}", "liveness.host": socket.gethostname(), "liveness.pid": str(os.getpid())}


class Heartbeat:
    """Writes the run's heartbeat tag every `every_s` from a daemon thread until stopped (or the process dies)."""

    def __init__(self, client, run_id: str, every_s: float = HEARTBEAT_S):
        self.client, self.run_id, self.every_s = client, run_id, every_s
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="mlflow-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stopped.wait(self.every_s):
            try:
                self.client.set_tag(self.run_id, HEARTBEAT_TAG, f"{time.time():.3f}")
            except Exception:  # noqa: BLE001 - a missed beat is not worth failing a run for; a store that stays
                pass  # down until the run ends is reported by the metric writer

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)


def stale_runs(runs, now_s: float, stale_after_s: float = STALE_AFTER_S) -> list[tuple[object, float]]:
    """(run, last heartbeat) of the RUNNING runs among `runs` (MLflow Run objects) whose heartbeat is too old."""
    found = []
    for run in runs:
        beat = run.data.tags.get(HEARTBEAT_TAG)
        if run.info.status != "RUNNING" or beat is None:
            continue
        try:
            last = float(beat)
        except ValueError:
            continue
        if now_s - last > stale_after_s:
            found.append((run, last))
    return found


def reap_dead_runs(client, experiment_ids: list[str], now_s: float | None = None,
                   stale_after_s: float = STALE_AFTER_S, filter_string: str = "") -> list[str]:
    """Mark the RUNNING runs whose heartbeat stopped as KILLED, with the reason; returns their ids."""
    now_s = time.time() if now_s is None else now_s
    clause = "attributes.status = 'RUNNING'"
    running = client.search_runs(experiment_ids, filter_string=f"{clause} and {filter_string}" if filter_string
                                 else clause, max_results=1000)
    reaped = []
    for run, last in stale_runs(running, now_s, stale_after_s):
        run_id, tags = run.info.run_id, run.data.tags
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(last))
        where = f"process {tags.get('liveness.pid', '?')} on {tags.get('liveness.host', '?')}"
        client.set_tag(run_id, "failure_reason",
                       f"no heartbeat since {since} ({now_s - last:.0f} s, more than {stale_after_s:g} s): its "
                       f"{where} was killed or lost before it could end the run")
        client.set_terminated(run_id, "KILLED")
        reaped.append(run_id)
    return reaped
