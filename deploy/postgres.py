"""A PostgreSQL server on loopback for the server configuration and its tests, from the machine's Debian packages.

    python -m deploy.postgres start [--install]   # 127.0.0.1:5432, user postgres, trust auth on loopback
    python -m deploy.postgres status
    python -m deploy.postgres stop                 # stops only a server this module started

The server-configuration tests (MLflow and Airflow on PostgreSQL, the compose configuration's MLflow, the tuning
study's storage) expect exactly that server: they create throw-away databases on it (tests/postgres.py). `make
services` and CI start it here; a user's embedded default (SQLite) needs none of it.

Why a cluster of its own rather than Debian's `main` cluster: Debian's cluster asks for a password on TCP and belongs
to the machine's service manager, which a container or CI sandbox may not run. `initdb` + `pg_ctl` on a data folder
of this module's give the same server on any machine with the packages, started and stopped by exactly this code.
The data folder is per port (the port is the machine's), under the system's temporary folder, because as root the
server runs as the `postgres` user, which must be able to reach it. Only the standard library is used: CI runs this
before the project's virtual environment exists.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from deploy.processes import port_taken

HOST = "127.0.0.1"
PORT = 5432
USER = "postgres"
PACKAGE = "postgresql"  # Debian's metapackage: the supported server version with its client


class PostgresError(RuntimeError):
    pass


def bin_dir() -> Path | None:
    """Where initdb and pg_ctl are: on PATH, else Debian's versioned folder (the newest), which is not on PATH."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


def install() -> float:
    """Install the server from Debian's packages unless it is there; returns the seconds the install took."""
    if bin_dir() is not None:
        return 0.0
    if not shutil.which("apt-get"):
        raise PostgresError("no PostgreSQL server (initdb, pg_ctl) on this machine and no apt-get to install it: "
                            "install PostgreSQL 15 or newer by your system's means")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]):
        done = subprocess.run([*sudo, *command], env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise PostgresError(f"`{' '.join(command)}` failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if bin_dir() is None:
        raise PostgresError(f"installed {PACKAGE}, but found no initdb in /usr/lib/postgresql/*/bin")
    return time.monotonic() - started


def _run_as() -> list[str]:
    """PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user the package creates."""
    return ["runuser", "-u", USER, "--"] if os.geteuid() == 0 else []


def serving(port: int = PORT, host: str = HOST) -> bool:
    """True when a PostgreSQL server answers on host:port for user postgres without a password (trust)."""
    psql = shutil.which("psql") or (bin_dir() and str(bin_dir() / "psql"))
    if not psql or not Path(psql).exists():
        return False
    try:
        done = subprocess.run([psql, "-h", host, "-p", str(port), "-U", USER, "-d", "postgres", "-w", "-Atc",
                               "select 1"], capture_output=True, text=True, timeout=20,
                              env={**os.environ, "PGCONNECT_TIMEOUT": "5"})
    except subprocess.TimeoutExpired:  # something that accepts the connection but does not speak PostgreSQL
        return False
    return done.returncode == 0 and done.stdout.strip() == "1"


class Cluster:
    """One PostgreSQL cluster in `data_dir`, listening on loopback only, trust auth for local connections."""

    def __init__(self, data_dir: Path, port: int = PORT):
        self.data_dir, self.port = Path(data_dir), port
        bins = bin_dir()
        if bins is None:
            raise PostgresError("no PostgreSQL server on this machine (initdb, pg_ctl): "
                                "`python -m deploy.postgres start --install` installs it from Debian's packages")
        self.bins = bins
        self.log = self.data_dir.parent / f"{self.data_dir.name}.log"

    def _ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        options = f"-p {self.port} -c listen_addresses={HOST} -k {self.data_dir}"
        command = [*_run_as(), str(self.bins / "pg_ctl"), "-D", str(self.data_dir), "-o", options,
                   "-l", str(self.log), *args]
        done = subprocess.run(command, capture_output=True, text=True)
        if check and done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            raise PostgresError(f"pg_ctl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}\n"
                                f"{self.log}:\n{tail}")
        return done

    def _initialised(self) -> bool:
        """A data folder of this server version (one from another version is thrown away: it holds only tests'
        throw-away databases)."""
        version_file = self.data_dir / "PG_VERSION"
        return version_file.exists() and version_file.read_text().strip() == self.bins.parent.name

    def initdb(self) -> None:
        if self._initialised():
            return
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(mode=0o700)
        if _run_as():
            shutil.chown(self.data_dir, USER)
            shutil.chown(self.data_dir.parent, USER)
        done = subprocess.run([*_run_as(), str(self.bins / "initdb"), "-D", str(self.data_dir), "-A", "trust",
                               "-U", USER, "-E", "UTF8", "--locale=C"], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise PostgresError(f"initdb {self.data_dir} failed ({done.returncode}): {done.stderr.strip()}")

    def running(self) -> bool:
        return self.data_dir.exists() and self._ctl("status", check=False).returncode == 0

    def start(self) -> None:
        self.initdb()
        if not self.running():
            self._ctl("-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        if self.running():
            self._ctl("-w", "-m", mode, "stop")

    def create_databases(self, *names: str) -> None:
        for name in names:
            done = subprocess.run([*_run_as(), str(self.bins / "createdb"), "-h", HOST, "-p", str(self.port),
                                   "-U", USER, name], capture_output=True, text=True)
            if done.returncode != 0:
                raise PostgresError(f"createdb {name} failed: {done.stderr.strip()}")


def default_data_dir(port: int = PORT) -> Path:
    return Path(tempfile.gettempdir()) / f"elastic-postgres-{port}" / "data"


@contextmanager
def private_cluster(port: int, databases: tuple[str, ...] = ()) -> Iterator[Callable[[float], None]]:
    """A throw-away cluster on `port` (the fault suite's and the tests': never the machine's server) with empty
    `databases`; yields a function that stops it for a while and starts it again, and removes it afterwards. Its
    folder is in the system's temporary folder, which the `postgres` user can reach (a test's tmp_path, under a
    root-only folder, it could not). Raises PostgresError without the packages."""
    scratch = Path(tempfile.mkdtemp(prefix=f"elastic-postgres-{port}-"))
    os.chmod(scratch, 0o755)
    cluster = Cluster(scratch / "data", port)
    cluster.start()
    try:
        cluster.create_databases(*databases)

        def outage(down_s: float) -> None:
            cluster.stop("fast")
            time.sleep(down_s)
            cluster.start()

        yield outage
    finally:
        cluster.stop("immediate")
        shutil.rmtree(scratch, ignore_errors=True)


def start(port: int = PORT, data_dir: Path | None = None, install_missing: bool = False) -> str:
    """Make the server of the tests answer on 127.0.0.1:port; returns what was done, in one line."""
    if serving(port):
        return f"PostgreSQL already serves 127.0.0.1:{port} (user postgres, trust): left as it is"
    if port_taken(port, HOST):
        raise PostgresError(f"127.0.0.1:{port} is taken by something that is not a PostgreSQL server with trust "
                            f"auth for user postgres; stop it, or give the tests that server")
    note = ""
    if install_missing:
        seconds = install()
        note = f" (installed {PACKAGE} from Debian's packages in {seconds:.0f} s)" if seconds else ""
    cluster = Cluster(data_dir or default_data_dir(port), port)
    cluster.start()
    if not serving(port):
        raise PostgresError(f"started PostgreSQL in {cluster.data_dir}, but 127.0.0.1:{port} does not answer; "
                            f"see {cluster.log}")
    return f"PostgreSQL started on 127.0.0.1:{port}, data {cluster.data_dir}{note}"


def stop(port: int = PORT, data_dir: Path | None = None) -> str:
    data = data_dir or default_data_dir(port)
    if bin_dir() is None or not data.exists():
        return f"no PostgreSQL of this project's in {data}: nothing to stop"
    cluster = Cluster(data, port)
    if not cluster.running():
        return f"PostgreSQL in {data} is not running"
    cluster.stop()
    return f"PostgreSQL in {data} stopped"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.postgres", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=PORT, help="loopback port (default: %(default)s)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the cluster's data folder (default: <temp>/elastic-postgres-<port>/data)")
    parser.add_argument("--install", action="store_true",
                        help="install the server from Debian's packages when it is missing (apt-get; root or sudo)")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            print(start(args.port, args.data_dir, args.install))
        elif args.action == "stop":
            print(stop(args.port, args.data_dir))
        else:
            up = serving(args.port)
            print(f"127.0.0.1:{args.port}: {'PostgreSQL serving (user postgres, trust)' if up else 'no server'}")
            return 0 if up else 1
    except PostgresError as exc:
        print(f"deploy.postgres: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
