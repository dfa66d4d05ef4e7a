"""The runs a goal read-out is over: the given suites' runs from MLflow, kept in a record file in the repository
(analysis/run_records.py) so that a read-out survives the store, less the runs a re-run supersedes; and where they
came from. Shared by the read-outs that publish goals (benchmarks.bursty_goals, benchmarks.placement_goals).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Callable

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis import run_records
from analysis.runs import SUMMARY_METRICS, load_runs
from jobs.recording.machine import describe_machine, machine_tags
from studies.provenance import suite_provenance


def collect(tracking_uri: str | None, parents: list[str], exclude: tuple[str, ...] = (),
            record: Path | None = None) -> pd.DataFrame:
    """The runs the read-out is over: those of `parents` in the store, merged into the `record` file's runs when one
    is given (a run read again replaces its recorded row) and written back, less the runs in `exclude` (runs a later
    re-run of the same cases supersedes, say after a fix: they stay in the store, named in the command that leaves
    them out, and leave the record)."""
    tables = []
    if parents:
        client = MlflowClient(tracking_uri)
        with warnings.catch_warnings():  # a metric no run of a parent has is an all-NA column there: expected
            warnings.simplefilter("ignore", FutureWarning)
            for parent in parents:
                machine = suite_provenance(client, parent).machine
                if machine.startswith("machine not recorded"):  # a suite opened before parents were tagged
                    machine = f"{machine}; read out on {describe_machine(machine_tags())}"
                tables.append(run_records.to_record(load_runs(tracking_uri, parent_run_id=parent), parent, machine))
    new = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=list(run_records.RECORD_COLUMNS))
    runs = run_records.merge(run_records.read_record(record), new) if record is not None else new
    unknown = sorted(set(exclude) - set(runs["run_id"]))
    if unknown:
        raise SystemExit(f"--exclude-run-id: {', '.join(unknown)} not a run of the given parents"
                         + (" or the record" if record is not None else ""))
    runs = runs[~runs["run_id"].isin(exclude)].reset_index(drop=True)
    if record is not None:
        run_records.write_record(record, runs)
    if runs.empty:
        raise SystemExit("no runs: give --parent-run-id, or --record with a file that holds runs")
    for column in (*SUMMARY_METRICS, "trigger_phase_s"):  # a record's empty cells read back as text or NA
        if column in runs:
            runs[column] = pd.to_numeric(runs[column], errors="coerce")
    return runs


def provenance(runs: pd.DataFrame) -> list[str]:
    """Where the runs come from: per parent (suite), its date, the code revisions its runs ran and its machine."""
    lines = ["", f"measured: {len(runs)} runs from {runs['parent_run_id'].nunique()} suite(s)"]
    for parent, group in runs.groupby("parent_run_id", sort=False):
        dates = sorted({str(d)[:10] for d in group["started"] if isinstance(d, str) and d})
        revisions = sorted({str(r)[:12] + ("-dirty" if str(r).endswith("-dirty") else "")
                            for r in group["revision"] if isinstance(r, str) and r})
        lines.append(f"  {parent}: {len(group)} runs, {', '.join(dates) or 'date not recorded'}, code "
                     f"{', '.join(revisions) or 'not recorded'}; {group['machine'].iloc[0]}")
    return lines


def add_run_arguments(p: argparse.ArgumentParser, suite: str, record_example: str) -> None:
    """The read-outs' common options: the suites' parents, the record file, the runs left out, the store."""
    p.add_argument("--parent-run-id", action="append", default=[],
                   help=f"a run of the {suite} suite (its parent); repeatable")
    p.add_argument("--record", type=Path, default=None,
                   help=f"a CSV of runs kept in the repository ({record_example}): the parents' runs are merged "
                        "into it and the read-out is over all its runs, also those measured in earlier sessions")
    p.add_argument("--exclude-run-id", action="append", default=[],
                   help="leave this run out (one a re-run of the same case supersedes); repeatable")
    p.add_argument("--tracking-uri", default=None)


def readout_main(argv: list[str] | None, module: str, doc: str, suite: str, record_example: str,
                 goals: Callable[[str, list[str], tuple[str, ...], Path | None], list[str]]) -> int:
    """A goal read-out's command line: the common options, then `goals(tracking_uri, parents, exclude, record)`'s
    lines printed; a record file that cannot be read is a one-line error (exit 2)."""
    from jobs.recording.recorder import default_tracking_uri

    p = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n\n")[0])
    add_run_arguments(p, suite, record_example)
    args = p.parse_args(argv)
    if not args.parent_run_id and args.record is None:
        p.error("give --parent-run-id, --record, or both")
    try:
        lines = goals(args.tracking_uri or default_tracking_uri(), args.parent_run_id, tuple(args.exclude_run_id),
                      args.record)
    except run_records.BadRecord as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0

