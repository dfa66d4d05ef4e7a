"""Arrows go one way (ARCHITECTURE.md "Layout"): dags -> analysis -> jobs / simulator -> queries -> controllers /
workloads -> params. A module that imports upward, or product code that imports study code, fails here with the line
to fix.

Imports are read from the source (ast), lazy ones inside functions included: a lazy upward import is still a
dependency.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("params", "controllers", "workloads", "queries", "simulator", "jobs", "deploy", "analysis", "studies",
            "dags", "plugins", "benchmarks")
# what each room may import from the project, besides itself
ALLOWED = {
    "params": set(),
    "controllers": {"params"},
    "workloads": {"params"},
    "queries": {"params", "workloads"},
    "simulator": {"params", "controllers", "workloads"},
    "jobs": {"params", "controllers", "workloads", "queries", "deploy"},
    "deploy": {"params"},
    "analysis": {"params", "controllers", "workloads", "queries", "simulator", "jobs", "deploy"},
    "studies": {"params", "controllers", "workloads", "queries", "simulator", "jobs", "deploy", "analysis"},
    "dags": {"params", "analysis", "deploy"},
    "plugins": {"params", "analysis", "jobs"},
    "benchmarks": set(PACKAGES) - {"benchmarks"},
}
# controllers stay pure: none of these, ever (ARCHITECTURE: no Spark, MLflow, Airflow or I/O)
FORBIDDEN_IN_CONTROLLERS = ("pyspark", "mlflow", "airflow", "requests", "urllib", "subprocess", "socket")


def imports(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def sources(package: str):
    return sorted(p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_room_imports_upward(package):
    wrong = []
    for path in sources(package):
        for line, module in imports(path):
            top = module.split(".")[0]
            if top in PACKAGES and top != package and top not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    assert not wrong, "\n".join(wrong)


def test_controllers_import_no_spark_mlflow_airflow_or_io():
    wrong = [f"{path.relative_to(ROOT)}:{line}: imports {module}"
             for path in sources("controllers") for line, module in imports(path)
             if module.split(".")[0] in FORBIDDEN_IN_CONTROLLERS]
    assert not wrong, "\n".join(wrong)
