"""Which source files a reader follows from one batch's end to the next batch's degrees, measured on a real run.

    python -m studies.decision_walk                          # DS2 with its default guards on `step`, ~40 s
    python -m studies.decision_walk --controller threshold --duration 12

Why: a configuration's effect is read by following one decision (the batch's metrics → the controller → its
guard stages → the actuators → the run's record). Every file on that path is one more a reader opens. The count
is measured rather than guessed: a short local Spark run in this process, with a profiler on every thread; while
the driver handles a batch (`jobs.batch.BatchProcessor.__call__`, where Spark hands the batch to the job), each
Python function that runs is attributed to its file. Files that define nothing the batch calls (constants,
type-only imports) are not counted; neither are files outside the repository (Spark, MLflow, pandas).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ("__call__", str(ROOT / "jobs" / "batch.py"))
VENV = os.sep + ".venv" + os.sep  # the virtual environment `make setup` makes inside the checkout


class WalkProfiler:
    """Counts calls per repository file while a thread is inside `entry` (a function's name and file)."""

    def __init__(self, entry: tuple[str, str] = ENTRY, root: Path = ROOT) -> None:
        self.entry, self.root, self.prefix = entry, root, str(root) + os.sep
        self.calls: Counter[str] = Counter()
        self._depth = threading.local()

    def __call__(self, frame, event, arg) -> None:
        if event not in ("call", "return"):
            return
        code = frame.f_code
        depth = getattr(self._depth, "value", 0)
        if (code.co_name, code.co_filename) == self.entry:
            self._depth.value = depth + (1 if event == "call" else -1)
            return
        if event == "call" and depth > 0 and code.co_filename.startswith(self.prefix) and VENV not in code.co_filename:
            self.calls[os.path.relpath(code.co_filename, self.root)] += 1


def walk(controller: str, workload: str, duration_s: float) -> Counter[str]:
    from jobs.run import main as run_main

    profiler = WalkProfiler()
    with tempfile.TemporaryDirectory(prefix="decision-walk-") as work:
        threading.setprofile(profiler)
        sys.setprofile(profiler)
        try:
            code = run_main(["--controller", controller, "--workload", workload, "--duration", f"{duration_s:g}",
                             "--tracking-uri", f"sqlite:///{Path(work, 'mlflow.db')}", "--experiment", "decision-walk",
                             "--output-dir", str(Path(work, "job")), "--quiet"])
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    if code != 0:
        raise SystemExit(f"the run failed (exit {code}): nothing to count")
    return profiler.calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.decision_walk", description=__doc__.split("\n\n")[0])
    p.add_argument("--controller", default="ds2", help="controller[:param=value,...] (default: ds2)")
    p.add_argument("--workload", default="step")
    p.add_argument("--duration", type=float, default=16.0, help="run length, seconds (default 16)")
    args = p.parse_args(argv)
    calls = walk(args.controller, args.workload, args.duration)
    by_folder: Counter[str] = Counter(Path(f).parts[0] for f in calls)
    print(f"files on one batch's decision walk ({args.controller}, {args.workload}): {len(calls)} "
          f"({', '.join(f'{folder}/ {n}' for folder, n in sorted(by_folder.items()))}), "
          f"{sum(len(Path(ROOT, f).read_text().splitlines()) for f in calls):,} lines in them")
    for name in sorted(calls):
        print(f"  {name:48s} {calls[name]:>8,} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
