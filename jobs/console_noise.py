"""PySpark's worker daemon prints a BrokenPipeError traceback for every idle Python worker when Spark stops; this
filter keeps those blocks off the user's console and passes everything else through at once.

Why: Spark 4.1+ (`spark.python.daemon.killWorkerOnFlushFailure`, on by default) makes an idle worker whose socket
the JVM closed at shutdown fail its last flush, and `pyspark/daemon.py` prints the traceback — up to three four-line
blocks at the end of most runs, and after a fault they outnumber the one line that explains it. They say nothing
about the run (Spark is done with the worker), and Spark has no setting that silences them: its
`spark.python.daemon.module` is not honoured by every runner that starts a daemon, and with the kill setting off the
daemon prints a longer message instead. The daemon writes to the file descriptor it inherited through the JVM from
this process, so the filter sits on that descriptor: fd 2 becomes a pipe, a thread copies it to the real stderr
line by line, and holds back only a block whose every frame is in pyspark/daemon.py and that ends in
"BrokenPipeError: [Errno 32] Broken pipe". Any other traceback, the JVM's log lines and the job's own lines pass
unchanged.
"""
from __future__ import annotations

import os
import sys
import threading

TRACEBACK = "Traceback (most recent call last):"
DAEMON_FRAME = "pyspark/daemon.py"
BROKEN_PIPE = "BrokenPipeError: [Errno 32] Broken pipe"


def is_daemon_noise(block: list[str]) -> bool:
    """A whole traceback block (lines with their newlines stripped) printed by the daemon for a closed worker."""
    if len(block) < 3 or block[0] != TRACEBACK or block[-1] != BROKEN_PIPE:
        return False
    frames = block[1:-1]
    return all(DAEMON_FRAME in line for line in frames if line.startswith("  File "))


class DaemonNoiseFilter:
    """Install with `start()` before Spark starts (the JVM inherits fd 2 then); `stop()` restores stderr."""

    def __init__(self) -> None:
        self.dropped = 0  # blocks held back
        self._saved_fd: int | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        sys.stderr.flush()
        self._saved_fd = os.dup(2)
        read_fd, write_fd = os.pipe()
        os.dup2(write_fd, 2)
        os.close(write_fd)
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), name="stderr-filter", daemon=True)
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        out = os.fdopen(os.dup(self._saved_fd), "w", buffering=1, errors="replace")
        held: list[str] = []
        with os.fdopen(read_fd, "r", errors="replace") as lines:
            for line in lines:
                text = line.rstrip("\n")
                if held:
                    held.append(text)
                    if text.startswith(" "):  # a frame or its source line: the block goes on
                        continue
                    if not is_daemon_noise(held):
                        out.write("\n".join(held) + "\n")
                    else:
                        self.dropped += 1
                    held = []
                elif text == TRACEBACK:
                    held = [text]
                else:
                    out.write(line)
            if held:
                out.write("\n".join(held) + "\n")
        out.flush()

    def stop(self, wait_s: float = 1.0) -> None:
        """Point fd 2 back at the real stderr. Lines still in the pipe are written by the thread while the process
        lives (the JVM keeps its copy of the pipe open until it exits)."""
        if self._saved_fd is None:
            return
        sys.stderr.flush()
        os.dup2(self._saved_fd, 2)
        if self._thread is not None:
            self._thread.join(wait_s)
        self._saved_fd = None
