"""Throw-away databases on the PostgreSQL server the server-configuration tests use (127.0.0.1:5432, user postgres,
trust auth: what `make services` starts, deploy/postgres.py); a test that needs it skips, saying so, where it is
absent -- and fails instead where the run requires the services (CI: ELASTIC_REQUIRE_SERVICES, tests/services.py)."""
from __future__ import annotations

import socket
import uuid
from contextlib import contextmanager
from typing import Iterator

from tests.services import skip_or_fail

SKIP_REASON = ("needs the PostgreSQL server on 127.0.0.1:5432 (user postgres, trust auth); not reachable: "
               "`make services` starts one")


def reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def temporary_databases(*kinds: str) -> Iterator[list[str]]:
    """One fresh database per kind (their names), dropped afterwards; skips the test without the server."""
    if not reachable():
        skip_or_fail("postgres", SKIP_REASON)
    import psycopg2

    names = [f"elastic_test_{kind}_{uuid.uuid4().hex[:8]}" for kind in kinds]
    admin = psycopg2.connect(host="127.0.0.1", user="postgres", dbname="postgres")
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            for name in names:
                cur.execute(f'CREATE DATABASE "{name}"')
        yield names
    finally:
        with admin.cursor() as cur:
            for name in names:
                cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
