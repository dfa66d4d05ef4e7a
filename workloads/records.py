"""Replaying a trace's real records, not only its timing: each event carries one original row as its payload.

The Google 2011 task_events parts (13 CSV columns: timestamp, missing_info, job_id, task_index, machine_id,
event_type, user, scheduling_class, priority, cpu_request, memory_request, disk_request,
different_machines_restriction) are replayed in timestamp order, each row at its own (compressed) time, with its
machine as the event's key, so a query can compute real aggregates such as the load per machine (the SEEP thesis'
query, §5.3.3, pp. 84-87).

The raw parts stay where they are. The first use decompresses them once into a local cache outside the repository
($XDG_CACHE_HOME/elastic-streaming, default ~/.cache/elastic-streaming), keyed by the parts' checksums: the rows as
one byte blob with offsets, plus the few columns the schedule needs, all memory-mapped, so every Spark Python worker
shares one copy through the page cache instead of parsing 2.6 million rows itself.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

# record set -> (folder under the trace, file pattern, trace time of the rate.csv origin in seconds)
RECORD_SETS = {"task_events": ("raw/task_events", "part-*.csv.gz", 600.0)}
TASK_EVENT_COLUMNS = ("timestamp", "missing_info", "job_id", "task_index", "machine_id", "event_type", "user",
                      "scheduling_class", "priority", "cpu_request", "memory_request", "disk_request",
                      "different_machines_restriction")
CPU_REQUEST_FIELD = TASK_EVENT_COLUMNS.index("cpu_request")


class RecordsError(ValueError):
    pass


@dataclass(frozen=True)
class Records:
    """All rows of a record set in file (= timestamp) order."""
    time_s: np.ndarray  # float64, seconds from the trace's rate.csv origin (negative: before the window)
    machine: np.ndarray  # int64, 0 where the row has no machine
    event_type: np.ndarray  # int8
    starts: np.ndarray  # int64, n + 1: row i is blob[starts[i] : starts[i + 1] - 1] (the last byte is its newline)
    blob: np.ndarray  # uint8, the rows' bytes, each ending with a newline

    def payload(self, rows: np.ndarray):
        """The original rows (without newline) as an Arrow binary array, gathered by Arrow from the mapped blob."""
        import pyarrow as pa
        import pyarrow.compute as pc

        whole = pa.Array.from_buffers(pa.large_binary(), len(self.starts) - 1,
                                      [None, pa.py_buffer(self.starts), pa.py_buffer(self.blob)])
        return pc.binary_slice(whole.take(pa.array(rows, pa.int64())), 0, -1).cast(pa.binary())


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "elastic-streaming" / "records"


def record_files(trace_dir: Path, record_set: str) -> list[Path]:
    if record_set not in RECORD_SETS:
        raise RecordsError(f"unknown record set {record_set!r}; known: {', '.join(RECORD_SETS)}")
    folder, pattern, _ = RECORD_SETS[record_set]
    files = sorted((trace_dir / folder).glob(pattern))
    if not files:
        raise RecordsError(f"no {pattern} files in {trace_dir / folder}: this trace has no {record_set!r} records")
    return files


def load_records(trace_dir: Path, record_set: str) -> Records:
    files = record_files(trace_dir, record_set)
    key = hashlib.sha256("".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files).encode())
    return _load_cached(str(cache_root() / f"{record_set}-{key.hexdigest()[:16]}"), tuple(map(str, files)),
                        RECORD_SETS[record_set][2])


@lru_cache(maxsize=4)
def _load_cached(folder: str, files: tuple[str, ...], origin_s: float) -> Records:
    path = Path(folder)
    if not (path / "complete").exists():
        _build_cache(path, [Path(f) for f in files], origin_s)
    arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r")
              for name in ("time_s", "machine", "event_type", "starts")}
    blob = np.memmap(path / "blob.bin", dtype=np.uint8, mode="r")
    return Records(arrays["time_s"], arrays["machine"], arrays["event_type"], arrays["starts"], blob)


def _build_cache(path: Path, files: list[Path], origin_s: float) -> None:
    """Decompress the parts into one blob, find the rows, parse the columns the schedule needs; publish atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", dir=path.parent))
    try:
        with open(tmp / "blob.bin", "wb") as out:
            for f in files:
                with gzip.open(f, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 22)
        with open(tmp / "blob.bin", "rb+") as fh:  # every row, the last one included, ends with a newline
            fh.seek(0, os.SEEK_END)
            if fh.tell():
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
        blob = np.memmap(tmp / "blob.bin", dtype=np.uint8, mode="r")
        newlines = np.flatnonzero(blob == ord("\n"))
        starts = np.concatenate([[0], newlines + 1]).astype(np.int64)
        import pandas as pd

        frame = pd.read_csv(tmp / "blob.bin", header=None, names=TASK_EVENT_COLUMNS, usecols=[0, 4, 5],
                            dtype={"timestamp": np.int64, "machine_id": "Int64", "event_type": np.int8})
        if len(frame) != len(starts) - 1:
            raise RecordsError(f"{files[0].parent}: {len(frame)} parsed rows but {len(starts) - 1} lines")
        np.save(tmp / "time_s.npy", frame["timestamp"].to_numpy() / 1e6 - origin_s)
        np.save(tmp / "machine.npy", frame["machine_id"].fillna(0).to_numpy(dtype=np.int64))
        np.save(tmp / "event_type.npy", frame["event_type"].to_numpy())
        np.save(tmp / "starts.npy", starts)
        (tmp / "complete").write_text("\n".join(f.name for f in files))
        try:
            tmp.rename(path)
        except OSError:  # another process published it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def select(records: Records, event_types: tuple[int, ...] | None, require_machine: bool, start_s: float,
           stop_s: float) -> np.ndarray:
    """Indices of the rows replayed: inside [start_s, stop_s) of trace time, of the given types, with a machine
    if required. Rows keep their order (the parts are in timestamp order)."""
    lo = int(np.searchsorted(records.time_s, start_s, side="left"))
    hi = int(np.searchsorted(records.time_s, stop_s, side="left"))
    mask = np.ones(hi - lo, dtype=bool)
    if event_types is not None:
        mask &= np.isin(records.event_type[lo:hi], np.asarray(event_types, dtype=np.int8))
    if require_machine:
        mask &= records.machine[lo:hi] != 0
    return lo + np.flatnonzero(mask)
