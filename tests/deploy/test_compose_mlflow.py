"""The MLflow server exactly as docker-compose.yaml starts it (its command, with the compose service names mapped to
this machine), on the PostgreSQL server: runs, metrics, artifacts through the server and the model registry work
the way the DAGs and jobs use them, with the pipeline's account; without credentials nothing but /health answers,
and a user an admin created with the default (READ) permission cannot move a champion's alias."""
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.postgres import temporary_databases

# an MLflow server on PostgreSQL and no Spark: it runs with the tests that need no Spark (at nice 19 beside the
# timing modules, where the server takes the idle core, within the five minutes it is given to become healthy)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def mlflow_databases():
    with temporary_databases("compose_mlflow", "compose_mlflow_auth") as names:
        yield names


def test_the_compose_mlflow_server_command_serves_runs_artifacts_and_the_registry(mlflow_databases, tmp_path,
                                                                                   monkeypatch):
    from mlflow.exceptions import MlflowException
    from mlflow.server.auth.client import AuthServiceClient
    from mlflow.tracking import MlflowClient

    from deploy.spark_cluster import free_port

    service = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())["services"]["mlflow"]
    command = service["command"][-1].replace("$$", "$")  # compose's escape for the container's own variables
    port = free_port()
    tracking_db, auth_db = mlflow_databases
    local = (command.replace("postgres:5432/mlflow_auth", f"127.0.0.1:5432/{auth_db}")
             .replace("postgres:5432/mlflow", f"127.0.0.1:5432/{tracking_db}")
             .replace("/tmp/mlflow-auth.ini", str(tmp_path / "mlflow-auth.ini"))
             .replace("/mlflow/artifacts", str(tmp_path / "artifacts"))
             .replace("--port 5000", f"--port {port}").replace("--host 0.0.0.0", "--host 127.0.0.1")
             .replace("127.0.0.1:5000", f"127.0.0.1:{port}"))
    assert local.count(str(port)) == 2, local
    assert "--app-name basic-auth" in local
    password = "pipeline-secret-for-this-test"
    env = {**os.environ, "POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": "", "MLFLOW_AUTH_ADMIN_PASSWORD": password,
           "MLFLOW_FLASK_SERVER_SECRET_KEY": "a-key-for-this-test",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    log = tmp_path / "server.log"  # a file, not a pipe: its tail can be read while the server still runs
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", local], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        # a fresh database is migrated first (dozens of schema steps): 35 s beside the other tests, and once more
        # than 120 s on a busy CI machine
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:  # the compose health check's URL
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"the MLflow server did not become healthy:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
        monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
        with pytest.raises(MlflowException, match="401|Unauthorized|credentials"):
            MlflowClient(url).search_experiments()
        # the pipeline's account, as docker-compose.yaml gives it to Airflow (MLflow's client reads these)
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
        client = MlflowClient(url)
        experiment = client.create_experiment("compose-check")
        assert client.get_experiment(experiment).artifact_location.startswith("mlflow-artifacts:"), \
            "artifacts go through the server (clients need no shared volume)"
        run = client.create_run(experiment).info.run_id
        client.log_metric(run, "latency_p99_s", 1.5)
        client.log_text(run, "hello", "config/policy.txt")
        client.set_terminated(run, "FINISHED")
        assert client.get_run(run).data.metrics["latency_p99_s"] == 1.5
        assert Path(client.download_artifacts(run, "config/policy.txt", str(tmp_path))).read_text() == "hello"
        assert any((tmp_path / "artifacts").rglob("policy.txt")), "stored on the server's artifact volume"
        client.create_registered_model("controller-for-step")
        assert client.get_registered_model("controller-for-step").name == "controller-for-step"
        version = client.create_model_version("controller-for-step", f"runs:/{run}/config", run_id=run)
        client.set_registered_model_alias("controller-for-step", "champion", version.version)
        AuthServiceClient(url).create_user("analyst", "analyst-password")
        monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "analyst")
        monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "analyst-password")
        reader = MlflowClient(url)
        assert reader.get_run(run).data.metrics["latency_p99_s"] == 1.5, "READ by default: runs can be compared"
        with pytest.raises(MlflowException, match="PERMISSION_DENIED|Permission denied|403"):
            reader.set_registered_model_alias("controller-for-step", "champion", version.version)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # its workers still busy (migrating): the test's outcome is already known
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
