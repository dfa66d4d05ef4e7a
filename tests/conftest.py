"""Test set-up shared by every folder: the repository on sys.path, the shared fixtures, and the `spark` marker.

A module that runs real Spark says so with `pytestmark = pytest.mark.spark`; without Java such tests are skipped
with that reason, so a machine without Java still runs everything else. A module whose checks depend on how fast its
run went (how many batches ran, when an action came) is also marked `timing`: `make test` runs the other modules two
at a time and these alone, afterwards (Makefile).
"""
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support import (  # noqa: E402,F401  (fixtures)
    _empty_mlflow_store, mlflow_client, new_tracking_uri, standalone_cluster, tracking_uri)


# The slowest modules (each several minutes of Airflow runs with Spark) start first, one per worker: `make test`
# runs modules two at a time (pytest-xdist --dist loadfile, in collection order), so a long module collected late
# would finish alone at the end and set the wall time.
SLOWEST_FIRST = ("tests/dags/test_dags.py", "tests/dags/test_tuning_dag.py")


def pytest_collection_modifyitems(items):
    def rank(item) -> int:
        path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        return SLOWEST_FIRST.index(path) if path in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)  # stable: every other module keeps its order
    java = shutil.which("java") or (os.environ.get("JAVA_HOME")
                                    and Path(os.environ["JAVA_HOME"], "bin", "java").exists())
    if java:
        return
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.skip(reason="Java 17 is required for Spark tests (not found)"))
