"""The tracking store is checked before anything starts: a store that is down is one line within seconds, whatever
its kind (MLflow server, database server, SQLite file); a store that answers, even with an error status, passes.
Real sockets and a real HTTP server on loopback; no MLflow involved."""
import http.server
import socket
import threading

import pytest

from benchmarks.faults import closed_port
from jobs.recording.tracking_check import TrackingUnreachable, check_tracking_store


@pytest.fixture()
def http_server():
    """An HTTP server on loopback that answers /health with 200 and everything else with 404."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_server_that_answers_passes_even_with_an_error_status(http_server):
    check_tracking_store(http_server)
    check_tracking_store(http_server + "/behind/a/proxy")  # /behind/a/proxy/health is a 404: still an answer


def test_a_server_that_is_down_is_one_line_naming_it():
    uri = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(TrackingUnreachable) as caught:
        check_tracking_store(uri, timeout_s=2)
    message = str(caught.value)
    assert message.startswith(f"MLflow tracking server {uri} cannot be reached (connection refused within 2 s)")
    assert "--tracking-uri" in message and "\n" not in message


def test_a_server_that_accepts_but_never_answers_times_out():
    with socket.socket() as silent:  # listens, never accepts or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(TrackingUnreachable, match=r"cannot be reached \(no answer within 0.5 s\)"):
            check_tracking_store(uri, timeout_s=0.5)


def test_a_database_server_is_checked_by_its_port_and_its_password_is_not_printed():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        check_tracking_store(f"postgresql+psycopg2://mlflow:secret@127.0.0.1:{listening.getsockname()[1]}/mlflow")
    port = closed_port()
    with pytest.raises(TrackingUnreachable) as caught:
        check_tracking_store(f"postgresql+psycopg2://mlflow:secret@127.0.0.1:{port}/mlflow", timeout_s=2)
    assert "secret" not in str(caught.value)
    assert f"cannot be reached at 127.0.0.1:{port} (connection refused within 2 s)" in str(caught.value)
    assert "postgresql+psycopg2://mlflow:***@127.0.0.1" in str(caught.value)


def test_a_sqlite_store_needs_a_folder_it_can_create(tmp_path):
    check_tracking_store(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'mlflow.db'}")
    assert not (tmp_path / "new").exists(), "the check creates nothing"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(TrackingUnreachable, match="cannot create or write .*a-file.*not a folder"):
        check_tracking_store(f"sqlite:///{blocker / 'mlflow.db'}")


def test_stores_it_cannot_check_are_left_to_mlflow(tmp_path):
    check_tracking_store(tmp_path.as_uri())  # file:
    check_tracking_store("databricks")
    check_tracking_store("sqlite:///:memory:")


def test_the_demo_says_the_store_is_down_in_one_line_before_any_run(capsys):
    from analysis.demo import main as demo

    uri = f"http://127.0.0.1:{closed_port()}"
    assert demo(["--tracking-uri", uri, "--duration", "4"]) == 4
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: MLflow tracking server {uri} cannot be reached"), lines
