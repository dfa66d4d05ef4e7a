"""A run whose process dies without a word (SIGKILL) is settled by whoever reads the runs next: KILLED, with the
reason, instead of RUNNING for ever. A real process with a real MLflow store is killed; no Spark is needed for it."""
import os
import signal
import subprocess
import sys
import time

from mlflow.tracking import MlflowClient

from analysis.runs import load_runs
from benchmarks.faults import RECORDING_PROCESS
from jobs.recording.liveness import HEARTBEAT_TAG, reap_dead_runs
from jobs.recording.recorder import RunRecorder
from tests.support import ROOT



def test_a_killed_run_is_marked_killed_by_the_next_reader_and_a_live_one_is_left_alone(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    live = RunRecorder(uri, "faults", "alive", tags={"controller": "static"}, heartbeat_s=0.2)
    client = MlflowClient(uri)
    proc = subprocess.Popen([sys.executable, "-c", RECORDING_PROCESS, uri], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        run_id = proc.stdout.readline().strip()
        first = float(client.get_run(run_id).data.tags[HEARTBEAT_TAG])
        deadline = time.monotonic() + 60
        while float(client.get_run(run_id).data.tags[HEARTBEAT_TAG]) == first:  # it beats while it lives
            assert time.monotonic() < deadline, "no heartbeat after the first"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    last = float(client.get_run(run_id).data.tags[HEARTBEAT_TAG])
    assert client.get_run(run_id).info.status == "RUNNING", "nobody could end it: it was killed"
    experiment = [client.get_experiment_by_name("faults").experiment_id]
    assert reap_dead_runs(client, experiment, now_s=last + 5, stale_after_s=10) == [], "not stale yet"
    # the comparison, promotion and reports read runs through load_runs: it settles the dead one
    time.sleep(1.5)
    assert reap_dead_runs(client, experiment, stale_after_s=1) == [run_id]
    dead = client.get_run(run_id)
    assert dead.info.status == "KILLED"
    assert f"process {proc.pid} on" in dead.data.tags["failure_reason"]
    assert "was killed or lost before it could end the run" in dead.data.tags["failure_reason"]
    assert client.get_run(live.run_id).info.status == "RUNNING", "a live run keeps beating and is left alone"
    runs = load_runs(uri, experiment="faults").set_index("run_id")
    assert runs.loc[run_id, "status"] == "KILLED" and runs.loc[live.run_id, "status"] == "RUNNING"
    live.finish()
    assert client.get_run(live.run_id).info.status == "FINISHED"


def test_runs_without_a_heartbeat_are_never_reaped(tmp_path):
    """Suite parent runs (closed by their suite, which may run for hours) and runs recorded before heartbeats."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("liveness", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(experiment, start_time=1_000, tags={"kind": "experiment"}).info.run_id
    assert reap_dead_runs(client, [experiment], stale_after_s=1) == []
    assert client.get_run(parent).info.status == "RUNNING"
