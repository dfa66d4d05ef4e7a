"""Measure what a rescale by restart costs a native query on this machine and master, and fit it.

    python -m jobs.calibrate_restart --master local[2]        # about 3 minutes; writes .local/calibration/restart.yaml

For each state size (--sizes-mb, default 1, 10 and 100 MB) a fresh stateful query (jobs.native.restart_measure)
is restarted plainly and rescaled by repartition, in turn, twice: 2 → 2, 2 → 4, 4 → 4, 4 → 2. The fit
(controllers.restart_cost): a rescale's downtime = fixed + per MB × the state's size as Spark's progress reports it
(RocksDB's SST files), least squares over every rescale; the plain restarts' median beside it. Written to
`.local/calibration/restart.yaml` (with where and when it was measured) and recorded as an MLflow run (tag
kind=calibration-restart, the fit as params, every restart as restarts.jsonl). A native run on the same master
reads it and records, for each of its restarts, the downtime the fit expected beside the one measured.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import yaml

from controllers.restart_cost import RestartCost, fit_restart_cost
from jobs.config import InputError, RunConfig
from jobs.recording.recorder import LOCAL_STATE

RESTART_CALIBRATION = LOCAL_STATE / "calibration" / "restart.yaml"
RESTART_CALIBRATION_ENV = "ELASTIC_RESTART_CALIBRATION"  # a calibration kept elsewhere (the tests use their own)
SEQUENCE = [(2, False), (4, True), (4, False), (2, True)] * 2  # (partitions after, repartition)


def calibrate_restart(master: str, sizes_mb: Sequence[float], out: Path, tracking_uri: str | None,
                      experiment: str, sequence=SEQUENCE) -> RestartCost:
    from jobs.native.restart_measure import measure_restarts
    from jobs.native.run import NATIVE_SETTINGS
    from jobs.recording.recorder import RunRecorder, default_tracking_uri
    from jobs.recording.run_record import write_jsonl
    from jobs.spark_session import package_code, start_spark

    config = RunConfig("static", {}, "constant", master=master, quiet=True).validate()
    started = time.time()
    results = []
    with tempfile.TemporaryDirectory(prefix="restart-calibration-") as tmp:
        spark = start_spark(config, package_code(Path(tmp) / "code.zip"), NATIVE_SETTINGS)
        try:
            effective = spark.sparkContext.master
            for size in sizes_mb:
                results.append(measure_restarts(spark, size, sequence, Path(tmp) / f"size-{size:g}",
                                                log=lambda line: print(line, flush=True)))
        finally:
            spark.stop()
    restarts = [r for res in results for r in res["restarts"]]
    when = dt.datetime.fromtimestamp(started, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cost = fit_restart_cost([(r["state_mb"], r["downtime_s"]) for r in restarts if r["repartitioned"]],
                            [r["downtime_s"] for r in restarts if not r["repartitioned"]],
                            source=f"python -m jobs.calibrate_restart on {effective} at {when}")
    lost = sum(res["lost"] for res in results)
    duplicated = sum(res["duplicated"] for res in results)
    if lost or duplicated:
        raise RuntimeError(f"the calibration's restarts lost {lost} and duplicated {duplicated} output rows; "
                           "nothing written")
    measured = {"master": effective, "at": started, "sizes_mb": list(sizes_mb), "restarts": len(restarts)}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".tmp")
    tmp_out.write_text(yaml.safe_dump({"restart_cost": cost.to_dict(), "measured": measured}, sort_keys=False))
    tmp_out.rename(out)  # a reader never sees half a file
    recorder = RunRecorder(tracking_uri or default_tracking_uri(), experiment, f"restart calibration {effective}",
                           tags={"kind": "calibration-restart"})
    recorder.log_params({f"restart_cost.{key}": value for key, value in {
        **cost.to_dict(), "master": effective, "sizes_mb": ",".join(f"{s:g}" for s in sizes_mb),
        "restarts": len(restarts)}.items()})
    with tempfile.TemporaryDirectory() as tmp:
        write_jsonl(Path(tmp) / "restarts.jsonl", restarts)
        recorder.log_artifact(Path(tmp) / "restarts.jsonl")
    recorder.log_artifact(out, "calibration")
    recorder.finish()
    return cost


def this_masters_restart_cost(master: str | None, path: Path | None = None) -> RestartCost | None:
    """The restart cost measured on `master` ($ELASTIC_RESTART_CALIBRATION, else the default file); None when there
    is none, it is unreadable, or it was measured on another master."""
    path = Path(path or os.environ.get(RESTART_CALIBRATION_ENV) or RESTART_CALIBRATION)
    try:
        raw = yaml.safe_load(path.read_text())
        where = str(raw["measured"]["master"])
        cost = RestartCost(**raw["restart_cost"])
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError):
        return None
    return cost if (master or "").strip() == where.strip() else None


def main(argv: list[str] | None = None) -> int:
    from jobs.recording.recorder import DEFAULT_EXPERIMENT

    p = argparse.ArgumentParser(prog="python -m jobs.calibrate_restart", description=__doc__.split("\n\n")[0])
    p.add_argument("--master", default="local[2]")
    p.add_argument("--sizes-mb", type=float, nargs="+", default=[1.0, 10.0, 100.0],
                   help="state sizes to measure at (MB; at least two for the per-MB part)")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    p.add_argument("--out", type=Path, default=RESTART_CALIBRATION, help="where the fit is written (YAML)")
    args = p.parse_args(argv)
    try:
        if any(s <= 0 for s in args.sizes_mb):
            raise InputError(f"--sizes-mb {args.sizes_mb}: every size must be above 0")
        cost = calibrate_restart(args.master, args.sizes_mb, args.out, args.tracking_uri, args.experiment)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(cost.to_dict(), indent=1))
    print(f"a rescale costs {cost.rescale_fixed_s:.2f} s + {cost.rescale_per_mb_s * 1000:.2f} ms per MB of state; "
          f"a plain restart {cost.plain_restart_s:.2f} s; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
