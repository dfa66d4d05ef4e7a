"""The decision-walk profiler counts, per file, the calls made while a thread is inside the entry function, and
nothing outside it or outside the project (no Spark)."""
import sys
import threading
from pathlib import Path

from studies.decision_walk import WalkProfiler


def _load(folder: Path, name: str, source: str):
    path = folder / f"{name}.py"
    path.write_text(source)
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def test_calls_inside_the_entry_are_counted_per_file_and_calls_outside_it_are_not(tmp_path):
    helper = _load(tmp_path, "helper", "def twice(x):\n    return inner(x) + inner(x)\n\ndef inner(x):\n    return x\n")
    entry = _load(tmp_path, "batch", "def __call__(f, x):\n    return f(x)\n")
    outside = tmp_path.parent / "elsewhere.py"  # a file outside the project root
    other: dict = {}
    exec(compile("def ignored(x):\n    return x\n", str(outside), "exec"), other)
    profiler = WalkProfiler(entry=("__call__", str(tmp_path / "batch.py")), root=tmp_path)
    sys.setprofile(profiler)
    try:
        helper["twice"](1)  # before the entry: not counted
        entry["__call__"](helper["twice"], 2)
        entry["__call__"](other["ignored"], 3)
    finally:
        sys.setprofile(None)
    assert dict(profiler.calls) == {"helper.py": 3}, profiler.calls


def test_each_thread_keeps_its_own_depth(tmp_path):
    helper = _load(tmp_path, "helper", "def one(x):\n    return x\n")
    entry = _load(tmp_path, "batch", "def __call__(f, x):\n    return f(x)\n")
    profiler = WalkProfiler(entry=("__call__", str(tmp_path / "batch.py")), root=tmp_path)
    threading.setprofile(profiler)
    try:
        worker = threading.Thread(target=entry["__call__"], args=(helper["one"], 1))
        worker.start()
        worker.join()
        outside = threading.Thread(target=helper["one"], args=(2,))
        outside.start()
        outside.join()
    finally:
        threading.setprofile(None)
    assert dict(profiler.calls) == {"helper.py": 1}, profiler.calls
