"""The same run on Kafka and on the replay source, side by side: identical output, and what the broker adds to the
latency, as a ratio.

    python -m benchmarks.kafka_source [--rounds 2] [--workload step] [--duration 60]    (about 3 min a round)

Each round runs `python -m jobs.run` twice on one private broker (deploy/kafka.py), one run after the other, never
together: the same workload, seed and controller (`static`, degree 2 everywhere, so that both runs execute the same
plan), once with `--source replay` and once with `--source kafka` (4 partitions, the replay source's 4 read tasks);
the order alternates between rounds (ABBA). Identical output: the sink of both runs holds every event once (0 lost,
0 duplicated by each run's own check) and, per key, the same count of events with the same sum of event ids (the
windows themselves are aligned to the epoch, so their boundaries differ between two runs). The overhead: latency
p50 and p99 and the mean batch duration, Kafka ÷ replay per round, and their medians.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from deploy.kafka import KafkaBroker
from deploy.spark_cluster import free_port

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("replay", "kafka")
MEASURES = ("latency_p50_s", "latency_p99_s", "batch_duration_s_mean")


def run(source: str, workload: str, duration_s: float, bootstrap: str, work: Path, tracking_uri: str) -> dict:
    """One run; its summary, the mean batch duration, and its sink's per-key account (events, sum of ids)."""
    out = work / source
    args = [sys.executable, "-m", "jobs.run", "--controller", "static", "--param", "degree=2", "--workload", workload,
            "--duration", str(duration_s), "--seed", "1", "--source", source, "--source-partitions", "4",
            "--kafka-bootstrap", bootstrap, "--tracking-uri", tracking_uri, "--experiment", "kafka-source-bench",
            "--output-dir", str(out / "job"), "--summary-json", str(out / "summary.json"), "--quiet"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the {source} run failed ({done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    batches = pd.read_parquet(out / "job" / "artifacts" / "batches.parquet")
    summary["batch_duration_s_mean"] = float(batches["batch_duration_s"].mean())
    sink = pd.read_parquet(out / "job" / "sink")
    summary["per_key"] = sink.groupby("key")[["events", "event_id_sum"]].sum()
    return summary


def measure(broker: KafkaBroker, workload: str, duration_s: float, rounds: int, work: Path) -> list[dict]:
    tracking_uri = f"sqlite:///{work / 'mlflow.db'}"
    results = []
    for r in range(rounds):
        order = SOURCES if r % 2 == 0 else SOURCES[::-1]
        got = {source: run(source, workload, duration_s, broker.bootstrap, work / f"round-{r}", tracking_uri)
               for source in order}
        replay, kafka = got["replay"], got["kafka"]
        same = replay["per_key"].equals(kafka["per_key"])
        row = {"round": r + 1, "identical_output": same,
               "lost_duplicated": {s: (got[s]["records_lost"], got[s]["records_duplicated"]) for s in SOURCES},
               "events": {s: got[s]["records_out"] for s in SOURCES},
               **{f"{m}.{s}": got[s][m] for m in MEASURES for s in SOURCES},
               **{f"{m}.ratio": kafka[m] / replay[m] for m in MEASURES},
               "producer_lag_p99_ms": kafka.get("producer_lag_p99_ms")}
        print(f"round {r + 1}: " + ", ".join(f"{m} kafka/replay {row[f'{m}.ratio']:.2f}" for m in MEASURES)
              + f", identical output {same}", flush=True)
        results.append(row)
    return results


def table(results: list[dict]) -> str:
    lines = ["| measure | replay | Kafka | Kafka ÷ replay (median) | per round |", "|---|---|---|---|---|"]
    for m in MEASURES:
        replay = statistics.median(r[f"{m}.replay"] for r in results)
        kafka = statistics.median(r[f"{m}.kafka"] for r in results)
        ratios = [r[f"{m}.ratio"] for r in results]
        lines.append(f"| {m} | {replay:.3f} | {kafka:.3f} | **{statistics.median(ratios):.2f}** | "
                     f"{', '.join(f'{v:.2f}' for v in ratios)} |")
    lags = ", ".join(f"{r['producer_lag_p99_ms']:.0f}" for r in results)
    identical = all(r["identical_output"] for r in results)
    clean = all(v == (0, 0) for r in results for v in r["lost_duplicated"].values())
    lines += ["", f"identical output (per key: events and sum of ids) in every round: {'yes' if identical else 'NO'}; "
              f"0 lost / 0 duplicated in every run: {'yes' if clean else 'NO'}; events per run: "
              f"{results[0]['events']['replay']:,}; the producer's lag p99 per round: {lags} ms"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.kafka_source", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--workload", default="step")
    p.add_argument("--duration", type=float, default=60.0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafka-source-bench-") as scratch:
        work = Path(scratch)
        broker = KafkaBroker(state_dir=work / "kafka", port=free_port(), controller_port=free_port()).start()
        try:
            results = measure(broker, args.workload, args.duration, args.rounds, work)
        finally:
            broker.stop(clean=True)
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
