"""The local stack for interactive use, on loopback only: Airflow (standalone: api-server, scheduler, dag-processor,
triggerer) with the project's DAGs and plugins, and an MLflow tracking server (SQLite backend, local artifacts).

    python -m deploy.local_stack start     # or: make airflow
    python -m deploy.local_stack stop      # or: make airflow-stop
    python -m deploy.local_stack status

Airflow UI http://127.0.0.1:8080 (user admin, password in .local/airflow/simple_auth_manager_passwords.json.generated),
MLflow UI http://127.0.0.1:5000. State lives in .local/ (the same MLflow store `make demo` writes to). Both
servers run in their own process groups, recorded in .local/stack/*.pid, so `stop` ends exactly what `start` began:
every member of each group, and the leaders' descendants, escalating from SIGINT to SIGTERM to SIGKILL.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from deploy.airflow_env import LOCAL, airflow_env

STACK = LOCAL / "stack"
AIRFLOW_PORT, MLFLOW_PORT = 8080, 5000
POOL = ("elastic_streaming_runs", "1", "streaming runs share this machine: one at a time")


def _env() -> dict[str, str]:
    return {**os.environ, **airflow_env(mlflow_ui_url=f"http://127.0.0.1:{MLFLOW_PORT}", api_port=AIRFLOW_PORT)}


def _start(name: str, cmd: list[str], env: dict[str, str]) -> int:
    STACK.mkdir(parents=True, exist_ok=True)
    log = open(STACK / f"{name}.log", "ab")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (STACK / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def _alive(name: str) -> int | None:
    pid_file = STACK / f"{name}.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def _wait_http(url: str, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=3) as response:
                if response.status < 500:
                    return True
        except OSError:
            time.sleep(1)
    return False


def start() -> int:
    for name in ("airflow", "mlflow"):
        orphans = [p.pid for p in _members(name)] if _alive(name) is None else []
        if orphans:  # a second scheduler on the same metadata database would run every task twice
            print(f"{name}: process(es) {', '.join(map(str, orphans))} left from an earlier start are still running; "
                  "stop them first with: make airflow-stop", file=sys.stderr)
            return 1
    env = _env()
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
    subprocess.run([str(bin_dir / "airflow"), "pools", "set", *POOL], env=env, check=True, capture_output=True)
    if not _alive("mlflow"):
        LOCAL.mkdir(exist_ok=True)
        _start("mlflow", [str(bin_dir / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(MLFLOW_PORT),
                          "--backend-store-uri", env["MLFLOW_TRACKING_URI"],
                          # the same root the recorder uses: the user's if configured, else .local
                          "--default-artifact-root",
                          os.environ.get("MLFLOW_DEFAULT_ARTIFACT_ROOT") or (LOCAL / "mlartifacts").as_uri()], env)
    if not _alive("airflow"):
        _start("airflow", [str(bin_dir / "airflow"), "standalone"], env)
    ok_mlflow = _wait_http(f"http://127.0.0.1:{MLFLOW_PORT}/health", 120)
    ok_airflow = _wait_http(f"http://127.0.0.1:{AIRFLOW_PORT}/api/v2/monitor/health", 240)
    passwords = Path(env["AIRFLOW_HOME"]) / "simple_auth_manager_passwords.json.generated"
    mlflow_state = "up" if ok_mlflow else f"NOT UP: see {STACK / 'mlflow.log'}"
    airflow_state = "up" if ok_airflow else f"NOT UP: see {STACK / 'airflow.log'}"
    print(f"""MLflow UI   http://127.0.0.1:{MLFLOW_PORT}   {mlflow_state}
Airflow UI  http://127.0.0.1:{AIRFLOW_PORT}   {airflow_state}
            user admin, password in {passwords}
Trigger an experiment from the UI (DAG elastic_experiment, "Trigger" with its form) or the CLI:
    eval "$(.venv/bin/python -m deploy.airflow_env)"
    airflow dags unpause elastic_experiment
    airflow dags trigger elastic_experiment --conf '{{"controllers": ["static", "threshold"], "seeds": [1, 2, 3, 4]}}'
Stop with: make airflow-stop""")
    return 0 if ok_mlflow and ok_airflow else 1


def _live(procs) -> list:
    """Those still running (a zombie has exited; only its parent's wait is missing)."""
    import psutil

    live = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                live.append(proc)
        except psutil.Error:
            continue
    return live


def _members(name: str) -> list:
    """Every live process `start` began for `name`: its process group (the leader and whatever it started, even
    after the leader exited and they were re-parented to init) and the leader's descendants that left the group."""
    import psutil

    pid_file = STACK / f"{name}.pid"
    if not pid_file.exists():
        return []
    pgid = int(pid_file.read_text())
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid:
                found[proc.pid] = proc
        except (ProcessLookupError, psutil.Error):
            continue
    try:
        leader = psutil.Process(pgid)
        found.update({c.pid: c for c in leader.children(recursive=True)})
        found.setdefault(pgid, leader)
    except psutil.Error:
        pass
    return _live(found.values())


def stop(escalation: tuple[tuple[int, float], ...] = ((signal.SIGINT, 15.0), (signal.SIGTERM, 10.0),
                                                      (signal.SIGKILL, 5.0))) -> int:
    """End every process `start` began, the leader's children included (Airflow's scheduler, triggerer and
    executor workers outlive `airflow standalone` when it exits first, and ignore SIGTERM for a while): SIGINT,
    then SIGTERM, then SIGKILL to whatever is left, each followed by a wait; says what it did. Exit 1 if anything
    survived."""
    import psutil

    failed = False
    for name in ("airflow", "mlflow"):
        members = _members(name)
        if not members:
            (STACK / f"{name}.pid").unlink(missing_ok=True)
            continue
        total, used = len(members), []
        for sig, wait_s in escalation:
            for proc in members:
                try:
                    proc.send_signal(sig)
                except psutil.Error:
                    pass
            used.append(signal.Signals(sig).name)
            _, members = psutil.wait_procs(members, timeout=wait_s)
            members = _live(members)
            if not members:
                break
        if members:
            failed = True
            print(f"could not stop {name}: process(es) {', '.join(str(p.pid) for p in members)} still running after "
                  f"{', '.join(used)}")
            continue
        (STACK / f"{name}.pid").unlink(missing_ok=True)
        print(f"stopped {name}: {total} process(es), with {' then '.join(used)}")
    return 1 if failed else 0


def status() -> int:
    for name in ("airflow", "mlflow"):
        members = _members(name)
        print(f"{name}: {f'running, {len(members)} process(es)' if members else 'stopped'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.local_stack", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop", "status"))
    return {"start": start, "stop": stop, "status": status}[parser.parse_args(argv).action]()


if __name__ == "__main__":
    sys.exit(main())
