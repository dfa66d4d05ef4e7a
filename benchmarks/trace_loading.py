"""Trace loading benchmark: the vectorised rate.csv loader against the line-by-line parser, side by side.

    python -m benchmarks.trace_loading        (about 3 minutes on 2 cores; no Spark)

Files: a generated rate.csv of 2,000,000 data lines (1 s buckets, seeded Poisson counts, about 20 MB) in a temporary
folder, and the largest real trace of ../shared/traces when present. Both loaders are the uncached functions
(`workloads.traces.read_rate_csv` and `read_rate_csv_lines`; `load_trace` caches by path, time and size), timed
alternately in each repetition so that a change of load on the machine falls on both. Each load reads the file,
hashes it and validates every row; both must give the same Trace (checked once per file before timing).
Goal: the vectorised loader >= 10x faster than the line-by-line parser on large files.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from workloads.traces import read_rate_csv, read_rate_csv_lines, traces_dir

LOADERS = {"line by line": read_rate_csv_lines, "vectorised": read_rate_csv}


def generate(path: Path, lines: int, seed: int = 23) -> Path:
    """A valid rate.csv of `lines` data lines: t = 0, 1, 2, ... s and Poisson(50) counts, the same for a seed."""
    counts = np.random.default_rng(seed).poisson(50, lines)
    with path.open("w") as out:
        out.write("t_seconds,events\n")
        for start in range(0, lines, 100_000):
            chunk = counts[start : start + 100_000]
            out.write("".join(f"{start + i},{c}\n" for i, c in enumerate(chunk.tolist())))
    return path


def largest_shared_trace() -> Path | None:
    found = list(traces_dir().glob("*/rate.csv")) if traces_dir().is_dir() else []
    return max(found, key=lambda p: p.stat().st_size) if found else None


def same(a, b) -> bool:
    return (a.sha256 == b.sha256 and a.bucket_s == b.bucket_s and a.t0_s == b.t0_s
            and a.counts.dtype == b.counts.dtype and np.array_equal(a.counts, b.counts))


def measure(path: Path, repetitions: int) -> dict[str, list[float]]:
    """Seconds per load for each loader, alternating which goes first."""
    seconds: dict[str, list[float]] = {name: [] for name in LOADERS}
    for rep in range(repetitions):
        order = list(LOADERS) if rep % 2 == 0 else list(reversed(LOADERS))
        for name in order:
            start = time.perf_counter()
            LOADERS[name](path)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.trace_loading", description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=2_000_000, help="data lines of the generated rate.csv")
    p.add_argument("--repetitions", type=int, default=5, help="loads of each file by each loader")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trace-loading-") as folder:
        start = time.perf_counter()
        files = {f"generated, {args.lines:,} lines": generate(Path(folder) / "rate.csv", args.lines)}
        print(f"generated {args.lines:,} lines ({files[next(iter(files))].stat().st_size / 2**20:.1f} MiB) in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        shared = largest_shared_trace()
        if shared is None:
            print(f"no shared trace found in {traces_dir()}: the generated file only", flush=True)
        else:
            files[f"shared {shared.parent.name}"] = shared
        rows = []
        for label, path in files.items():
            reference, fast = read_rate_csv_lines(path), read_rate_csv(path)  # warm-up (imports) and the check
            if not same(reference, fast):
                print(f"{label}: the two loaders give different Traces", file=sys.stderr)
                return 1
            seconds = measure(path, args.repetitions)
            medians = {name: statistics.median(s) for name, s in seconds.items()}
            rows.append((label, len(reference.counts), medians["line by line"], medians["vectorised"]))
            for name, s in seconds.items():
                print(f"  {label:<40} {name:<13} " + " ".join(f"{x:7.3f}" for x in s), flush=True)
    print()
    print(f"{'file':<40} {'rows':>10} {'line by line s':>15} {'vectorised s':>13} {'ratio':>7}  goal >= 10x")
    for label, n, slow, fast in rows:
        print(f"{label:<40} {n:>10,} {slow:>15.3f} {fast:>13.3f} {slow / fast:>6.1f}x  "
              f"{'met' if slow / fast >= 10 else 'MISSED'}")
    print(f"(median of {args.repetitions} loads each, loaders alternating)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
