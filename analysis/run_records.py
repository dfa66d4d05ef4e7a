"""Finished runs' summaries as a file in the repository, so a read-out over many sessions' runs survives its stores.

Why: a suite that needs hours of Spark (the bursty suite: 60 runs of 3.5 min for its goals) is measured over more
than one session, and a local MLflow store does not outlive the machine it was on; a fresh clone has none at all.
The read-outs that publish goals (`benchmarks.bursty_goals --record FILE`) therefore merge the runs of the parents
they are given into a CSV record beside the page that quotes them, and read the record back with them. Each row is
one run, as `analysis.runs.load_runs` reads it (its summary metrics, no events and no trace data), plus where it
came from: its parent run, when it started, the code revision it ran and the machine its suite ran on. A run is
identified by its MLflow run id: merging the same parent again replaces its rows, never duplicates them.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd

from analysis.runs import ORACLE_COLUMNS, SUMMARY_METRICS

RECORD_COLUMNS = ("run_id", "parent_run_id", "started", "revision", "machine", "status", "config", "controller",
                  "workload", "seed", "slo_target", "slo_latency_s", *SUMMARY_METRICS, "predictor", "trigger_phase_s")


class BadRecord(ValueError):
    """A record file this code cannot read as runs: named with the file and what is wrong."""


def to_record(runs: pd.DataFrame, parent_run_id: str, machine: str) -> pd.DataFrame:
    """`runs` (load_runs' table for one parent) as record rows."""
    out = runs.drop(columns=[c for c in ORACLE_COLUMNS if c in runs], errors="ignore").copy()
    out["parent_run_id"] = parent_run_id
    out["machine"] = machine
    out["started"] = [dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
                      if pd.notna(ms) else "" for ms in out.get("start_time", pd.Series(dtype=float))]
    out["revision"] = out["revision"] if "revision" in out else ""
    return out.reindex(columns=list(RECORD_COLUMNS))


def read_record(path: Path) -> pd.DataFrame:
    """The record's rows; an empty table where the file does not exist yet."""
    if not path.exists():
        return pd.DataFrame(columns=list(RECORD_COLUMNS))
    try:
        table = pd.read_csv(path, dtype={"run_id": str, "parent_run_id": str, "revision": str, "config": str})
    except (ValueError, pd.errors.ParserError) as exc:
        raise BadRecord(f"{path}: not a CSV of runs ({exc})") from None
    missing = [c for c in ("run_id", "status", "config", "controller", "workload", "seed") if c not in table]
    if missing:
        raise BadRecord(f"{path}: column(s) {', '.join(missing)} missing (a record has {', '.join(RECORD_COLUMNS)})")
    duplicated = table["run_id"][table["run_id"].duplicated()]
    if len(duplicated):
        line = int(duplicated.index[0]) + 2  # the header is line 1
        raise BadRecord(f"{path}, line {line}: run {duplicated.iloc[0]} is recorded twice")
    table["seed"] = pd.to_numeric(table["seed"], errors="coerce").astype("Int64")
    return table.reindex(columns=list(RECORD_COLUMNS))


def merge(record: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The record with `new`'s runs added; a run already recorded is replaced by its newer reading."""
    kept = record[~record["run_id"].isin(new["run_id"])]
    parts = [part for part in (kept, new) if len(part)]
    merged = pd.concat(parts, ignore_index=True) if parts else new
    return merged.sort_values(["workload", "config", "seed", "started"], ignore_index=True).reindex(
        columns=list(RECORD_COLUMNS))


def write_record(path: Path, record: pd.DataFrame) -> None:
    """Replace the file atomically: an interrupted write leaves the old record whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    record.to_csv(tmp, index=False, float_format="%.6g")
    tmp.replace(path)
