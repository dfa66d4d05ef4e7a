"""The PostgreSQL server the server configuration runs on (deploy/postgres.py): a real cluster from the machine's
packages on a spare port, never the machine's own; and what `start` says where the port is someone else's."""
import socket
import threading

import pytest

from deploy import postgres
from deploy.spark_cluster import free_port
from tests.services import skip_or_fail

pytestmark = pytest.mark.spark  # starts real PostgreSQL servers: with the server tests, not beside the timing runs


@pytest.fixture
def packages():
    if postgres.bin_dir() is None:
        skip_or_fail("postgres", "no PostgreSQL server packages (initdb, pg_ctl): "
                                 "`python -m deploy.postgres start --install` installs them")


def test_a_private_cluster_serves_trust_on_loopback_survives_an_outage_and_leaves_nothing(packages):
    import psycopg2

    port = free_port()
    with postgres.private_cluster(port, databases=("mlflow",)) as outage:
        assert postgres.serving(port)
        with psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="mlflow") as conn:
            with conn.cursor() as cur:
                cur.execute("create table t (x int); insert into t values (7)")
        outage(0.1)
        with psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="mlflow") as conn:
            with conn.cursor() as cur:
                cur.execute("select x from t")
                assert cur.fetchall() == [(7,)]
        folder = postgres.tempfile.gettempdir()
        scratch = [p for p in postgres.Path(folder).glob(f"elastic-postgres-{port}-*")]
        assert len(scratch) == 1
    assert not postgres.serving(port)
    assert not scratch[0].exists(), "the throw-away cluster's folder is removed"


def test_start_and_stop_run_a_server_of_its_own_and_stop_only_that(packages, tmp_path):
    port = free_port()
    data = postgres.Path(postgres.tempfile.mkdtemp(prefix="elastic-postgres-test-")) / "data"
    try:
        said = postgres.start(port, data)
        assert f"started on 127.0.0.1:{port}" in said and postgres.serving(port)
        assert "already serves" in postgres.start(port, data), "a second start leaves the server as it is"
        assert "stopped" in postgres.stop(port, data)
        assert not postgres.serving(port)
        assert "not running" in postgres.stop(port, data)
    finally:
        postgres.stop(port, data)
        postgres.shutil.rmtree(data.parent, ignore_errors=True)


def test_a_port_taken_by_something_else_is_named_before_anything_starts(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def refuse():  # accept and hang up, as a server of another protocol might
            for _ in range(4):
                try:
                    conn, _ = listener.accept()
                    conn.close()
                except OSError:
                    return
        threading.Thread(target=refuse, daemon=True).start()
        with pytest.raises(postgres.PostgresError, match=rf"127.0.0.1:{port} is taken by something that is not"):
            postgres.start(port, tmp_path / "data")
    assert not (tmp_path / "data").exists(), "nothing initialised for a port it cannot have"


def test_stop_without_a_cluster_of_its_own_says_so(tmp_path):
    assert "nothing to stop" in postgres.stop(free_port(), tmp_path / "never-made")
