"""The latency floor a run's service level is checked against before Spark starts: the fixed cost of every
micro-batch on this machine and master, as the last `python -m jobs.calibrate` measured it.

Every event waits for at least one batch, and a batch costs its fixed overhead before any operator work (planning,
stage launches, Python workers, the sink's commit: docs/benchmarks.md), so a latency bound below that overhead can
be met by no event, whatever the controller does. Saying so before a run is cheaper than a run that fails its SLO
for a reason no controller can change. Without a calibration of the run's master there is no floor to check.
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import yaml

from jobs.recording.recorder import LOCAL_STATE

CALIBRATION = LOCAL_STATE / "calibration" / "oracle.yaml"  # where jobs.calibrate writes by default
# a calibration kept elsewhere (the tests point it at their own files)
CALIBRATION_ENV = "ELASTIC_CALIBRATION"


def this_masters_calibration(master: str | None, path: Path | None = None
                             ) -> tuple[dict[str, Any], dict[str, Any], Path, str] | None:
    """(params, measured, path, when) of the calibration at `path` ($ELASTIC_CALIBRATION, else jobs.calibrate's
    default file) when it was measured on `master`; None when there is none, it is unreadable or it was measured
    elsewhere. The one reader of that file before a run: its latency floor (here) and its controllers' cost prior
    (jobs.cost_prior) check the same master the same way."""
    path = Path(path or os.environ.get(CALIBRATION_ENV) or CALIBRATION)
    try:
        raw: Any = yaml.safe_load(path.read_text())
        params, measured = dict(raw["params"]), dict(raw.get("calibration", {}).get("measured", {}))
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError, AttributeError):
        return None
    where = str(measured.get("master") or "")
    if not where or (master or "").strip() != where.strip():
        return None
    at = measured.get("at")
    when = (dt.datetime.fromtimestamp(float(at), dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            if isinstance(at, (int, float)) else "an unknown time")
    return params, measured, path, when


def measured_floor(master: str | None, path: Path | None = None) -> tuple[float, str] | None:
    """(floor in seconds, how it was measured) from this master's calibration (`this_masters_calibration`); None
    without one, or where it has no usable batch overhead."""
    found = this_masters_calibration(master, path)
    if found is None:
        return None
    params, measured, path, when = found
    try:
        floor = float(params["batch_overhead_s"])
    except (TypeError, KeyError, ValueError):
        return None
    return floor, (f"the fixed cost of every micro-batch, measured by `python -m jobs.calibrate` on "
                   f"{measured['master']} at {when} ({path})")
