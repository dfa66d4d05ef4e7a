"""Recording a run in MLflow: params, per-batch metrics (asynchronously), summary, artifacts, final status.

Per-batch metrics go through a background thread so the stream never waits on the tracking store. The run is
created only after all input has been validated, and every way out of the run (success, exception, interrupt)
ends it with a final status; a crashed run is FAILED with its reason in the `failure_reason` tag, never left
RUNNING.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlparse

from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT, MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

from jobs.recording.liveness import HEARTBEAT_S, Heartbeat, heartbeat_tags

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_STATE = REPO_ROOT / ".local"
DEFAULT_EXPERIMENT = "elastic-streaming"
# the variable `mlflow server --default-artifact-root` reads (MLflow 3, mlflow/cli/__init__.py)
ARTIFACT_ROOT_ENV = "MLFLOW_DEFAULT_ARTIFACT_ROOT"
MAX_PARAM_LENGTH = 6000
# the project's choice: once a run is ending, how long metric writes that failed (the store away) are still retried
# before they are given up and the run is tagged metrics_incomplete; mid-run they are retried for as long as it runs
FLUSH_GRACE_S = 60.0
RETRY_FIRST_S = 1.0  # the first wait before a failed metric write is retried; doubled up to 15 s


def default_tracking_uri() -> str:
    """MLFLOW_TRACKING_URI if set, else the embedded SQLite store under .local/ (no server needed)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{LOCAL_STATE / 'mlflow.db'}"


def default_artifact_root(tracking_uri: str | None = None) -> str | None:
    """Where the experiments this project creates keep their artifacts (each in a folder named after it), or None to
    let the tracking server or MLflow decide. For a tracking URI (default: `default_tracking_uri()`), in this order:

    1. $MLFLOW_DEFAULT_ARTIFACT_ROOT when set, whatever the tracking URI (SQLite, http(s), postgresql, ...): the
       variable `mlflow server --default-artifact-root` reads, so a server and this project's clients can share one
       setting. A URI (`s3://bucket/x`, `file:///data/x`, `mlflow-artifacts:/x`) is used as given, a plain path is
       made absolute (`file://`).
    2. A SQLite store file: the folder `mlartifacts` beside the file. For the embedded store
       (`.local/mlflow.db`, used when nothing is configured) that is the repository's `.local/mlartifacts`; for a
       user's own `sqlite:////data/runs/mlflow.db` it is `/data/runs/mlartifacts`, never inside this repository.
    3. Anything else (an MLflow server, a database server, an in-memory SQLite store): None, so the server's own
       `--default-artifact-root` / `--artifacts-destination` applies, as MLflow does by default.

    Only experiments created from now on are affected: an existing experiment keeps its artifact location.
    """
    configured = os.environ.get(ARTIFACT_ROOT_ENV, "").strip()
    if configured:
        if len(urlparse(configured).scheme) > 1:  # a URI (one letter would be a Windows drive)
            return configured.rstrip("/")
        return Path(configured).expanduser().absolute().as_uri()
    db = sqlite_path(tracking_uri or default_tracking_uri())
    return None if db is None else (db.parent / "mlartifacts").as_uri()


def sqlite_path(tracking_uri: str) -> Path | None:
    """The absolute path of a `sqlite:` store's file (relative paths are relative to the working directory, as for
    SQLite itself); None for other URIs and for an in-memory store."""
    if not tracking_uri.startswith("sqlite:"):
        return None
    from sqlalchemy.engine import make_url

    database = make_url(tracking_uri).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(os.path.abspath(database))


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=5)
        if rev.returncode == 0:
            return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.environ.get("ELASTIC_CODE_VERSION", "unknown")


def flatten(prefix: str, value: Any) -> dict[str, str]:
    """Nested config -> dotted MLflow params (the verbatim JSON is logged as an artifact too)."""
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(flatten(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    text = json.dumps(value) if isinstance(value, (list, tuple)) else str(value)
    return {prefix: text[:MAX_PARAM_LENGTH]}


def ensure_experiment(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """The experiment's id; created if missing, with its artifacts under `default_artifact_root(tracking_uri)`."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    root = default_artifact_root(tracking_uri)
    artifact_location = None if root is None else f"{root}/{name}"
    try:
        return client.create_experiment(name, artifact_location=artifact_location)
    except MlflowException:  # created concurrently by another run
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def quiet_store_client_logs() -> None:
    """While a run streams, a tracking store outage is the recorder's to report (one line when it starts, one when
    it ends; its writes wait and retry). MLflow's database layer would also log every failed call at ERROR with a
    40-line SQLAlchemy traceback, and urllib3 a warning per HTTP retry: hundreds of lines for a 20 s restart."""
    import logging

    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)


class RunRecorder:
    def __init__(self, tracking_uri: str, experiment: str, run_name: str, tags: Mapping[str, str],
                 parent_run_id: str | None = None, heartbeat_s: float = HEARTBEAT_S,
                 log: Callable[[str], None] | None = None):
        if tracking_uri.startswith("sqlite:"):
            Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.experiment_id = ensure_experiment(self.client, experiment, tracking_uri)
        all_tags = {MLFLOW_RUN_NAME: run_name, MLFLOW_GIT_COMMIT: git_revision(), **tags,
                    **heartbeat_tags(time.time())}
        if parent_run_id:
            all_tags[MLFLOW_PARENT_RUN_ID] = parent_run_id
        run = self.client.create_run(self.experiment_id, run_name=run_name, tags=all_tags)
        self.run_id = run.info.run_id
        self.artifact_uri = run.info.artifact_uri
        self.tracking_uri = tracking_uri
        self._queue: queue.Queue = queue.Queue()
        self._errors: list[str] = []
        self._stopping = threading.Event()  # the run is ending: failed writes are retried only FLUSH_GRACE_S more
        self._give_up_at: float | None = None  # once ending with the store away: when the retries stop
        self.write_retries = 0  # failed metric writes retried (the store was away for a while)
        self._log = log or (lambda line: None)
        self._away_since: float | None = None  # when the current store outage was first seen
        self.metrics_unwritten = 0  # metric values given up on: the run's per-batch record is incomplete
        self._thread = threading.Thread(target=self._drain, name="mlflow-metrics", daemon=True)
        self._thread.start()
        self._ended = False
        self._heartbeat = Heartbeat(self.client, self.run_id, heartbeat_s)

    # ---- params and artifacts ---------------------------------------------------------------------------
    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [Param(k, str(v)[:MAX_PARAM_LENGTH]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def set_tags(self, tags: Mapping[str, Any]) -> None:
        self.client.log_batch(self.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self.run_id, str(path), artifact_path)

    def log_dict(self, data: Any, name: str) -> None:
        self.client.log_dict(self.run_id, data, name)

    def log_text(self, text: str, name: str) -> None:
        self.client.log_text(self.run_id, text, name)

    # ---- metrics ------------------------------------------------------------------------------------------
    def log_metrics_async(self, metrics: Mapping[str, float | None], step: int) -> None:
        """Queue metrics for the background thread; returns at once."""
        ts = int(time.time() * 1000)
        self._queue.put([Metric(k, float(v), ts, step) for k, v in metrics.items() if v is not None])

    def _drain(self) -> None:
        """Write queued metrics in batches. A write that fails (the tracking server or database is down, restarting)
        is retried with backoff while the queue keeps collecting the stream's metrics, so an outage mid-run delays
        them instead of losing them; only once the run is ending and the store has stayed away for FLUSH_GRACE_S
        are the remaining writes given up, counted, and reported at the end of the run."""
        ending = False
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.task_done()
                return
            batch = list(item)
            taken = 1
            while len(batch) < 900:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                taken += 1
                if more is None:
                    ending = True
                    break
                batch.extend(more)
            self._write_with_retries(batch)
            for _ in range(taken):
                self._queue.task_done()
            if ending:
                # the sentinel was taken with this batch: write what is left, then stop
                self._queue.put(None)

    def _write_with_retries(self, batch: list[Metric]) -> None:
        """Write one batch, retrying with backoff; once the run is ending, only until FLUSH_GRACE_S after the first
        failure seen while ending (one deadline for all that is left, not one per batch)."""
        delay = RETRY_FIRST_S
        while True:
            try:
                for i in range(0, len(batch), 1000):
                    self.client.log_batch(self.run_id, metrics=batch[i : i + 1000])
                if self._away_since is not None:
                    self._log(f"tracking store back after {time.time() - self._away_since:.0f} s: the delayed "
                              "per-batch metrics are written")
                    self._away_since = None
                return
            except Exception as exc:  # noqa: BLE001 - keep the stream alive; what could not be written is reported
                if self._away_since is None:
                    self._away_since = time.time()
                    self._log(f"warning: tracking store unreachable ({type(exc).__name__}); the stream goes on, its "
                              "per-batch metrics wait and are retried")
                self.write_retries += 1
                wait = delay
                if self._stopping.is_set():
                    if self._give_up_at is None:
                        self._give_up_at = time.monotonic() + FLUSH_GRACE_S
                    left = self._give_up_at - time.monotonic()
                    if left <= 0:
                        self._errors.append(f"{type(exc).__name__}: {exc}")
                        self.metrics_unwritten += len(batch)
                        return
                    wait = min(delay, left)
                time.sleep(wait)
                delay = min(delay * 2, 15.0)

    def flush(self) -> list[str]:
        """Wait until every queued metric is written (or, with the store away FLUSH_GRACE_S, given up); returns the
        errors."""
        self._stopping.set()
        self._queue.join()
        return list(self._errors)

    def log_summary(self, summary: Mapping[str, Any]) -> None:
        metrics = [Metric(k, float(v), int(time.time() * 1000), 0) for k, v in summary.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)]
        for i in range(0, len(metrics), 1000):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + 1000])

    # ---- end ------------------------------------------------------------------------------------------------
    def finish(self, status: str = "FINISHED") -> None:
        """End the run: FINISHED, or KILLED for a run stopped early on purpose (pruned: not a complete result)."""
        self._heartbeat.stop()
        self._stop_thread()
        self.client.set_terminated(self.run_id, status)
        self._ended = True

    def fail(self, reason: str, detail: str | None = None) -> None:
        """End the run FAILED with its one-line reason; the full error text (`detail`: the JVM's and Python's
        stacks), when there is more to it, goes with the run as failure.txt — best effort, the store may be why."""
        if self._ended:
            return
        try:
            self._heartbeat.stop()
            self._stop_thread(timeout=10)
            self.client.set_tag(self.run_id, "failure_reason", reason[:5000])
            if detail and detail.strip() != reason:
                try:
                    self.client.log_text(self.run_id, detail, "failure.txt")
                except Exception:  # noqa: BLE001 - the reason is recorded; the detail is extra
                    pass
        finally:
            self.client.set_terminated(self.run_id, "FAILED")
            self._ended = True

    def _stop_thread(self, timeout: float | None = None) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)
