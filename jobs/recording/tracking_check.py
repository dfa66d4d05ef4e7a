"""Is the MLflow tracking store there? Asked once, before anything starts, with a short timeout.

Why: MLflow's client retries an unreachable server with exponential back-off (about two minutes by default) and a
database URI waits on its driver's connect timeout, so a run pointed at a store that is down printed nothing for
minutes, then failed with a traceback, after Spark had started. A store that cannot be reached is a fact about the
environment, not about the run: it is reported in one line, with its own exit code (jobs.run: 4), before Spark
starts and before any run is recorded.

What "reachable" means per kind of store (no data is read or written):
- http(s) (an MLflow server): any HTTP answer to GET <uri>/health within the timeout, even an error status (a proxy
  or an authenticating front end answers too: the server is there, what it says is for MLflow to handle);
- a database URI (postgresql, mysql, mssql, sqlite excepted): a TCP connection to its host and port;
- sqlite: the database file's folder exists or can be created, and is writable;
- anything else (file:, databricks, a plugin's scheme): not checked here.
"""
from __future__ import annotations

import os
import socket
import urllib.error
import urllib.request
from urllib.parse import urlparse

from jobs.errors import InputError
from jobs.paths import first_existing

TIMEOUT_S = 5.0  # the project's choice: long enough for a slow network, short enough to fail before a user waits
DATABASE_PORTS = {"postgresql": 5432, "mysql": 3306, "mssql": 1433}


class TrackingUnreachable(InputError):
    """The tracking store named by the run cannot be reached (jobs.run exits 4)."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason if isinstance(exc.reason, BaseException) else exc
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError since Python 3.10
        return "no answer"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def check_tracking_store(uri: str, timeout_s: float = TIMEOUT_S) -> None:
    """Raise TrackingUnreachable with one line naming the store and what failed; return when it answers."""
    scheme = urlparse(uri).scheme.lower()
    base = scheme.split("+", 1)[0]  # postgresql+psycopg2 -> postgresql
    hint = "start it, or choose another with --tracking-uri / MLFLOW_TRACKING_URI"
    if base in ("http", "https"):
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout_s):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TrackingUnreachable(f"MLflow tracking server {uri} cannot be reached ({_reason(exc)} within "
                                      f"{timeout_s:g} s): {hint}") from None
    if base in DATABASE_PORTS:
        from sqlalchemy.engine import make_url

        try:
            url = make_url(uri)
        except Exception as exc:  # noqa: BLE001 - sqlalchemy raises its own ArgumentError
            raise TrackingUnreachable(f"tracking store {uri!r} is not a database URL ({exc})") from None
        host, port = url.host or "localhost", url.port or DATABASE_PORTS[base]
        if host.startswith("/"):  # a Unix socket folder given as host: the driver connects, not us
            return
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
        except OSError as exc:
            raise TrackingUnreachable(f"tracking database {url.render_as_string(hide_password=True)} cannot be "
                                      f"reached at {host}:{port} ({_reason(exc)} within {timeout_s:g} s): "
                                      f"{hint}") from None
        return
    if base == "sqlite":
        from jobs.recording.recorder import sqlite_path

        db = sqlite_path(uri)
        if db is None:
            return
        folder = first_existing(db.parent)
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise TrackingUnreachable(f"tracking store {uri}: cannot create or write {db.parent} "
                                      f"({'not writable' if folder.is_dir() else 'not a folder'}): "
                                      f"choose another with --tracking-uri / MLFLOW_TRACKING_URI")
        if db.exists() and not os.access(db, os.W_OK):
            raise TrackingUnreachable(f"tracking store {uri}: {db} is not writable: choose another with "
                                      "--tracking-uri / MLFLOW_TRACKING_URI")
