"""Stopping a run on purpose (Airflow's SIGTERM, a user's Ctrl-C): the stream stops between two Spark calls, the run
is marked FAILED with the signal's name, and the console gets one line.

Why not raise at once: Python runs a signal handler in the main thread, which spends a streaming run inside Py4J
calls (`awaitTermination`). An exception raised there interrupts Py4J mid-command; Py4J logs it as an ERROR with a
15-line traceback, and Spark then stops under a half-finished call. So while the stream runs, the handler only
notes the signal, and the run's wait loop — which returns from Spark every 0.25 s — raises `RunStopped` from plain
Python. Before the stream runs (Spark starting, the warm-up) nothing is waiting on a loop, so the signal interrupts
at once, as Python's own Ctrl-C does.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RunStopped(KeyboardInterrupt):
    """The run was stopped by a signal: not a fault of the job; its MLflow run is FAILED with this reason."""


class StopSignals:
    """Installs handlers for SIGTERM and SIGINT (main thread only) and remembers which arrived."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._deferred = False

    def install(self) -> None:
        """(Re)install the handlers: PySpark's SparkContext replaces the SIGINT handler with its own, which raises
        inside Py4J, so this is called again once Spark has started."""
        if threading.current_thread() is not threading.main_thread():
            return  # an embedding caller's thread (a test, a notebook): signals stay the caller's business
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        self.received = signum
        if not self._deferred:
            raise RunStopped(self.reason())

    def reason(self) -> str:
        return f"stopped by {signal.Signals(self.received).name}" if self.received else "stopped"

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Within this block a signal is only noted; the caller checks `raise_if_stopped()` between Spark calls. A
        signal noted before the block raises at its start."""
        self.raise_if_stopped()
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False

    def raise_if_stopped(self) -> None:
        if self.received is not None:
            raise RunStopped(self.reason())
