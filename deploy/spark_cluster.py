"""A Spark standalone cluster on this machine, as plain processes from the pyspark installation, on loopback.

    python -m deploy.spark_cluster start --workers 2 --cores 1     # master spark://127.0.0.1:7077, UI :8090
    python -m deploy.spark_cluster status
    python -m deploy.spark_cluster stop

Why not Spark's sbin/start-*.sh: those daemonise and find their processes again through pid files named by user and
instance, which collide with any other Spark on the machine; here every process is started in its own process group
and stopped by exactly the ids this module recorded (.local/spark-cluster/*.pid), so `stop` ends what `start` began
and nothing else. The same class is the test fixture (tests/conftest.py) and the host-level actuator's tool: adding
a worker is starting one more process, with its real start-up time measured.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from deploy.processes import port_taken, stop_group

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local" / "spark-cluster"
# What the master's JSON UI gives while it is still starting: a refused or reset connection (OSError), a cut-off
# response (HTTPException), or a 200 with an empty body that is not JSON yet (ValueError) -- all mean "ask again".
NOT_READY = (OSError, http.client.HTTPException, ValueError)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClusterError(RuntimeError):
    pass


@dataclass
class StandaloneCluster:
    """Master and workers as child process groups; `state_dir` holds their pids, logs and work directories."""
    state_dir: Path = STATE
    port: int = 7077
    ui_port: int = 8090
    worker_cores: int = 1
    worker_memory: str = "1g"
    workers: dict[str, int] = field(default_factory=dict)  # name -> pid
    master_pid: int | None = None
    worker_ui_ports: dict[str, int] = field(default_factory=dict)  # name -> web UI port: how the master names it

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        home = spark_home()
        return {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.state_dir / "logs"), "SPARK_NO_DAEMONIZE": "1",
                "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}

    def _spawn(self, name: str, args: list[str]) -> int:
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        log = open(self.state_dir / "logs" / f"{name}.log", "ab")
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        proc = subprocess.Popen(cmd, env=self._env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (self.state_dir / f"{name}.pid").write_text(str(proc.pid))
        return proc.pid

    def state(self) -> dict:
        """The master's own view (its JSON UI): workers with their state and cores, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=3) as r:
            return json.load(r)

    def alive_workers(self) -> list[dict]:
        try:
            return [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
        except NOT_READY:
            return []

    def _wait(self, ready, what: str, timeout_s: float) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            if ready():
                return time.monotonic() - start
            time.sleep(0.2)
        raise ClusterError(f"{what} not ready after {timeout_s:.0f} s (logs in {self.state_dir / 'logs'})")

    def start(self, workers: int = 1, timeout_s: float = 90.0) -> "StandaloneCluster":
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for port in (self.port, self.ui_port):
            if port_taken(port):
                raise ClusterError(f"port {port} is taken: is a cluster already running? "
                                   "(`python -m deploy.spark_cluster stop`, or choose other ports)")
        self.master_pid = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                                 "--port", str(self.port), "--webui-port", str(self.ui_port)])
        self._wait(lambda: self._master_up(), "the master", timeout_s)
        for _ in range(workers):
            self.add_worker(timeout_s)
        self._save()
        return self

    def _master_up(self) -> bool:
        try:
            return self.state().get("status") == "ALIVE"
        except NOT_READY:
            return False

    def add_worker(self, timeout_s: float = 90.0) -> tuple[str, float]:
        """Start one more worker process; returns its name and the seconds until the master saw it ALIVE."""
        name = f"worker-{len(self.workers) + 1}"
        while name in self.workers:
            name = f"{name}x"
        work = self.state_dir / name
        self.worker_ui_ports[name] = ui_port = free_port()
        self.workers[name] = self._spawn(name, [
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(self.worker_cores),
            "--memory", self.worker_memory, "--webui-port", str(ui_port), "--work-dir", str(work),
            self.master_url])
        took = self._wait(lambda: self.worker(name) is not None, f"worker {name}", timeout_s)
        self._save()
        return name, took

    def worker(self, name: str) -> dict | None:
        """The master's record of one of our workers while it is ALIVE (matched by the web UI port we gave it)."""
        port = self.worker_ui_ports.get(name)
        for w in self.alive_workers():
            if port is not None and w.get("webuiaddress", "").rstrip("/").endswith(f":{port}"):
                return w
        return None

    def free_cores(self) -> int:
        return sum(w["cores"] - w["coresused"] for w in self.alive_workers())

    def remove_worker(self, name: str) -> None:
        stop_group(self.workers.pop(name))
        self.worker_ui_ports.pop(name, None)
        self._save()

    def stop(self) -> None:
        for name in list(self.workers):
            stop_group(self.workers.pop(name))
        if self.master_pid is not None:
            stop_group(self.master_pid)
            self.master_pid = None
        for pid_file in self.state_dir.glob("*.pid"):
            pid_file.unlink()
        (self.state_dir / "cluster.json").unlink(missing_ok=True)

    def _save(self) -> None:
        (self.state_dir / "cluster.json").write_text(json.dumps(
            {"port": self.port, "ui_port": self.ui_port, "master_pid": self.master_pid, "workers": self.workers,
             "worker_cores": self.worker_cores, "worker_memory": self.worker_memory,
             "worker_ui_ports": self.worker_ui_ports}))

    @classmethod
    def load(cls, state_dir: Path = STATE) -> "StandaloneCluster | None":
        path = state_dir / "cluster.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(state_dir, raw["port"], raw["ui_port"], raw["worker_cores"], raw["worker_memory"],
                   raw["workers"], raw["master_pid"], raw.get("worker_ui_ports", {}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deploy.spark_cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("start", "stop", "status"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1, help="cores per worker (default 1)")
    p.add_argument("--memory", default="1g", help="memory per worker (default 1g)")
    p.add_argument("--port", type=int, default=7077)
    p.add_argument("--ui-port", type=int, default=8090)
    args = p.parse_args(argv)
    running = StandaloneCluster.load()
    if args.action == "start":
        if running is not None:
            print(f"already running: {running.master_url} (stop it first)", file=sys.stderr)
            return 1
        cluster = StandaloneCluster(port=args.port, ui_port=args.ui_port, worker_cores=args.cores,
                                    worker_memory=args.memory)
        try:
            cluster.start(args.workers)
        except ClusterError as exc:
            cluster.stop()
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"master {cluster.master_url} (UI http://127.0.0.1:{cluster.ui_port}), workers: "
              f"{', '.join(cluster.workers)} ({args.cores} core(s) each)")
        return 0
    if running is None:
        print("no cluster started by this project is running")
        return 0
    if args.action == "stop":
        running.stop()
        print("stopped")
        return 0
    workers = running.alive_workers()
    print(f"master {running.master_url}: {len(workers)} alive worker(s), "
          f"{sum(w['cores'] for w in workers)} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
