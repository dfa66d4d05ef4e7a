"""Look at a workload before spending a run on it: its summary numbers and a plot of its rate over time.

    python -m workloads.inspect step                       # summary + step.png in the current folder
    python -m workloads.inspect google-task-events --png out/g.png --duration 60 --seed 3
    python -m workloads.inspect --list                     # the catalogue and the available traces
    python -m workloads.inspect --describe step            # a profile's parameters: type, default, bounds, rules
    python -m workloads.inspect --profiles                 # every profile's parameters

The experiment run logs the same plot (workload.png) and summary (workload_summary.json) with every MLflow run.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from workloads.plots import workload_png
from workloads.profiles import PROFILES, describe_profile
from workloads.schedule import Schedule
from workloads.spec import WorkloadError, catalogue_names, load_workload
from workloads.traces import available_traces, traces_dir


def format_summary(schedule: Schedule) -> str:
    s = schedule.summary()
    spec = schedule.spec
    lines = [f"workload {spec.name!r}: {spec.description}".rstrip(": ")]
    for stream in spec.streams[:3]:
        source = (f"trace {stream.trace.ref} [{stream.trace.start_s:g}, {stream.trace.start_s + stream.trace.length_s:g})"
                  f" s x{1 / stream.trace.compression:g} time, x{stream.trace.rate_scale:g} rate"
                  + (f" (for a mean of {stream.trace.mean_rate:g} ev/s)" if stream.trace.mean_rate else "")
                  if stream.trace else f"profile {stream.profile} {dict(stream.params)}")
        keys = ("one per machine (the rows' own)" if stream.trace and stream.trace.records
                else f"{stream.keys.count} {stream.keys.distribution}")
        if stream.trace and stream.trace.records:
            source += f"; its {stream.trace.records} rows as payload"
        lines.append(f"  stream {stream.name}: {source}; keys {keys}")
    if len(spec.streams) > 3:
        lines.append(f"  ... {len(spec.streams) - 3} more streams")
    lines += [
        f"  duration {s['duration_s']:g} s in {schedule.n_buckets} buckets of {s['bucket_s']:g} s, seed {spec.seed}, "
        f"arrivals {spec.arrivals}" + (f", noise sigma {spec.noise.sigma:g}" if spec.noise else ""),
        f"  events {s['total_events']:,}; rate per second: mean {s['rate_mean']:,.1f}, p50 {s['rate_p50']:,.1f}, "
        f"p99 {s['rate_p99']:,.1f}, max {s['rate_max']:,.1f}, min {s['rate_min']:,.1f}",
        f"  burstiness: peak/mean {s['peak_to_mean']:.2f}, coefficient of variation {s['rate_cv']:.2f}",
    ]
    return "\n".join(lines)


def _describe(ref: str) -> int:
    """A profile by name, or the profiles a catalogue entry or spec file uses."""
    if ref in PROFILES:
        print(describe_profile(ref))
        return 0
    try:
        spec = load_workload(ref)
    except WorkloadError as exc:
        print(f"error: {ref!r} is not a profile ({', '.join(PROFILES)}) and not a workload: {exc}", file=sys.stderr)
        return 2
    used = list(dict.fromkeys(s.profile for s in spec.streams if s.profile is not None))
    if not used:
        print(f"workload {spec.name!r} replays a trace; it has no profile parameters")
        return 0
    print("\n\n".join(describe_profile(name) for name in used))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workloads.inspect", description=__doc__.split("\n\n")[0])
    p.add_argument("workload", nargs="?", help="catalogue name or YAML file")
    p.add_argument("--duration", type=float, help="override the duration, seconds")
    p.add_argument("--seed", type=int, help="override the seed")
    p.add_argument("--png", help="where to write the plot (default: <name>.png)")
    p.add_argument("--json", help="also write the summary as JSON here")
    p.add_argument("--list", action="store_true", help="list the catalogue and the available traces")
    p.add_argument("--describe", metavar="PROFILE",
                   help="print a profile's declared parameters (or those of the profiles a workload uses)")
    p.add_argument("--profiles", action="store_true", help="print every profile's declared parameters")
    args = p.parse_args(argv)
    if args.profiles:
        print("\n\n".join(describe_profile(name) for name in PROFILES))
        return 0
    if args.describe:
        return _describe(args.describe)
    if args.list or not args.workload:
        print("catalogue:", ", ".join(catalogue_names()))
        print(f"traces in {traces_dir()}:", ", ".join(available_traces()) or "(none found)")
        return 0
    try:
        spec = load_workload(args.workload).with_overrides(duration_s=args.duration, seed=args.seed)
    except WorkloadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    schedule = Schedule(spec)
    print(format_summary(schedule))
    png = workload_png(schedule, Path(args.png or f"{spec.name}.png"))
    print(f"  plot: {png}")
    if args.json:
        Path(args.json).write_text(json.dumps(schedule.summary(), indent=2))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
