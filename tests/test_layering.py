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


def _runtime_imports(path: Path) -> set[str]:
    """The project modules `path` imports when it runs (lazy imports included; `if TYPE_CHECKING:` blocks not)."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(inner) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for inner in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def test_controllers_have_no_import_cycle():
    """Each controllers module can be read without the ones that import it: a cycle means two modules that are one
    role split in two, or a helper in the wrong place (a package importing its own submodules is not a cycle)."""
    modules = {}
    for path in sources("controllers"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {name: {m for m in _runtime_imports(path) if m in modules and m != name
                    and not (path.name == "__init__.py" and m.startswith(name + "."))}
             for name, path in modules.items()}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := walk(nxt, path + [nxt])):
                return cycle
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := walk(name, [name])):
            pytest.fail("import cycle: " + " -> ".join(cycle))
