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
    _empty_mlflow_store, kafka_broker, mlflow_client, new_tracking_uri, standalone_cluster, tracking_uri)


# runs started by tests check their SLO against no machine's calibration unless a test gives one (jobs.floor)
os.environ["ELASTIC_CALIBRATION"] = str(ROOT / "tests" / "no-calibration-here.yaml")


def pytest_collection_modifyitems(items):
    java = shutil.which("java") or (os.environ.get("JAVA_HOME")
                                    and Path(os.environ["JAVA_HOME"], "bin", "java").exists())
    if java:
        return
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.skip(reason="Java 17 is required for Spark tests (not found)"))
