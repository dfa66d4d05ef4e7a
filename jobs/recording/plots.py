"""The run's timeline figure: offered vs processed rate, backlog, latency against the SLO, degrees per operator.

One picture per run answers the first questions a user has in the MLflow UI: did the job keep up, when did it
fall behind, what did the controller do about it, and how quickly.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def timeline_png(
    batches: pd.DataFrame,
    offered: tuple[np.ndarray, np.ndarray],
    operators: Sequence[str],
    slo_latency_s: float,
    title: str,
    path: Path,
) -> Path:
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True, constrained_layout=True)
    t = batches["time_s"].to_numpy() if len(batches) else np.array([])

    ax = axes[0]
    ax.plot(offered[0], offered[1], drawstyle="steps-post", color="0.5", label="offered (schedule)")
    if len(batches):
        ax.plot(t, batches["processed_rate"], marker=".", label="processed (per batch)")
    ax.set_ylabel("events / s")
    ax.legend(loc="upper left")
    ax.set_title(title)

    ax = axes[1]
    if len(batches):
        ax.plot(t, batches["backlog"], color="tab:red", marker=".")
    ax.set_ylabel("backlog (events)")

    ax = axes[2]
    if len(batches):
        ax.plot(t, batches["latency_p50_s"], label="p50", marker=".")
        ax.plot(t, batches["latency_p99_s"], label="p99", marker=".")
    ax.axhline(slo_latency_s, color="k", linestyle="--", label=f"SLO {slo_latency_s:g}s")
    ax.set_ylabel("latency (s)")
    ax.legend(loc="upper left")

    ax = axes[3]
    for op in operators:
        if len(batches):
            ax.plot(t, batches[f"degree_{op}"], drawstyle="steps-post", label=op)
    ax.set_ylabel("degree")
    ax.set_xlabel("time since start (s)")
    ax.legend(loc="upper left")
    ax.yaxis.get_major_locator().set_params(integer=True)

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
