"""The fault suite's streaming tier: faults injected into a real `python -m jobs.run` while its stream runs on Spark.

Each case starts the job as a user does (a light constant workload, zero-cost operators, so that what is measured
is the fault's handling and not the machine's speed), waits until Spark has committed a few batches — read from the
query's own checkpoint — then injects the fault and checks the promise written in docs/reliability.md. Committed
output is checked for loss and duplication from the checkpoint (jobs.sink_check.committed_from_checkpoint), which
holds even for a run that never reached its own end; a run that finished is checked by the job itself too.

Servers a fault restarts are private to the case: an MLflow server on a spare loopback port, a PostgreSQL cluster of
its own (deploy/postgres.py), a standalone Spark cluster from deploy/spark_cluster.py. The machine's shared services
are never touched. A case whose means are missing here (no `initdb`, not allowed to
mount a small filesystem) is reported as skipped with the reason, never as held.

About 20 minutes in all on 2 cores: one streaming run at a time (two would spoil each other's timing).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from jobs.recording.recorder import REPO_ROOT

from benchmarks.faults import MAX_LINES, Outcome, closed_port

WORKLOAD = ("name: light\nprofile: constant\nparams: {{rate: 300}}\nduration_s: {duration}\nseed: 1\n"
            "keys: {{count: 100}}\npayload_bytes: 32\n")
EVENTS_PER_S = 300
START_TIMEOUT_S = 240.0  # Spark's start and the first batches on a loaded 2-core machine


class StreamingJob:
    """`python -m jobs.run` on a light workload, in its own process group, its console captured."""

    def __init__(self, scratch: Path, tracking_uri: str, duration_s: int = 45, extra: tuple[str, ...] = (),
                 output: Path | None = None, env: dict[str, str] | None = None):
        self.scratch, self.tracking_uri = scratch, tracking_uri
        self.output = output or scratch / "job"
        workload = scratch / f"light-{duration_s}.yaml"
        workload.write_text(WORKLOAD.format(duration=duration_s))
        self.total_events = EVENTS_PER_S * duration_s
        self.log = scratch / f"console-{time.monotonic_ns()}.txt"
        self._console = self.log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jobs.run", "--controller", "static", "--workload", str(workload),
             "--topology", "zero-cost", "--master", "local[2]", "--tracking-uri", tracking_uri,
             "--output-dir", str(self.output), "--experiment", "faults", *extra],
            cwd=REPO_ROOT, stdout=self._console, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, **(env or {})})
        self.mark = 0  # console lines before the fault

    def committed(self) -> int:
        commits = self.output / "checkpoint" / "commits"
        return sum(1 for p in commits.iterdir() if p.name.isdigit()) if commits.is_dir() else 0

    def wait_for_batches(self, n: int, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while self.committed() < n:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the job ended (exit {self.proc.returncode}) before {n} batches:\n"
                                   + "\n".join(self.lines()[-20:]))
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {n} committed batches after {timeout_s:.0f} s")
            time.sleep(0.2)
        self.mark = len(self.lines())

    def lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.strip()]

    def since_fault(self) -> list[str]:
        """Console lines after the fault, less what every run prints."""
        return _unusual(self.lines()[self.mark:])

    def jvm_pids(self) -> list[int]:
        import psutil

        try:
            return [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True) if "java" in c.name()]
        except psutil.NoSuchProcess:
            return []

    def wait(self, timeout_s: float = 300.0) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        finally:
            self._console.close()

    def kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _runs(tracking_uri: str, experiment: str = "faults") -> list:
    """Every run of `experiment` (the jobs' "faults"; the DAG's "elastic-streaming")."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id])


def _statuses(runs: list) -> str:
    return ", ".join(f"{r.info.run_id[:8]} {r.info.status}" for r in runs) or "none created"


def _checkpoint_check(output: Path) -> tuple[int, int, int]:
    """(events committed, lost, duplicated) from the query's checkpoint and the committed sink folders."""
    from jobs.sink_check import committed_from_checkpoint, verify_output

    committed = committed_from_checkpoint(output / "checkpoint")
    return verify_output(output / "sink", committed)


def _pids_gone(pids: list[int], timeout_s: float = 20.0) -> bool:
    import psutil

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.5)
    return False


# what every run prints: MLflow creating a new store's tables, the run's id, Java's module warning, the stream's
# start, its per-batch progress and its summary (and, on an MLflow server, the links MLflow prints as a run ends);
# the lines a fault adds are the others
USUAL = (re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d INFO mlflow\.store\.db\.utils: "),
         re.compile(r"^MLflow run \w+ \("), re.compile(r"^WARNING: Using incubator modules"),
         re.compile(r"^streaming: \d+ events over"), re.compile(r"^batch +\d+ +t="), re.compile(r"^summary: \{"),
         re.compile(r"^(🏃 View run|🧪 View experiment) "))


def _unusual(lines: list[str]) -> list[str]:
    return [line for line in lines if not any(p.match(line) for p in USUAL)]


def _explain(lines: list[str]) -> str:
    return lines[-1] if lines else ""


def _signalled_mid_run(scratch: Path, send: Callable[[StreamingJob], None],
                       wait_s: float) -> tuple[StreamingJob, str, int, bool]:
    """A light run on a store of its own, `send` applied once three batches are committed: (the job, its tracking
    URI, its exit code, whether every JVM it had started is gone)."""
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    job = StreamingJob(scratch, uri)
    try:
        job.wait_for_batches(3)
        jvms = job.jvm_pids()
        send(job)
        code = job.wait(wait_s)
        jvm_gone = _pids_gone(jvms, 30)
    finally:
        job.kill_group()
    return job, uri, code, jvm_gone


def stop_signal(sig: signal.Signals, case: str) -> Callable[[Path], Outcome]:
    """SIGTERM (Airflow stopping a task) or SIGINT (Ctrl-C) to the driver while batches run."""
    def send(job: StreamingJob) -> None:
        if sig == signal.SIGINT:  # Ctrl-C: the terminal signals the whole foreground group, the JVM included
            os.killpg(job.proc.pid, sig)
        else:  # Airflow signals the task's process
            os.kill(job.proc.pid, sig)

    def run(scratch: Path) -> Outcome:
        started = time.monotonic()
        job, uri, code, jvm_gone = _signalled_mid_run(scratch, send, wait_s=120)
        lines = job.since_fault()
        runs = _runs(uri)
        out, lost, dup = _checkpoint_check(job.output)
        reason = runs[0].data.tags.get("failure_reason", "") if runs else ""
        held = (code == 1 and 1 <= len(lines) <= MAX_LINES and len(runs) == 1 and runs[0].info.status == "FAILED"
                and reason == f"stopped by {sig.name}" and lost == dup == 0 and out > 0 and jvm_gone)
        return Outcome(case, "the stream stops, one line, run FAILED with the signal, committed output exact, no "
                       "JVM left", held, code, len(lines), _explain(lines),
                       f"{_statuses(runs)}; committed {out} events, lost {lost}, duplicated {dup}",
                       time.monotonic() - started)
    return run


def driver_killed(scratch: Path) -> Outcome:
    """SIGKILL of the Python driver (an OOM kill, a lost Airflow worker): the JVM must not outlive it, the run is
    reaped as KILLED by the next reader, and what was committed is exact. The reader is given a 1 s staleness instead
    of the default 120 s, so the case does not wait two minutes (the default is tested with the cheap tier)."""
    from mlflow.tracking import MlflowClient

    from jobs.recording.liveness import reap_dead_runs

    started = time.monotonic()
    job, uri, code, jvm_gone = _signalled_mid_run(scratch, lambda j: os.kill(j.proc.pid, signal.SIGKILL), wait_s=60)
    client = MlflowClient(uri)
    [before] = _runs(uri)
    time.sleep(1.5)
    reap_dead_runs(client, [before.info.experiment_id], stale_after_s=1.0)
    [after] = _runs(uri)
    out, lost, dup = _checkpoint_check(job.output)
    reason = after.data.tags.get("failure_reason", "")
    held = (before.info.status == "RUNNING" and after.info.status == "KILLED" and "killed or lost" in reason
            and jvm_gone and lost == dup == 0 and out > 0)
    return Outcome("driver killed mid-run (SIGKILL)", "no JVM left, run reaped as KILLED with the reason, committed "
                   "output exact", held, code, 0, reason,
                   f"1 run: RUNNING -> {after.info.status}; JVM {'gone' if jvm_gone else 'LEFT RUNNING'}; committed "
                   f"{out} events, lost {lost}, duplicated {dup}", time.monotonic() - started)


def reused_output(scratch: Path) -> Outcome:
    """A killed run's output folder, its checkpoint then corrupted (last offsets file cut short, metadata garbled),
    given to a new run: the new run must not resume from it (another run's offsets would skip or replay events); it
    starts clean and accounts for every event of its own workload."""
    started = time.monotonic()
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    first = StreamingJob(scratch, uri)
    try:
        first.wait_for_batches(3)
    finally:
        first.kill_group()
        first.wait(60)
    offsets = sorted((p for p in (first.output / "checkpoint" / "offsets").iterdir() if p.name.isdigit()),
                     key=lambda p: int(p.name))
    offsets[-1].write_text(offsets[-1].read_text()[:20])
    (first.output / "checkpoint" / "metadata").write_text("{not json")
    second = StreamingJob(scratch, uri, duration_s=20, output=first.output)
    code = second.wait(300)
    lines = _unusual(second.lines())
    runs = sorted(_runs(uri), key=lambda r: r.info.start_time)
    run = runs[-1] if len(runs) == 2 else None  # the second run; the first was killed
    m = run.data.metrics if run else {}
    held = (code == 0 and run is not None and run.info.status == "FINISHED"
            and m.get("records_in") == second.total_events and m.get("records_lost") == 0
            and m.get("records_duplicated") == 0 and m.get("records_out") == second.total_events)
    return Outcome("output folder of a killed run, its checkpoint corrupted", "the new run starts clean (no resume "
                   "from another run's offsets), every event once", held, code, len(lines),
                   f"records in {m.get('records_in', 0):.0f} of {second.total_events}, lost "
                   f"{m.get('records_lost', float('nan')):.0f}, duplicated {m.get('records_duplicated', float('nan')):.0f}",
                   _statuses(_runs(uri)), time.monotonic() - started)


@contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[bool]:
    """A tmpfs of `size` mounted at `path` (yields False where this process may not mount one)."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def disk_full(where: str) -> Callable[[Path], Outcome]:
    """The output folder (checkpoint and sink), or the artifact store, on a filesystem that fills mid-run."""
    case = f"disk full: {where}"

    def run(scratch: Path) -> Outcome:
        started = time.monotonic()
        small = scratch / "small"
        with small_filesystem(small, "1m" if where == "output folder" else "300k") as mounted:
            if not mounted:
                return Outcome(case, "", False, None, 0, "", "", 0.0, skipped="needs permission to mount a tmpfs")
            uri = f"sqlite:///{scratch / 'mlflow.db'}"
            if where == "output folder":
                job = StreamingJob(scratch, uri, duration_s=90, output=small / "job")
            else:
                job = StreamingJob(scratch, uri, duration_s=20, env={"MLFLOW_DEFAULT_ARTIFACT_ROOT": str(small)})
                (small / "filler").write_bytes(b"\0" * 200_000)
            try:
                code = job.wait(400)
            finally:
                job.kill_group()
            after_start = _unusual(job.lines())
            runs = _runs(uri)
            held = (code == 1 and 1 <= len(after_start) <= MAX_LINES and len(runs) == 1
                    and runs[0].info.status == "FAILED" and str(small) in _explain(after_start))
            return Outcome(case, "one line naming the path, run FAILED (never promoted)", held, code,
                           len(after_start), _explain(after_start), _statuses(runs), time.monotonic() - started)
    return run


@contextmanager
def mlflow_server(scratch: Path, port: int) -> Iterator[Callable[[], None]]:
    """A private MLflow server (SQLite store in `scratch`); yields a function that restarts it after a pause."""
    def start() -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                                 "--backend-store-uri", f"sqlite:///{scratch / 'server.db'}",
                                 "--default-artifact-root", str(scratch / "server-artifacts"), "--workers", "1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        _wait_port(port, 90)
        return proc

    state = {"proc": start()}

    def outage(down_s: float) -> None:
        os.killpg(state["proc"].pid, signal.SIGKILL)
        state["proc"].wait()
        time.sleep(down_s)
        state["proc"] = start()

    try:
        yield outage
    finally:
        os.killpg(state["proc"].pid, signal.SIGKILL)


def _wait_port(port: int, timeout_s: float) -> None:
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout_s:.0f} s")


@contextmanager
def private_postgres(port: int, databases: tuple[str, ...] = ("mlflow",)) -> Iterator[Callable[[float], None] | None]:
    """A PostgreSQL cluster of its own (deploy/postgres.py: loopback only, trust auth) with empty `databases`;
    yields a function that stops it for a while and starts it again (None without the server's packages)."""
    from deploy.postgres import bin_dir, private_cluster

    if bin_dir() is None:
        yield None
        return
    with private_cluster(port, databases) as outage:
        yield outage


def store_outage(kind: str) -> Callable[[Path], Outcome]:
    """The tracking store away for 20 s while batches run: the stream goes on, its metrics wait and are written
    when the store is back, the run ends FINISHED with every batch's metrics."""
    case = f"{kind} down for 20 s mid-run"

    def run(scratch: Path) -> Outcome:
        started = time.monotonic()
        port = closed_port()
        if kind == "MLflow server":
            server, uri = mlflow_server(scratch, port), f"http://127.0.0.1:{port}"
        else:
            server, uri = private_postgres(port), f"postgresql+psycopg2://postgres@127.0.0.1:{port}/mlflow"
        with server as outage:
            if outage is None:
                return Outcome(case, "", False, None, 0, "", "", 0.0, skipped="no PostgreSQL server packages (initdb, pg_ctl) on this machine")
            # a database store without a server keeps artifacts where the client says (MLflow's default: ./mlruns)
            job = StreamingJob(scratch, uri, duration_s=60,
                               env={"MLFLOW_DEFAULT_ARTIFACT_ROOT": str(scratch / "artifacts")})
            try:
                job.wait_for_batches(3)
                outage(20.0)
                code = job.wait(400)
            finally:
                job.kill_group()
            lines = job.since_fault()
            runs = _runs(uri)
            batches = metric_steps = None
            if len(runs) == 1:
                from mlflow.tracking import MlflowClient

                client = MlflowClient(uri)
                m = runs[0].data.metrics
                batches = int(m.get("batches", -1))
                metric_steps = len(client.get_metric_history(runs[0].info.run_id, "batch.records_read"))
        m = runs[0].data.metrics if len(runs) == 1 else {}
        held = (code == 0 and len(runs) == 1 and runs[0].info.status == "FINISHED" and m.get("records_lost") == 0
                and m.get("records_duplicated") == 0 and batches is not None and batches > 0
                and metric_steps == batches and len(lines) <= MAX_LINES)
        return Outcome(case, "the stream goes on; metrics written when the store is back; run FINISHED, complete",
                       held, code, len(lines), _explain(lines) or "(nothing printed)",
                       f"{_statuses(runs)}; per-batch metrics {metric_steps} of {batches} batches; retried writes "
                       f"{m.get('metric_write_retries', 0):.0f}", time.monotonic() - started)
    return run


def cluster_loss(what: str) -> Callable[[Path], Outcome]:
    """On a private standalone cluster (two 1-core workers): an executor JVM SIGKILLed, or a whole worker stopped,
    while batches run. Spark must re-run the lost tasks elsewhere: FINISHED, every event once, the loss recorded."""
    case = f"standalone cluster: {what} mid-run"

    def run(scratch: Path) -> Outcome:
        import psutil

        from deploy.spark_cluster import StandaloneCluster, free_port

        started = time.monotonic()
        cluster = StandaloneCluster(state_dir=scratch / "cluster", port=free_port(), ui_port=free_port())
        cluster.start(workers=2)
        try:
            uri = f"sqlite:///{scratch / 'mlflow.db'}"
            job = StreamingJob(scratch, uri, duration_s=60, extra=(
                "--master", cluster.master_url, "--controller", "scripted", "--param", "initial_degree=2",
                "--param", "initial_executors=2"))
            try:
                job.wait_for_batches(3)
                executors = [p for p in psutil.process_iter(["cmdline"])
                             if "CoarseGrainedExecutorBackend" in " ".join(p.info["cmdline"] or [])]
                if what == "an executor killed":
                    executors[0].kill()
                else:
                    cluster.remove_worker(sorted(cluster.workers)[0])
                code = job.wait(400)
            finally:
                job.kill_group()
        finally:
            cluster.stop()
        lines = job.since_fault()
        runs = _runs(uri)
        m = runs[0].data.metrics if len(runs) == 1 else {}
        held = (code == 0 and len(runs) == 1 and runs[0].info.status == "FINISHED" and m.get("records_lost") == 0
                and m.get("records_duplicated") == 0 and m.get("records_out") == job.total_events
                and m.get("executors_removed", 0) >= 1 and len(lines) <= MAX_LINES)
        return Outcome(case, "lost tasks re-run: FINISHED, every event once, the executor's loss recorded", held,
                       code, len(lines), _explain(lines) or "(nothing printed)",
                       f"{_statuses(runs)}; executors removed {m.get('executors_removed', 0):.0f}; lost "
                       f"{m.get('records_lost', float('nan')):.0f}, duplicated "
                       f"{m.get('records_duplicated', float('nan')):.0f}", time.monotonic() - started)
    return run


DAG_CONF = {"controllers": ["static:degree=1"], "workloads": ["constant"], "seeds": [1], "duration_s": 40,
            "include_champions": False, "promote": False}


def _dag_run_with_fault(scratch: Path, env: dict[str, str], inject: Callable[[object], bool]) -> tuple[int, bool]:
    """`airflow dags test elastic_experiment` (one case) as a user runs it, with `inject(run)` called once the
    case's MLflow run has three batches of metrics; returns (the command's exit code, whether it was injected)."""
    import json

    from mlflow.tracking import MlflowClient

    from jobs.recording.attempts import CASE_TAG

    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], env=env, capture_output=True, check=True,
                   timeout=600)
    log = (scratch / "airflow.log").open("w")
    dag = subprocess.Popen([sys.executable, "-m", "airflow", "dags", "test", "elastic_experiment", "-c",
                            json.dumps(DAG_CONF)], env=env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    injected = False
    try:
        client = MlflowClient(env["MLFLOW_TRACKING_URI"])
        deadline = time.monotonic() + 600
        while not injected and time.monotonic() < deadline and dag.poll() is None:
            time.sleep(1)
            experiment = client.get_experiment_by_name("elastic-streaming")
            runs = [] if experiment is None else client.search_runs(
                [experiment.experiment_id], filter_string=f"tags.`{CASE_TAG}` = '0' and attributes.status = 'RUNNING'")
            if runs and len(client.get_metric_history(runs[0].info.run_id, "batch.records_read")) >= 3:
                injected = inject(runs[0])
        code = dag.wait(900)
    finally:
        if dag.poll() is None:
            os.killpg(dag.pid, signal.SIGKILL)
        log.close()
    return code, injected


def _case_runs(tracking_uri: str) -> tuple[list, object | None]:
    """The case's runs (oldest first) and the suite's parent run."""
    from jobs.recording.attempts import CASE_TAG

    runs = sorted(_runs(tracking_uri, "elastic-streaming"), key=lambda r: r.info.start_time)
    parent = next((r for r in runs if CASE_TAG not in r.data.tags), None)
    return [r for r in runs if r.data.tags.get(CASE_TAG) == "0"], parent


def airflow_retry(scratch: Path) -> Outcome:
    """The Python driver SIGKILLed inside the experiment DAG's run_case task (a lost worker, an OOM kill): the task
    fails without an exit code, the infrastructure retry starts the case again, the retry's run is linked to the
    killed attempt's (which is KILLED at once), the suite completes on the retry and counts the case once."""
    import psutil

    from deploy.airflow_env import airflow_env
    from jobs.recording.attempts import RETRIED_BY_TAG, RETRY_OF_TAG

    started = time.monotonic()
    uri = f"sqlite:///{scratch / 'mlflow.db'}"
    env = {**os.environ, **airflow_env(home=scratch / "airflow", tracking_uri=uri, spark_master="local[2]")}
    killed = []

    def kill_driver(run) -> bool:
        for p in psutil.process_iter(["cmdline"]):
            if (any(a.endswith("jobs/run.py") for a in (p.info["cmdline"] or []))
                    and run.data.tags.get("liveness.pid") == str(p.pid)):
                p.kill()
                killed.append(run.info.run_id)
        return bool(killed)

    code, _ = _dag_run_with_fault(scratch, env, kill_driver)
    cases, parent = _case_runs(uri)
    first, last = (cases[0], cases[-1]) if len(cases) >= 2 else (None, None)
    m = last.data.metrics if last else {}
    held = (bool(killed) and first is not None and first.info.run_id == killed[0] and first.info.status == "KILLED"
            and first.data.tags.get(RETRIED_BY_TAG) == last.info.run_id
            and last.data.tags.get(RETRY_OF_TAG) == killed[0] and last.info.status == "FINISHED"
            and m.get("records_lost") == 0 and m.get("records_duplicated") == 0
            and parent is not None and parent.info.status == "FINISHED")
    return Outcome("driver killed inside an Airflow task (retried)", "the retry's run FINISHED and linked to the "
                   "killed attempt's (KILLED at once); the suite completes; the case counts once", held, code, 0,
                   (first.data.tags.get("failure_reason", "") if first else "no attempt was killed"),
                   f"{_statuses(cases)}; suite parent {parent.info.status if parent else 'none'}",
                   time.monotonic() - started)


def postgres_under_dag(scratch: Path) -> Outcome:
    """The deployment's one PostgreSQL (Airflow's metadata and MLflow's tracking store, as docker-compose.yaml
    has it; here a private instance) stopped for 20 s while the DAG's case streams: the stream goes on, its
    metrics are written when the database is back, the suite completes with the case run once."""
    from deploy.airflow_env import airflow_env

    started = time.monotonic()
    port = closed_port()
    with private_postgres(port, databases=("mlflow", "airflow")) as outage:
        if outage is None:
            return Outcome("PostgreSQL down for 20 s under a DAG run", "", False, None, 0, "", "", 0.0,
                           skipped="no PostgreSQL server packages (initdb, pg_ctl) on this machine")
        base = f"postgresql+psycopg2://postgres@127.0.0.1:{port}"
        uri = f"{base}/mlflow"
        env = {**os.environ, **airflow_env(home=scratch / "airflow", database_url=f"{base}/airflow",
                                           tracking_uri=uri, spark_master="local[2]"),
               "MLFLOW_DEFAULT_ARTIFACT_ROOT": str(scratch / "artifacts")}
        code, injected = _dag_run_with_fault(scratch, env, lambda run: outage(20.0) or True)
        cases, parent = _case_runs(uri)
        steps = None
        if len(cases) == 1:
            from mlflow.tracking import MlflowClient

            steps = len(MlflowClient(uri).get_metric_history(cases[0].info.run_id, "batch.records_read"))
    m = cases[-1].data.metrics if cases else {}
    held = (injected and len(cases) == 1 and cases[0].info.status == "FINISHED" and m.get("records_lost") == 0
            and m.get("records_duplicated") == 0 and steps == m.get("batches")
            and parent is not None and parent.info.status == "FINISHED")
    return Outcome("PostgreSQL down for 20 s under a DAG run", "the case streams on; metrics written when the "
                   "database is back; the suite completes, the case run once", held, code, 0,
                   f"per-batch metrics {steps} of {m.get('batches', 0):.0f} batches, retried writes "
                   f"{m.get('metric_write_retries', 0):.0f}",
                   f"{_statuses(cases)}; suite parent {parent.info.status if parent else 'none'}",
                   time.monotonic() - started)


KAFKA_PROMISES = {
    "the broker restarted mid-run": "the stream waits for the broker and goes on once it is back: run FINISHED, "
                                    "every event once, nothing printed",
    "the run's topic deleted mid-run": "run FAILED with one line saying the topic's data is gone; committed output "
                                       "exact",
}


def kafka_fault(what: str) -> Callable[[Path], Outcome]:
    """A run on Kafka (`--source kafka`, a private broker) whose broker is stopped for 5 s and started again, or
    whose topic is deleted, after a few committed batches."""
    case = f"Kafka: {what}"

    def run(scratch: Path) -> Outcome:
        from deploy.jars import JarsError, classpath
        from deploy.kafka import KafkaBroker, Topics
        from deploy.spark_cluster import free_port

        started = time.monotonic()
        try:
            classpath("kafka-broker"), classpath("spark-kafka")
        except JarsError as exc:
            return Outcome(case, KAFKA_PROMISES[what], False, None, 0, "", "", 0.0, skipped=str(exc))
        uri = f"sqlite:///{scratch / 'mlflow.db'}"
        broker = KafkaBroker(state_dir=scratch / "kafka", port=free_port(), controller_port=free_port()).start()
        job = None
        try:
            job = StreamingJob(scratch, uri, duration_s=40, extra=("--source", "kafka", "--kafka-bootstrap",
                                                                     broker.bootstrap))
            job.wait_for_batches(4)
            if what == "the broker restarted mid-run":
                broker.stop()
                time.sleep(5.0)
                broker.start()
            else:
                topics = Topics(broker.bootstrap)
                topic = next(t for t in topics.admin().list_topics(timeout=10).topics if t.startswith("elastic-"))
                topics.delete(topic)
            code = job.wait(300)
            output = job.output
            runs = _runs(uri)
            m = runs[0].data.metrics if len(runs) == 1 else {}
            if what == "the broker restarted mid-run":
                held = (code == 0 and len(runs) == 1 and runs[0].info.status == "FINISHED"
                        and m.get("records_out") == job.total_events and m.get("records_lost") == 0
                        and m.get("records_duplicated") == 0 and len(job.since_fault()) <= MAX_LINES)
                said = f"records out {m.get('records_out', 0):.0f} of {job.total_events}, lost " \
                       f"{m.get('records_lost', 0):.0f}, duplicated {m.get('records_duplicated', 0):.0f}"
            else:
                from jobs.kafka_input import TopicLayout, committed_reads
                from jobs.sink_check import verify_output
                from workloads import Schedule, load_workload

                layout = TopicLayout(Schedule(load_workload(str(scratch / "light-40.yaml"))), 2)
                topic = runs[0].data.params.get("kafka_topic", "") if runs else ""
                _, lost, duplicated = verify_output(output / "sink", committed_reads(output / "checkpoint", topic,
                                                                                     layout))
                lines = job.since_fault()
                held = (code == 1 and len(runs) == 1 and runs[0].info.status == "FAILED" and lost == 0
                        and duplicated == 0 and 1 <= len(lines) <= MAX_LINES)
                said = _explain(lines)
            return Outcome(case, KAFKA_PROMISES[what], held, code, len(job.since_fault()), said or _explain(
                job.since_fault()), _statuses(runs), time.monotonic() - started)
        finally:
            if job is not None:
                job.kill_group()
            broker.stop(clean=True)

    return run


def cases() -> list[tuple[str, Callable[[Path], Outcome]]]:
    return [
        ("driver stopped mid-run (SIGTERM)", stop_signal(signal.SIGTERM, "driver stopped mid-run (SIGTERM)")),
        ("driver interrupted mid-run (SIGINT, Ctrl-C)",
         stop_signal(signal.SIGINT, "driver interrupted mid-run (SIGINT, Ctrl-C)")),
        ("driver killed mid-run (SIGKILL)", driver_killed),
        ("output folder of a killed run, its checkpoint corrupted", reused_output),
        ("disk full: output folder", disk_full("output folder")),
        ("disk full: artifact store", disk_full("artifact store")),
        ("MLflow server down for 20 s mid-run", store_outage("MLflow server")),
        ("PostgreSQL down for 20 s mid-run", store_outage("PostgreSQL")),
        ("standalone cluster: an executor killed mid-run", cluster_loss("an executor killed")),
        ("standalone cluster: a worker stopped mid-run", cluster_loss("a worker stopped")),
        ("driver killed inside an Airflow task (retried)", airflow_retry),
        ("PostgreSQL down for 20 s under a DAG run", postgres_under_dag),
        *[(f"Kafka: {what}", kafka_fault(what)) for what in KAFKA_PROMISES],
    ]
