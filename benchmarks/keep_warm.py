"""What a silence of more than a minute costs the batch after it, with and without the keep-warm pings.

    python -m benchmarks.keep_warm            about 5 minutes on a 2-core machine (--rounds 2: ABBA, about 10)

Spark stops its idle Python workers after a minute with no activity (jobs/keep_warm.py). The benchmark runs the
same job twice, one after the other, as a user does (`python -m jobs.run`, local[4], a throw-away MLflow store):
an on/off trace (20 s at 1,500 events/s, 80 s of silence, 20 s at 1,500 events/s) at fixed degrees (static, every
operator at 2, so the batches are alike but for the silence), once with `--keep-warm 0` (off) and once with
the default. It prints, per run, the median batch duration of the load before the silence and the first two
batches after it, each ÷ that median; the result is the ratio of the first batch after the silence, off ÷ on,
both measured in the same session. Ratios, not absolute seconds: the machine is shared and noisy.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
LOAD_S, SILENCE_S, RATE = 20, 80, 1500


def on_off_trace(folder: Path) -> Path:
    """A rate file and a workload on it: load, a silence longer than Spark's idle timeout, load again."""
    rows = [(t, RATE if t < LOAD_S or t >= LOAD_S + SILENCE_S else 0) for t in range(2 * LOAD_S + SILENCE_S)]
    trace = folder / "rate.csv"
    trace.write_text("t_seconds,events\n" + "".join(f"{t},{n}\n" for t, n in rows))
    workload = folder / "on-off.yaml"
    workload.write_text(f"name: keep-warm-bench\nduration_s: {2 * LOAD_S + SILENCE_S}\nseed: 1\n"
                        f"trace: {{path: {trace}}}\n")
    return workload


def one_run(workload: Path, keep_warm_s: float | None, folder: Path, tag: str) -> pd.DataFrame:
    """The run's batch table (its artifact), from a job run as a user starts it."""
    out = folder / f"run-{tag}"
    args = [sys.executable, "-m", "jobs.run", "--controller", "static", "--param", "degree=2", "--workload",
            str(workload), "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "--experiment", "keep-warm-bench",
            "--output-dir", str(out), "--quiet"]
    if keep_warm_s is not None:
        args += ["--keep-warm", str(keep_warm_s)]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"run {tag} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return pd.read_parquet(out / "artifacts" / "batches.parquet")  # the job leaves it there (jobs.calibrate reads it so)


def after_silence(batches: pd.DataFrame) -> tuple[float, float, float, float]:
    """(median batch s before the silence, first and second batch after it ÷ that median, the silence's s)."""
    gap = int(batches["idle_after_s"].idxmax())
    before = batches.loc[: gap - 1, "batch_duration_s"].iloc[2:]  # past the run's first batches
    median = statistics.median(before)
    first, second = batches.loc[gap + 1, "batch_duration_s"], batches.loc[gap + 2, "batch_duration_s"]
    return median, first / median, second / median, float(batches.loc[gap, "idle_after_s"])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=1, help="1: off, on; 2: off, on, on, off (ABBA)")
    args = p.parse_args(argv)
    order = ["off", "on"] if args.rounds == 1 else ["off", "on", "on", "off"]
    results: dict[str, list[tuple[float, float, float, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="keep-warm-bench-") as tmp:
        folder = Path(tmp)
        workload = on_off_trace(folder)
        for i, mode in enumerate(order):
            batches = one_run(workload, 0.0 if mode == "off" else None, folder, f"{i}-{mode}")
            results[mode].append(after_silence(batches))
            median, first, second, idle = results[mode][-1]
            print(f"keep-warm {mode:3}: silence {idle:5.1f} s; batches before it median {median:.3f} s; "
                  f"the first after it {first:.2f}x that, the second {second:.2f}x", flush=True)
    off = statistics.mean(r[1] for r in results["off"])
    on = statistics.mean(r[1] for r in results["on"])
    print(f"\nfirst batch after the silence, ÷ the median before it: off {off:.2f}x, on {on:.2f}x; "
          f"off ÷ on = {off / on:.2f}")


if __name__ == "__main__":
    main()
