"""Restarts of a native query measured at a chosen state size: the query the restart calibration and the restart
benchmark both use, and the sequence of plain restarts and rescales they time.

The query keeps the latest payload and a count per key, `groupBy(event_id % K).agg(max(payload), count)`, in Spark's
RocksDB state store (update mode, foreachBatch sink): K keys of 1,000-byte payloads make about K KB of state. A
fresh checkpoint is filled (K events due at once, read in batches of at most 100,000), then the stream goes on at
2,000 events/s while the query is restarted in the given sequence. Downtime is from the hold of the source
(jobs.native.rescale) to the first batch committed after the restart; each restart records the state's size as
Spark's progress reported it just before (RocksDB's SST files), the figure a run reads when it rescales.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

PAYLOAD_BYTES = 1000
ROW_BYTES = PAYLOAD_BYTES + 16  # the payload, the key and the count
RATE = 2000
FILL_BATCH = 100_000
PAUSE_S = 2.0  # steady batches between two restarts


def keyed_state_query(keys: int):
    from jobs.native.query import NativeQuery

    def build(events):
        from pyspark.sql import functions as F

        return (events.groupBy((F.col("event_id") % keys).alias("k"))
                .agg(F.max("payload").alias("payload"), F.count(F.lit(1)).alias("n")), "update")

    return NativeQuery(f"restart-measure:keyed_state_{keys}", build, False, None)


def measure_restarts(spark, size_mb: float, sequence: Sequence[tuple[int, bool]], folder: Path,
                     log=print) -> dict:
    """Fill a checkpoint with about `size_mb` MB of state at 2 partitions, then restart the query for each
    (partitions, repartition) of `sequence`; returns the restarts' records (with `state_mb`), the state's logical
    and on-disk size, and the exactly-once check over them all."""
    from jobs.native.progress import StateProgress
    from jobs.native.stream import replayed_query, run_until
    from jobs.sink_check import committed_from_checkpoint, verify_output
    from params.units import US
    from workloads.schedule import Schedule
    from workloads.spec import parse_workload

    keys = max(1, int(size_mb * 2**20 / ROW_BYTES))
    fill_s = keys / RATE
    spec = parse_workload({"name": "native-restart-measure", "profile": "constant", "params": {"rate": RATE},
                           "duration_s": fill_s + 3600, "seed": 1, "keys": {"count": 1000},
                           "payload_bytes": PAYLOAD_BYTES}, source="restart measurement")
    schedule = Schedule(spec)
    checkpoint = folder / "checkpoint"
    progress = StateProgress()
    spark.streams.addListener(progress)
    anchor_us = int((time.time() - fill_s) * US)
    query, sink = replayed_query(spark, keyed_state_query(keys), schedule, folder, 1.0, anchor_us, FILL_BATCH)
    t = time.time()
    query.start(2)
    restarts = []
    try:
        run_until(query, sink, keys, timeout_s=600)
        fill_wall = time.time() - t
        for _ in range(3):  # caught up: a few batches at the steady rate before the first stop
            query.next_batch(sink.last_batch[0], 60)
        for partitions, repartition in sequence:
            time.sleep(PAUSE_S)
            state_mb = (progress.latest() or {}).get("state_mb", 0.0)
            r = query.rescale(partitions, repartition=repartition)
            restarts.append({**r.record(), "state_mb": state_mb})
            log(f"  {size_mb:g} MB ({state_mb:.0f} MB of SST files): {'rescale' if repartition else 'restart'} "
                f"{r.from_partitions}->{r.to_partitions}: {r.downtime_s:.2f} s (repartition {r.repartition_s:.2f}, "
                f"start {r.start_s:.2f}, first batch {r.first_batch_s:.2f})")
    finally:
        query.stop()
        spark.streams.removeListener(progress)
    disk_mb = sum(p.stat().st_size for p in (checkpoint / "state").rglob("*") if p.is_file()) / 2**20
    _, lost, duplicated = verify_output(folder / "sink", committed_from_checkpoint(checkpoint), counts_events=None)
    return {"size_mb": size_mb, "keys": keys, "logical_state_mb": keys * ROW_BYTES / 2**20,
            "checkpoint_state_disk_mb": round(disk_mb, 1), "fill_s": round(fill_wall, 1), "restarts": restarts,
            "lost": lost, "duplicated": duplicated}
