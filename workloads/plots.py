"""The picture of a workload: its offered rate over time, per sub-stream and in total.

Drawn by `python -m workloads.inspect` and logged as workload.png with every experiment run.
"""
from __future__ import annotations

from pathlib import Path

from workloads.schedule import Schedule


def workload_png(schedule: Schedule, path: Path) -> Path:
    """Offered rate over time: the total, and each sub-stream when there are several."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = schedule.spec
    starts, total = schedule.rate_per_second()
    fig, ax = plt.subplots(figsize=(10, 3.6), constrained_layout=True)
    if len(spec.streams) > 1:
        per_bucket_s = schedule.bucket_us / 1e6
        for i, stream in enumerate(spec.streams[:20]):
            ax.step(starts, schedule.stream_counts[i] / per_bucket_s, where="post", lw=0.6, alpha=0.6,
                    label=stream.name if i < 8 else None)
    ax.step(starts, total, where="post", lw=1.2, color="black", label="total")
    summary = schedule.summary()
    ax.set_title(f"{spec.name}: {summary['total_events']:,} events in {summary['duration_s']:g} s, mean "
                 f"{summary['rate_mean']:,.0f}/s, p99 {summary['rate_p99']:,.0f}/s, max {summary['rate_max']:,.0f}/s "
                 f"(bucket {summary['bucket_s']:g} s)", fontsize=9)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("events / s")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=7, ncol=3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
