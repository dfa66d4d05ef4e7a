"""Per-batch metrics while the tracking store is away (a server restarting, a database failing over): the writes
wait and are retried, so nothing is lost mid-run; only once the run ends and the store stays away past the grace
period are they given up, and counted. A real SQLite store; the outage is injected by failing its writes."""
import pytest

from jobs.recording import recorder as recorder_module
from jobs.recording.recorder import RunRecorder


class Outage:
    """The store's client with its writes failing while `down` (as a refused connection does)."""

    def __init__(self, client, failures: int | None):
        self._client, self.failures = client, failures

    def log_batch(self, *args, **kwargs):
        if self.failures is None or self.failures > 0:
            if self.failures is not None:
                self.failures -= 1
            raise ConnectionError("tracking store unreachable")
        return self._client.log_batch(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(recorder_module, "RETRY_FIRST_S", 0.01)
    monkeypatch.setattr(recorder_module, "FLUSH_GRACE_S", 0.3)


def test_metrics_written_during_an_outage_arrive_when_the_store_returns(tracking_uri, mlflow_client):
    rec = RunRecorder(tracking_uri, "retry", "outage", tags={})
    real = rec.client
    rec.client = Outage(real, failures=3)
    for step in range(20):
        rec.log_metrics_async({"batch.records_read": step * 10}, step=step)
    assert rec.flush() == []
    history = mlflow_client.get_metric_history(rec.run_id, "batch.records_read")
    assert sorted(m.step for m in history) == list(range(20)), "every batch's metric, once"
    assert rec.write_retries == 3 and rec.metrics_unwritten == 0
    rec.client = real
    rec.finish()


def test_a_store_that_stays_away_past_the_end_is_given_up_and_counted(tracking_uri, mlflow_client):
    rec = RunRecorder(tracking_uri, "retry", "gone", tags={})
    real = rec.client
    rec.client = Outage(real, failures=None)
    for step in range(5):
        rec.log_metrics_async({"batch.records_read": step, "batch.latency_p99_s": 1.0}, step=step)
    errors = rec.flush()
    assert errors and "unreachable" in errors[0]
    assert rec.metrics_unwritten == 10 and rec.write_retries >= 2
    assert mlflow_client.get_metric_history(rec.run_id, "batch.records_read") == []
    rec.client = real
    rec.finish()
