"""Where new experiments keep their artifacts (jobs/recording/recorder.py `default_artifact_root`): an explicit
$MLFLOW_DEFAULT_ARTIFACT_ROOT for every tracking store; otherwise beside the SQLite file (the repository's
.local/mlartifacts only for the embedded store); otherwise what the server or MLflow decides. Real MLflow stores
(SQLite files in tmp_path, PostgreSQL when reachable); each case reads the created experiment's artifact_location."""
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from jobs.recording import recorder
from jobs.recording.recorder import ARTIFACT_ROOT_ENV, RunRecorder, default_artifact_root, ensure_experiment
from tests.postgres import temporary_databases


@pytest.fixture(autouse=True)
def nothing_configured(monkeypatch):
    monkeypatch.delenv(ARTIFACT_ROOT_ENV, raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def store(template: Path, db: Path) -> str:
    """A new SQLite store at `db` (a copy of an empty one: MLflow's migrations take seconds), its tracking URI."""
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, db)
    return f"sqlite:///{db}"


def location(uri: str, name: str = "exp") -> str:
    client = MlflowClient(uri)
    return client.get_experiment(ensure_experiment(client, name, uri)).artifact_location


def test_the_embedded_store_keeps_artifacts_in_the_repository_local_folder_by_default():
    assert recorder.default_tracking_uri() == f"sqlite:///{recorder.LOCAL_STATE / 'mlflow.db'}"
    assert default_artifact_root() == (recorder.REPO_ROOT / ".local" / "mlartifacts").as_uri()
    assert default_artifact_root(recorder.default_tracking_uri()) == default_artifact_root()


def test_the_embedded_store_experiment_gets_local_mlartifacts(_empty_mlflow_store, tmp_path, monkeypatch):
    # the embedded store, moved to tmp_path so the repository's own .local is not written
    monkeypatch.setattr(recorder, "LOCAL_STATE", tmp_path / ".local")
    uri = store(_empty_mlflow_store, tmp_path / ".local" / "mlflow.db")
    assert uri == recorder.default_tracking_uri()
    assert location(uri, "elastic-streaming") == (tmp_path / ".local" / "mlartifacts" / "elastic-streaming").as_uri()


def test_a_users_own_sqlite_file_keeps_artifacts_beside_it(_empty_mlflow_store, tmp_path):
    uri = store(_empty_mlflow_store, tmp_path / "runs" / "mine.db")
    got = location(uri, "study")
    assert got == (tmp_path / "runs" / "mlartifacts" / "study").as_uri()
    assert not got.startswith((recorder.REPO_ROOT / ".local").as_uri())


def test_a_relative_sqlite_path_is_taken_from_the_working_directory(_empty_mlflow_store, tmp_path, monkeypatch):
    store(_empty_mlflow_store, tmp_path / "rel" / "mlflow.db")
    monkeypatch.chdir(tmp_path)
    assert location("sqlite:///rel/mlflow.db?timeout=20") == (tmp_path / "rel" / "mlartifacts" / "exp").as_uri()


@pytest.mark.parametrize("configured,expected", [
    ("{tmp}/art", "{tmp_uri}/art/exp"),
    ("{tmp_uri}/art/", "{tmp_uri}/art/exp"),
    ("s3://bucket/elastic", "s3://bucket/elastic/exp"),
])
def test_an_explicit_root_wins_over_the_sqlite_default(_empty_mlflow_store, tmp_path, monkeypatch, configured,
                                                       expected):
    uri = store(_empty_mlflow_store, tmp_path / "runs" / "mlflow.db")
    fill = {"tmp": str(tmp_path), "tmp_uri": tmp_path.as_uri()}
    monkeypatch.setenv(ARTIFACT_ROOT_ENV, configured.format(**fill))
    assert location(uri) == expected.format(**fill)


def test_an_explicit_root_applies_to_the_embedded_store_too(_empty_mlflow_store, tmp_path, monkeypatch):
    monkeypatch.setattr(recorder, "LOCAL_STATE", tmp_path / ".local")
    uri = store(_empty_mlflow_store, tmp_path / ".local" / "mlflow.db")
    monkeypatch.setenv(ARTIFACT_ROOT_ENV, str(tmp_path / "elsewhere"))
    assert location(uri) == (tmp_path / "elsewhere" / "exp").as_uri()


def test_an_existing_experiment_keeps_its_location(_empty_mlflow_store, tmp_path, monkeypatch):
    uri = store(_empty_mlflow_store, tmp_path / "runs" / "mlflow.db")
    before = location(uri)
    monkeypatch.setenv(ARTIFACT_ROOT_ENV, str(tmp_path / "later"))
    assert location(uri) == before == (tmp_path / "runs" / "mlartifacts" / "exp").as_uri()


def test_a_recorded_run_writes_its_artifacts_there(_empty_mlflow_store, tmp_path):
    uri = store(_empty_mlflow_store, tmp_path / "runs" / "mlflow.db")
    rec = RunRecorder(uri, "artifacts-check", "run", tags={})
    try:
        rec.log_text("hello", "notes/hello.txt")
        rec.finish()
    finally:
        rec.fail("test ended early")  # no-op after finish
    written = tmp_path / "runs" / "mlartifacts" / "artifacts-check" / rec.run_id / "artifacts" / "notes" / "hello.txt"
    assert rec.artifact_uri.startswith((tmp_path / "runs" / "mlartifacts" / "artifacts-check").as_uri())
    assert written.read_text() == "hello"


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000", "https://mlflow.example.org",
                                 "postgresql+psycopg2://u:p@db:5432/mlflow", "sqlite://", "sqlite:///:memory:"])
def test_servers_and_memory_stores_decide_for_themselves_unless_configured(uri, monkeypatch, tmp_path):
    assert default_artifact_root(uri) is None
    monkeypatch.setenv(ARTIFACT_ROOT_ENV, "s3://bucket/x")
    assert default_artifact_root(uri) == "s3://bucket/x"


def test_a_database_server_store_lets_mlflow_decide_unless_configured(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MLflow's own default for a database store without a server is ./mlruns
    with temporary_databases("artifact_root") as (name,):
        uri = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
        client = MlflowClient(uri)
        mlflows_choice = client.get_experiment(client.create_experiment("plain")).artifact_location
        ours = location(uri, "unconfigured")
        assert ours.rsplit("/", 1)[0] == mlflows_choice.rsplit("/", 1)[0], "the same root MLflow chooses"
        assert not ours.startswith((recorder.REPO_ROOT / ".local").as_uri())
        monkeypatch.setenv(ARTIFACT_ROOT_ENV, str(tmp_path / "art"))
        assert location(uri, "configured") == (tmp_path / "art" / "configured").as_uri()
