"""What the model studies share (the Sousa and Souravlas placement pages): run a scenario matrix or read it back,
record it in MLflow and keep it in the repository, write the page and its figure.

Why a kept table: the models run in a minute, but a page must be regenerable on a fresh clone (no MLflow store) and
say which run it came from; the table holds every run's figures, the model's settings and the MLflow parent's id.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from mlflow.tracking import MlflowClient

from analysis.suite import open_parent, timestamped
from jobs.recording.recorder import DEFAULT_EXPERIMENT, default_tracking_uri


def record(runs: pd.DataFrame, model: Any, tracking_uri: str, experiment: str, name: str) -> str:
    """A finished parent run of kind `placement-reproduction` holding the model's settings and the per-run table."""
    parent = open_parent(tracking_uri, experiment, timestamped(name),
                         {"kind": "placement-reproduction"}, {f"model.{k}": v for k, v in asdict(model).items()})
    client = MlflowClient(tracking_uri)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.csv"
        runs.to_csv(path, index=False)
        client.log_artifact(parent, str(path))
    client.set_terminated(parent, "FINISHED")
    return parent


def parser(prog: str, doc: str, reps: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=reps)
    p.add_argument("--page-only", action="store_true", help="write the page from the kept per-run table")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    return p


def runs_and_provenance(args: argparse.Namespace, kept: Path, model: Any, name: str,
                        run_matrix: Callable[[int, Any], pd.DataFrame],
                        text_columns: tuple[str, ...] = ()) -> tuple[pd.DataFrame, Any, str] | None:
    """Run the matrix and keep it (and record it in MLflow), or with --page-only read the kept table and the model
    it was run with; None when there is no kept table to read."""
    if args.page_only:
        if not kept.exists():
            print(f"error: {kept} does not exist; run without --page-only first", file=sys.stderr)
            return None
        runs = pd.read_csv(kept, dtype={c: str for c in (*text_columns, "mlflow_parent")}, keep_default_na=False)
        model = type(model)(**{f: type(getattr(model, f))(runs[f"model.{f}"].iloc[0]) for f in asdict(model)})
        return runs, model, (f"MLflow parent run `{runs['mlflow_parent'].iloc[0]}` ({runs['date'].iloc[0]}), read "
                             f"from the kept table {kept}.")
    runs = run_matrix(args.reps, model)
    parent = record(runs, model, args.tracking_uri or default_tracking_uri(), args.experiment, name)
    kept.parent.mkdir(parents=True, exist_ok=True)
    runs.assign(mlflow_parent=parent, date=time.strftime("%Y-%m-%d"),
                **{f"model.{k}": v for k, v in asdict(model).items()}).to_csv(kept, index=False, float_format="%.6g")
    return runs, model, f"MLflow parent run `{parent}` ({time.strftime('%Y-%m-%d')})."


def write_page(text: str, page: Path, draw: Callable[[pd.DataFrame, Path], Path], runs: pd.DataFrame,
               figure: Path) -> None:
    draw(runs, figure)
    page.write_text(text)
    print(text)
    print(f"written to {page}")


def grouped_bars(path: Path, groups: list[str], series: dict[str, list[Any]], ylabel: str, title: str,
                 log: bool = False, scale: float = 1.0) -> Path:
    """One bar per (group, series) at the series' Interval mean, its 95 % interval as the error bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(max(8.0, 0.8 * len(groups) * len(series)), 4.5))
    width = 0.8 / len(series)
    for k, (label, cells) in enumerate(series.items()):
        x = np.arange(len(groups)) + (k - (len(series) - 1) / 2) * width
        means = np.array([c.mean for c in cells]) * scale
        err = np.array([[c.mean - c.low for c in cells], [c.high - c.mean for c in cells]]) * scale
        ax.bar(x, means, width, yerr=err, capsize=2, label=label)
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_xticks(np.arange(len(groups)), groups, rotation=25 if len(groups) > 5 else 0,
                  ha="right" if len(groups) > 5 else "center", fontsize=8)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
