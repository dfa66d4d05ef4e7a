"""What a run's start costs with and without the class-data-sharing archive of the driver's classes
(jobs/jvm_archive.py).

    python -m benchmarks.jvm_start [--rounds 3] [--jit c1|default]

One short run of the job (static controller, the `constant` workload for 4 s, its own MLflow store in a temporary
folder) is made alternately without and with the archive (A B A B ...), one run at a time, and the script prints
each run's wall time and the machine's busy CPU-seconds over it (from /proc/stat: the driver JVM, its Python workers
and the job's own process, all of which a run starts), then the ratios of the medians. The runs read the same
schedule, so what differs is the start. `--jit c1` (the default) runs the JVM as `make test` runs its Spark group,
`--jit default` as a user's run does. The archive is built first if there is none (about a minute, not counted).
Linux only (/proc/stat); on a shared machine, run nothing else meanwhile.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jobs.jvm_archive import REPO_ROOT, archive_path, build, jvm_options, short_run

C1 = "-XX:TieredStopAtLevel=1"


def busy_cpu_s() -> float:
    """CPU-seconds the whole machine has spent busy since boot (user, nice, system, irq, softirq, steal)."""
    fields = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def one_run(folder: Path, jvm_opts: str) -> tuple[float, float]:
    env = {**os.environ, "SPARK_SUBMIT_OPTS": jvm_opts}
    cpu, wall = busy_cpu_s(), time.monotonic()
    done = subprocess.run(short_run(folder, "jvm-start"), cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    wall, cpu = time.monotonic() - wall, busy_cpu_s() - cpu
    if done.returncode != 0:
        raise SystemExit(f"a run failed:\n{done.stderr[-2000:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.jvm_start", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="pairs of runs, without and with the archive (default 3)")
    p.add_argument("--jit", choices=("c1", "default"), default="c1")
    args = p.parse_args(argv)
    base = C1 if args.jit == "c1" else ""
    archive = archive_path()
    if not archive.exists():
        build(archive)
    results: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory(prefix="jvm-start-") as tmp:
        for i in range(args.rounds):
            for name, opts in (("without", base), ("with", f"{base} {jvm_options(archive)}".strip())):
                wall, cpu = one_run(Path(tmp) / f"{name}-{i}", opts)
                results[name].append((wall, cpu))
                print(f"round {i + 1} {name:>7} the archive: wall {wall:5.1f} s, busy CPU {cpu:5.1f} s", flush=True)
    med = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
           for name, runs in results.items()}
    print(f"\nmedians over {args.rounds} rounds (JIT {args.jit}): without {med['without'][0]:.1f} s / "
          f"{med['without'][1]:.1f} CPU-s, with {med['with'][0]:.1f} s / {med['with'][1]:.1f} CPU-s")
    print(f"with / without: wall {med['with'][0] / med['without'][0]:.2f}x, "
          f"busy CPU {med['with'][1] / med['without'][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
