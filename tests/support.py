"""What the tests share: running `python -m jobs.run` as a user does, a temporary MLflow store (SQLite), a real
standalone Spark cluster. Fixtures are registered by tests/conftest.py."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow")
    return f"sqlite:///{folder / 'mlflow.db'}"


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
