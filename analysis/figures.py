"""The report's pictures: how each configuration behaved over time on a workload, how sure we are of the means, and
which configurations are worth considering at all (the Pareto front).

Each function draws one PNG from plain tables (the runs' batch tables, the ranked summary) so the report, a notebook
and the tests draw the same figures.
"""
from __future__ import annotations

import textwrap

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

DEGREE_PREFIX = "degree_"


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def capacity_per_second(batches: pd.DataFrame) -> pd.Series:
    """What the job could process per second at its degrees of that batch: records / batch processing time.

    Why this estimate: a micro-batch processes everything that arrived in one go, so while it is busy its rate is the
    job's capacity at the current degrees; when the capacity line is above the arrival line the job keeps up. For very
    small batches the fixed per-batch cost dominates and the estimate is low, which the figure shows as it is."""
    duration = batches["batch_duration_s"].where(batches["batch_duration_s"] > 0)
    return batches["records_read"] / duration


def workload_timelines_png(workload: str, runs: Sequence[tuple[str, pd.DataFrame]], slo_latency_s: float,
                           path: Path) -> Path:
    """One column per configuration (label, batch table): arrival rate vs capacity, p99 latency against the SLO line,
    degree per operator. Rows share their y axis so columns compare at a glance."""
    n = max(1, len(runs))
    fig, axes = plt.subplots(3, n, figsize=(3.6 * n + 0.8, 7.5), sharex=True, sharey="row", squeeze=False,
                             constrained_layout=True)
    fig.suptitle(f"workload {workload}: one column per configuration", fontsize=11)
    for col, (label, batches) in enumerate(runs):
        t = batches["time_s"].to_numpy()
        ax = axes[0][col]
        ax.set_title(textwrap.fill(label, 36), fontsize=9)  # a long configuration wraps rather than squeezing the axes
        ax.plot(t, batches["offered_rate"], drawstyle="steps-post", color="0.45", label="arrivals")
        ax.plot(t, capacity_per_second(batches), marker=".", linestyle="-", color="tab:blue", label="capacity")
        ax = axes[1][col]
        ax.plot(t, batches["latency_p99_s"], marker=".", color="tab:red", label="p99 latency")
        ax.axhline(slo_latency_s, color="k", linestyle="--", linewidth=1, label=f"SLO {slo_latency_s:g} s")
        ax = axes[2][col]
        for column in sorted(c for c in batches.columns if c.startswith(DEGREE_PREFIX)):
            ax.plot(t, batches[column], drawstyle="steps-post", label=column.removeprefix(DEGREE_PREFIX))
        ax.set_xlabel("time since start (s)")
        ax.yaxis.get_major_locator().set_params(integer=True)
    axes[0][0].set_ylabel("events / s")
    axes[1][0].set_ylabel("latency (s)")
    axes[2][0].set_ylabel("degree (tasks)")
    for row in range(3):
        axes[row][0].legend(loc="upper left", fontsize=7)
    return _save(fig, path)


def interval_bars_png(ranked: pd.DataFrame, workload: str, slo_target: float, path: Path) -> Path:
    """SLO attainment and cost per configuration, mean with its 95 % interval over seeds, in ranking order."""
    t = ranked.iloc[::-1]  # barh draws bottom-up; the winner goes on top
    y = np.arange(len(t))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 1.0 + 0.55 * len(t)), sharey=True, constrained_layout=True)
    colors = ["tab:green" if m else "tab:gray" for m in t["meets_slo"]]
    panels = ((left, "slo_attainment", "SLO attainment"), (right, "cost_slot_seconds", "cost (slot-s)"))
    for ax, metric, title in panels:
        err = np.vstack([t[metric] - t[f"{metric}_low"], t[f"{metric}_high"] - t[metric]])
        ax.barh(y, t[metric], xerr=np.nan_to_num(err), color=colors, capsize=4, height=0.6)
        ax.set_title(f"{title}, mean and 95 % interval", fontsize=10)
    left.axvline(slo_target, color="k", linestyle="--", linewidth=1, label=f"target {slo_target:.0%}")
    left.set_xlim(0, 1.02)
    left.legend(loc="lower left", fontsize=8)
    left.set_yticks(y, [f"#{r} {c}" for r, c in zip(t["rank"], t["config"])], fontsize=8)
    fig.suptitle(f"workload {workload} (green: meets the SLO target)", fontsize=11)
    return _save(fig, path)


def pareto_png(ranked: pd.DataFrame, front: Sequence[str], workload: str, path: Path) -> Path:
    """Cost against SLO violations; the front (no configuration is better on both) is joined by a line."""
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    violations = 1 - ranked["slo_attainment"]
    xerr = np.vstack([ranked["cost_slot_seconds"] - ranked["cost_slot_seconds_low"],
                      ranked["cost_slot_seconds_high"] - ranked["cost_slot_seconds"]])
    yerr = np.vstack([ranked["slo_attainment_high"] - ranked["slo_attainment"],
                      ranked["slo_attainment"] - ranked["slo_attainment_low"]])
    on_front = ranked["config"].isin(front)
    ax.errorbar(ranked["cost_slot_seconds"], violations, xerr=np.nan_to_num(xerr), yerr=np.nan_to_num(yerr),
                fmt="none", ecolor="0.7", capsize=3)
    ax.scatter(ranked.loc[~on_front, "cost_slot_seconds"], violations[~on_front], color="tab:gray",
               label="dominated", zorder=3)
    ax.scatter(ranked.loc[on_front, "cost_slot_seconds"], violations[on_front], color="tab:orange",
               label="Pareto front", zorder=3)
    front_rows = ranked.set_index("config").loc[list(front)]
    ax.plot(front_rows["cost_slot_seconds"], 1 - front_rows["slo_attainment"], color="tab:orange", linewidth=1)
    for _, row in ranked.iterrows():
        ax.annotate(row["config"], (row["cost_slot_seconds"], 1 - row["slo_attainment"]), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_ylim(-0.01, max(0.05, float(violations.max()) * 1.15))  # violations are fractions >= 0
    ax.set_xlabel("cost (slot-seconds, mean over seeds)")
    ax.set_ylabel("SLO violations (fraction of events late)")
    ax.set_title(f"workload {workload}: cost vs SLO violations (lower left is better)", fontsize=10)
    ax.legend(fontsize=8)
    return _save(fig, path)
