"""Spark's own account of each batch of a native query (StreamingQueryListener): durations, the state each
stateful operator holds (rows, memory) and the watermark, keyed by batch id."""
from __future__ import annotations

import threading
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener


SST_BYTES = "rocksdbSstFileSize"  # RocksDBStateStoreProvider's custom metric: the size of all its SST files


class StateProgress(StreamingQueryListener):
    def __init__(self):
        self._rows: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        row: dict[str, Any] = {f"{k}_ms": float(v) for k, v in (p.durationMs or {}).items()}
        operators = list(p.stateOperators or [])
        row["rows_total"] = float(sum(op.numRowsTotal for op in operators))
        row["memory_mb"] = sum(op.memoryUsedBytes for op in operators) / 2**20
        # the state's size as RocksDB holds it (its SST files): what a repartition reads and rewrites
        row["state_mb"] = sum(float((op.customMetrics or {}).get(SST_BYTES, 0)) for op in operators) / 2**20
        row["rows_dropped_by_watermark"] = float(sum(op.numRowsDroppedByWatermark for op in operators))
        watermark = (p.eventTime or {}).get("watermark")
        if watermark:
            row["watermark"] = watermark
        with self._lock:
            self._rows[int(p.batchId)] = row

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

    def get(self, batch_id: int) -> dict[str, Any] | None:
        with self._lock:
            return self._rows.get(batch_id)

    def latest(self) -> dict[str, Any] | None:
        """The progress of the last batch reported (of whichever run of the query)."""
        with self._lock:
            return self._rows[max(self._rows)] if self._rows else None
