"""The cluster's readiness probe against a master UI that is up but not answering JSON yet.

CI once saw the standalone master's web UI answer `/json/` with an empty 200 while it started; the probe raised
JSONDecodeError out of the fixture instead of asking again, and all four cluster tests errored in setup."""
import http.server
import threading

import pytest

from deploy.spark_cluster import StandaloneCluster, free_port


class _Answers(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def master_ui():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _cluster(tmp_path, ui_port):
    return StandaloneCluster(state_dir=tmp_path, port=free_port(), ui_port=ui_port)


def test_an_empty_answer_is_not_ready_yet(master_ui, tmp_path):
    _Answers.body = b""
    cluster = _cluster(tmp_path, master_ui.server_address[1])
    assert cluster._master_up() is False and cluster.alive_workers() == []


def test_a_json_answer_is_read(master_ui, tmp_path):
    _Answers.body = b'{"status": "ALIVE", "workers": [{"state": "ALIVE", "cores": 1}, {"state": "DEAD"}]}'
    cluster = _cluster(tmp_path, master_ui.server_address[1])
    assert cluster._master_up() is True and cluster.alive_workers() == [{"state": "ALIVE", "cores": 1}]


def test_nothing_listening_is_not_ready(tmp_path):
    cluster = _cluster(tmp_path, free_port())
    assert cluster._master_up() is False and cluster.alive_workers() == []
