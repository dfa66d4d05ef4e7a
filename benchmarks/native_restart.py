"""What a rescale by restart costs a native query, against a plain restart of the same query, by state size.

    python -m benchmarks.native_restart [--sizes-mb 1 10 100 1000] [--rounds 2]     (about 15 minutes on 2 cores)

The query and the restarts are the restart calibration's (jobs.native.restart_measure): a count and the latest
1,000-byte payload per key in Spark's RocksDB state store, K keys making about K KB of state (the logical size
printed: rows × row bytes; the checkpoint's size on disk, every retained version included, beside it), restarted while
the stream goes on at 2,000 events/s, in this order, `--rounds` times: plain restart at 2, rescale 2→4, plain at 4,
rescale 4→8, plain at 8, rescale 8→2. Each rescale is divided by the plain restart just before it (same partitions
before the stop), measured minutes apart in one session: ratios, not absolute seconds, carry over
between machines. Goals: rescale ≤ 1.5 × plain restart, and ≤ 10 s with 100 MB of state; and, over every restart,
nothing lost or duplicated (Spark's commits against the sink, jobs.sink_check).
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEQUENCE = [(2, False), (4, True), (4, False), (8, True), (8, False), (2, True)]  # (partitions after, repartition)
GOAL_RATIO, GOAL_100MB_S = 1.5, 10.0


def measure(spark, size_mb: float, rounds: int, folder: Path) -> dict:
    from jobs.native.restart_measure import measure_restarts

    return measure_restarts(spark, size_mb, SEQUENCE * rounds, folder, log=lambda line: print(line, flush=True))


def ratios(result: dict) -> list[dict]:
    """Each rescale over the plain restart just before it (same partitions before the stop)."""
    out, plain = [], None
    for r in result["restarts"]:
        if not r["repartitioned"]:
            plain = r
        elif plain is not None:
            out.append({"direction": f"{r['from_partitions']}->{r['to_partitions']}", "rescale_s": r["downtime_s"],
                        "plain_s": plain["downtime_s"], "ratio": r["downtime_s"] / plain["downtime_s"],
                        "repartition_s": r["repartition_s"]})
    return out


def fit_downtime(results: list[dict]) -> tuple[float, float]:
    """(fixed, per MB): the restart calibration's fit (controllers.restart_cost) over every rescale, against the
    logical state size this page's table is by."""
    from controllers.restart_cost import fit_restart_cost

    restarts = [(res["logical_state_mb"], r) for res in results for r in res["restarts"]]
    cost = fit_restart_cost([(mb, r["downtime_s"]) for mb, r in restarts if r["repartitioned"]],
                            [r["downtime_s"] for _, r in restarts if not r["repartitioned"]])
    return cost.rescale_fixed_s, cost.rescale_per_mb_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.native_restart", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[1, 10, 100, 1000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / ".local" / "bench" / "native_restart.json"))
    parser.add_argument("--report", metavar="JSON", help="print the tables of an earlier run's results, run nothing")
    args = parser.parse_args(argv)
    if args.report:
        report(json.loads(Path(args.report).read_text()), args.report)
        return 0
    import tempfile

    from jobs.config import RunConfig
    from jobs.native.run import NATIVE_SETTINGS
    from jobs.spark_session import package_code, start_spark

    config = RunConfig("static", {}, "constant", master="local[2]", quiet=True).validate()
    results = []
    with tempfile.TemporaryDirectory(prefix="native-restart-") as tmp:
        spark = start_spark(config, package_code(Path(tmp) / "code.zip"), NATIVE_SETTINGS)
        try:
            for size in args.sizes_mb:
                results.append(measure(spark, size, args.rounds, Path(tmp) / f"size-{size:g}"))
        finally:
            spark.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    report(results, args.out)
    return 0


def report(results: list[dict], out: str) -> None:
    print(f"\n{'state':>9} {'on disk':>8} {'direction':>9} {'plain s':>8} {'rescale s':>9} {'repart. s':>9} "
          f"{'ratio':>6}")
    worst = 0.0
    for res in results:
        rows = ratios(res)
        by_direction: dict[str, list[dict]] = {}
        for row in rows:
            by_direction.setdefault(row["direction"], []).append(row)
        for direction, group in by_direction.items():
            ratio = statistics.median(g["ratio"] for g in group)
            worst = max(worst, ratio)
            print(f"{res['logical_state_mb']:>6.0f} MB {res['checkpoint_state_disk_mb']:>5.0f} MB {direction:>9} "
                  f"{statistics.median(g['plain_s'] for g in group):>8.2f} "
                  f"{statistics.median(g['rescale_s'] for g in group):>9.2f} "
                  f"{statistics.median(g['repartition_s'] for g in group):>9.2f} {ratio:>6.2f}")
    fixed_s, per_mb_s = fit_downtime(results)
    print(f"\nrescale downtime fit: {fixed_s:.2f} s + {per_mb_s * 1000:.2f} ms per MB of state")
    restarts = sum(len(res["restarts"]) for res in results)
    rescales = sum(r["repartitioned"] for res in results for r in res["restarts"])
    if all("lost" in res for res in results):
        print(f"exactly once over {restarts} restarts ({rescales} rescales): "
              f"{sum(res['lost'] for res in results)} lost, {sum(res['duplicated'] for res in results)} duplicated")
    hundred = [max(r["downtime_s"] for r in res["restarts"] if r["repartitioned"])
               for res in results if 90 <= res["size_mb"] <= 110]
    print(f"\ngoal rescale <= {GOAL_RATIO}x plain restart: worst median ratio {worst:.2f} "
          f"({'met' if worst <= GOAL_RATIO else 'missed'})")
    if hundred:
        print(f"goal <= {GOAL_100MB_S:g} s with 100 MB of state: slowest rescale {hundred[0]:.2f} s "
              f"({'met' if hundred[0] <= GOAL_100MB_S else 'missed'})")
    print(f"written to {out}")


if __name__ == "__main__":
    raise SystemExit(main())
