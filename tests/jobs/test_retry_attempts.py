"""A case retried by Airflow: the failed attempt's run and the retry's are linked both ways, and an attempt whose
driver died with its task (RUNNING, heartbeat stopped) is KILLED with the reason as soon as the retry starts.
A real SQLite store; the runs are made as the job makes them (RunRecorder with the suite's parent and case tags)."""
import time

from jobs.recording.attempts import CASE_TAG, RETRIED_BY_TAG, RETRY_OF_TAG, link_earlier_attempts
from jobs.recording.liveness import HEARTBEAT_TAG
from jobs.recording.recorder import RunRecorder


def _attempt(uri, parent, case):
    return RunRecorder(uri, "retries", f"case {case}", tags={CASE_TAG: case}, parent_run_id=parent)


def test_a_retry_links_its_failed_attempts_and_kills_the_one_whose_driver_died(tracking_uri, mlflow_client):
    parent = RunRecorder(tracking_uri, "retries", "suite", tags={})
    failed = _attempt(tracking_uri, parent.run_id, "3")
    failed.fail("Spark infrastructure: Lost executor")
    lost = _attempt(tracking_uri, parent.run_id, "3")
    lost._heartbeat.stop()  # its driver was SIGKILLed with the task: no end, no more beats
    mlflow_client.set_tag(lost.run_id, HEARTBEAT_TAG, f"{time.time() - 45:.3f}")
    other_case = _attempt(tracking_uri, parent.run_id, "4")
    retry = _attempt(tracking_uri, parent.run_id, "3")
    linked = link_earlier_attempts(mlflow_client, retry.run_id, retry.experiment_id, parent.run_id, "3")
    assert linked == [failed.run_id, lost.run_id], "oldest first; another case's run is not an attempt of this one"
    assert mlflow_client.get_run(retry.run_id).data.tags[RETRY_OF_TAG] == f"{failed.run_id},{lost.run_id}"
    for run_id in linked:
        assert mlflow_client.get_run(run_id).data.tags[RETRIED_BY_TAG] == retry.run_id
    assert mlflow_client.get_run(failed.run_id).info.status == "FAILED", "a failed attempt keeps its own reason"
    killed = mlflow_client.get_run(lost.run_id)
    assert killed.info.status == "KILLED" and retry.run_id in killed.data.tags["failure_reason"]
    assert RETRIED_BY_TAG not in mlflow_client.get_run(other_case.run_id).data.tags
    for rec in (other_case, retry, parent):
        rec.finish()


def test_a_first_attempt_links_nothing(tracking_uri, mlflow_client):
    parent = RunRecorder(tracking_uri, "retries-first", "suite", tags={})
    first = _attempt(tracking_uri, parent.run_id, "0")
    assert link_earlier_attempts(mlflow_client, first.run_id, first.experiment_id, parent.run_id, "0") == []
    assert RETRY_OF_TAG not in mlflow_client.get_run(first.run_id).data.tags
    first.finish()
    parent.finish()
