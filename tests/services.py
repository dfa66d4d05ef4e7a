"""What a test does when a service it needs is absent: skip with the reason on a user's machine, where the embedded
default needs none of them, and fail where the run requires the services.

`.ci/run` starts them (`make services`) and sets ELASTIC_REQUIRE_SERVICES=postgres,jars, so a CI run in which a server
test would have skipped goes red instead of proving less. The names: `postgres` (the server on 127.0.0.1:5432,
deploy/postgres.py) and `jars` (the Java artifacts resolved into .local/jars, deploy/jars.py).
"""
from __future__ import annotations

import os

import pytest

KNOWN = frozenset({"postgres", "jars"})


def required() -> set[str]:
    names = {n.strip() for n in os.environ.get("ELASTIC_REQUIRE_SERVICES", "").split(",") if n.strip()}
    unknown = names - KNOWN
    if unknown:
        raise ValueError(f"ELASTIC_REQUIRE_SERVICES: unknown service(s) {sorted(unknown)}; known: {sorted(KNOWN)}")
    return names


def skip_or_fail(service: str, reason: str) -> None:
    if service in required():
        pytest.fail(f"{reason} (ELASTIC_REQUIRE_SERVICES requires {service})", pytrace=False)
    pytest.skip(reason)
