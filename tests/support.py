"""What the tests share: running `python -m jobs.run` as a user does, a temporary MLflow store (SQLite), a real
standalone Spark cluster. Fixtures are registered by tests/conftest.py."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def _empty_mlflow_store(tmp_path_factory):
    """An MLflow SQLite store with its tables created, made once: creating the tables (MLflow's migrations) takes
    seconds, copying the file does not."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()  # creates the tables and the Default experiment
    return path


@pytest.fixture(scope="session")
def new_tracking_uri(tmp_path_factory, _empty_mlflow_store):
    """Makes a new, empty MLflow store (a copy of the empty one) and returns its URI: one per run when runs go
    concurrently, so no two processes write to one SQLite file."""
    import shutil

    def make() -> str:
        folder = tmp_path_factory.mktemp("mlflow")
        shutil.copyfile(_empty_mlflow_store, folder / "mlflow.db")
        return f"sqlite:///{folder / 'mlflow.db'}"

    return make


@pytest.fixture(scope="module")
def tracking_uri(new_tracking_uri):
    """A store of the module's own, so modules never see each other's runs."""
    return new_tracking_uri()


@pytest.fixture(scope="module")
def mlflow_client(tracking_uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri)


def run_cli(args, timeout=300, env=None):
    """Run `python -m jobs.run` as a user does; returns the CompletedProcess."""
    import subprocess

    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "jobs.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def run_cli_together(arg_lists, timeout=300):
    """Run several `python -m jobs.run` at once, each with its own Spark; returns their CompletedProcesses in order.

    For runs whose checks do not depend on timing (counts, records, what was recorded): a replayed schedule runs in
    real time, mostly waiting, so runs side by side take little more wall time than the longest. Output goes to
    files, not pipes, so a run that writes much is never stalled waiting for its pipe to be read."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="run-cli-") as folder:
        started = []
        for i, args in enumerate(arg_lists):
            out, err = open(Path(folder) / f"{i}.out", "w+"), open(Path(folder) / f"{i}.err", "w+")
            proc = subprocess.Popen([sys.executable, "-m", "jobs.run", *args], cwd=ROOT, stdout=out, stderr=err)
            started.append((args, proc, out, err))
        done = []
        try:
            for args, proc, out, err in started:
                code = proc.wait(timeout=timeout)
                out.seek(0)
                err.seek(0)
                done.append(subprocess.CompletedProcess(args, code, out.read(), err.read()))
        finally:
            for _, proc, out, err in started:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                out.close()
                err.close()
        return done


def only_run(mlflow_client, experiment):
    """The one run an experiment holds (fails if it holds another number)."""
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(experiment).experiment_id])
    return run


def artifact_table(mlflow_client, run, name, tmp_path):
    """A run's table artifact (parquet or JSON lines) as a DataFrame."""
    import pandas as pd

    path = mlflow_client.download_artifacts(run.info.run_id, name, str(tmp_path))
    return pd.read_parquet(path) if name.endswith(".parquet") else pd.read_json(path, lines=True)


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    """A real Spark standalone master and two 1-core workers, as plain processes on loopback, stopped by the ids
    the fixture started (deploy/spark_cluster.py)."""
    from deploy.spark_cluster import StandaloneCluster, free_port

    cluster = StandaloneCluster(state_dir=tmp_path_factory.mktemp("spark-cluster"), port=free_port(),
                                ui_port=free_port(), worker_cores=1, worker_memory="1g")
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        saved = StandaloneCluster.load(cluster.state_dir)  # a run with --host-scaling may have left a worker
        if saved is not None:
            cluster.workers.update(saved.workers)
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka broker (KRaft, one node) on spare loopback ports, from the resolved jars (deploy/kafka.py), its
    data removed afterwards; one per test process (its start is ~10 s), each module using topics of its own; skips
    without the jars (fails where the run requires them: tests/services.py)."""
    from deploy import jars
    from deploy.kafka import KafkaBroker
    from deploy.spark_cluster import free_port
    from tests.services import skip_or_fail

    try:
        jars.classpath("kafka-broker")
    except jars.JarsError as exc:
        skip_or_fail("jars", str(exc))
    broker = KafkaBroker(state_dir=tmp_path_factory.mktemp("kafka"), port=free_port(),
                         controller_port=free_port()).start()
    try:
        yield broker
    finally:
        broker.stop(clean=True)
