"""A stop signal while the stream runs is only noted, and acted on by the run's wait loop between two Spark calls
(raising inside a Py4J call made Py4J log a 15-line traceback); outside that loop it interrupts at once."""
import os
import signal
import time
from types import SimpleNamespace

import pytest

from jobs.experiment import failure_reason, wait_for_schedule
from jobs.stopping import RunStopped, StopSignals


@pytest.fixture
def stop():
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    signals = StopSignals()
    signals.install()
    yield signals
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def test_outside_the_stream_a_signal_interrupts_at_once(stop):
    with pytest.raises(RunStopped, match="stopped by SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)


class _RunningQuery:
    calls = 0

    def awaitTermination(self, timeout):  # noqa: N802 (Spark's name)
        self.calls += 1
        if self.calls == 2:  # the signal arrives while "Spark" has the main thread
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(timeout)
        return False


def test_while_the_stream_runs_the_wait_loop_raises_between_spark_calls(stop):
    query = _RunningQuery()
    processor = SimpleNamespace(events_recorded=0, within_slo=0)
    config = SimpleNamespace(stop_when_slo_unreachable=False, slo_target=0.95, drain_timeout_s=60.0)
    with pytest.raises(RunStopped) as raised:
        with stop.deferred():
            wait_for_schedule(query, processor, SimpleNamespace(total_events=10), time.time() + 60, config, print,
                              stop)
    assert query.calls == 2, "the call in progress returned normally; the loop raised before the next"
    assert failure_reason(raised.value) == "stopped by SIGINT"


def test_a_signal_noted_before_the_stream_block_raises_on_entering_it(stop):
    stop.received = signal.SIGTERM
    with pytest.raises(RunStopped):
        with stop.deferred():
            pass
