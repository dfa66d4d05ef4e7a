"""When the driver stops the query: only once every scheduled event's batch is fully recorded.

Found in a CI run on the standalone cluster: the last batch had committed its output and advanced the read position,
and the driver stopped the query while that batch's controller step (an executor scale-in) was still running; the
batch's row was never written, so the run reported 139 fewer events read than written."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from jobs.experiment import wait_for_schedule


class _RunningQuery:
    def awaitTermination(self, timeout):  # noqa: N802 (Spark's name)
        time.sleep(timeout)
        return False


def _config(drain_timeout_s=30.0):
    return SimpleNamespace(stop_when_slo_unreachable=False, slo_target=0.95, drain_timeout_s=drain_timeout_s)


def test_the_query_is_not_stopped_between_a_batch_commit_and_its_record():
    schedule = SimpleNamespace(total_events=1000)
    # the last batch has read everything and committed, its record is still being written
    processor = SimpleNamespace(next_event=1000, events_recorded=861, within_slo=861)
    recorded_at = []

    def finish_record():
        time.sleep(0.6)
        recorded_at.append(time.time())
        processor.events_recorded = 1000

    threading.Thread(target=finish_record, daemon=True).start()
    drained, pruned = wait_for_schedule(_RunningQuery(), processor, schedule, time.time(), _config(), print)
    assert (drained, pruned) == (True, None)
    assert recorded_at and time.time() >= recorded_at[0]


def test_the_drain_timeout_names_the_events_not_recorded():
    schedule = SimpleNamespace(total_events=1000)
    processor = SimpleNamespace(next_event=1000, events_recorded=861, within_slo=861)
    lines = []
    drained, pruned = wait_for_schedule(_RunningQuery(), processor, schedule, time.time(), _config(0.3), lines.append)
    assert (drained, pruned) == (False, None)
    assert lines == ["drain timeout: 139 events still unprocessed"]
