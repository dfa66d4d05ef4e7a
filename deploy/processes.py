"""The servers this project starts on loopback: whether a port is taken before one starts, and ending one, and only
it -- each is started in a process group of its own, whose id (the leader's pid) the starter records, so that
stopping it ends the JVM and whatever it forked, and nothing else. Standard library only (deploy/postgres.py runs
before the virtual environment exists)."""
from __future__ import annotations

import os
import signal
import socket
import time


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Something accepts connections on host:port."""
    with socket.socket() as s:
        return s.connect_ex((host, port)) == 0


def stop_group(pid: int, grace_s: float = 10.0) -> None:
    """SIGTERM to the group led by `pid`, SIGKILL after `grace_s` if any member is left."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:  # reap it when this process started it: a zombie still counts as a member of its group
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass  # started by another process (`stop` from the CLI): init reaps it
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
