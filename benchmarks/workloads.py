"""Workload generation benchmark: events generated per second and peak memory, for windows of 10^6 and 10^7 events.

    python -m benchmarks.workloads            (about a minute; no Spark)

Each workload is generated the way the replay source does it (Arrow record batches of 65,536 events, via
`jobs.replay_source.event_batches`), for the fast path (one stream, even arrivals), the general path (several
streams, Poisson arrivals, Zipf keys with hot-key drift) and a real trace (when ../shared/traces is present).
Peak memory is the largest traced allocation while generating (tracemalloc sees numpy's buffers); the goal is that
it does not grow with the window, because the schedule holds counts per bucket, never events.
Goals: >= 10^6 events/s generation; memory independent of window length.
"""
from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

from jobs.replay_source import event_batches
from workloads import Schedule, parse_workload
from workloads.traces import available_traces


def workloads(events: int) -> dict[str, dict]:
    seconds = events / 100_000
    out = {
        "constant, even (fast path)": {"profile": "constant", "params": {"rate": 100_000}, "duration_s": seconds},
        "2 streams, poisson, zipf+drift": {
            "duration_s": seconds, "arrivals": "poisson", "bucket_s": 0.1,
            "streams": [
                {"profile": "sine", "params": {"base": 50_000, "amplitude": 20_000, "period_s": 30},
                 "keys": {"count": 10_000, "distribution": "zipf", "hot_key_drift_s": 5}},
                {"profile": "constant", "params": {"rate": 50_000}, "keys": {"count": 1000}},
            ]},
    }
    if "google2011_task_events" in available_traces():
        # the whole 19.5 h trace (791k events), 1000x faster, each bucket's count scaled to reach the window
        out["trace google2011_task_events"] = {
            "trace": {"name": "google2011_task_events", "compression": 1000, "rate_scale": events / 791_000},
        }
    return out


def measure(raw: dict) -> tuple[int, float, float, float]:
    """(events, events per second of generation, peak MiB, seconds to build the schedule)."""
    tracemalloc.start()
    start = time.perf_counter()
    schedule = Schedule(parse_workload(raw, source="benchmark"))
    built = time.perf_counter()
    n = sum(b.num_rows for b in event_batches(schedule, 0, 0, schedule.total_events))
    seconds = time.perf_counter() - built
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return n, n / seconds, peak / 2**20, built - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.workloads", description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000], help="window sizes")
    args = p.parse_args(argv)
    for raw in workloads(100_000).values():  # warm-up: imports, first numpy calls, the trace file's parse
        measure(raw)
    rows = []
    for events in args.events:
        for name, raw in workloads(events).items():
            n, rate, peak, build_s = measure(raw)
            rows.append((name, events, n, rate, peak))
            print(f"  {name:<32} window {events:>11,}: {n:>11,} events, {rate / 1e6:6.2f} M events/s, "
                  f"peak {peak:7.1f} MiB, schedule built in {build_s * 1000:.0f} ms", flush=True)
    print()
    print(f"{'workload':<32} {'events/s (largest window)':>26} {'peak MiB small -> large':>26} {'memory ratio':>13}")
    for name in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == name]
        small, large = mine[0], mine[-1]
        print(f"{name:<32} {large[3]:>26,.0f} {small[4]:>12.1f} -> {large[4]:<11.1f} {large[4] / small[4]:>13.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
