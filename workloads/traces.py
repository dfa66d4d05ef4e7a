"""Real arrival traces: a `rate.csv` (columns `t_seconds,events`, one row per bucket) read in place and validated.

The traces live outside the repository (licences): by default in ../shared/traces beside the checkout, or wherever
$ELASTIC_TRACES_DIR points, or at an explicit path. A trace is named by its folder (`google2011_task_events`) or
given as a path to a rate.csv. Nothing is copied; the run records the file's SHA-256 with the workload.

The bucket size is read from the data (the difference between consecutive times), never assumed, and must be the
same throughout the file. Every error names the file and the line.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACES_DIR = REPO_ROOT.parent / "shared" / "traces"
HEADER = ("t_seconds", "events")


class TraceError(ValueError):
    """A trace that cannot be replayed; the message names the file (and line)."""


@dataclass(frozen=True)
class Trace:
    path: Path
    bucket_s: float
    t0_s: float
    counts: np.ndarray  # int64 events per bucket
    sha256: str

    @property
    def span_s(self) -> float:
        return len(self.counts) * self.bucket_s


def traces_dir() -> Path:
    return Path(os.environ.get("ELASTIC_TRACES_DIR") or DEFAULT_TRACES_DIR)


def available_traces() -> list[str]:
    root = traces_dir()
    return sorted(p.parent.name for p in root.glob("*/rate.csv")) if root.is_dir() else []


def resolve_trace_path(ref: str) -> Path:
    """A trace name (folder under the traces directory) or a path to a rate.csv."""
    path = Path(ref).expanduser()
    if path.suffix == ".csv" or os.sep in ref:
        if not path.is_file():
            raise TraceError(f"trace file {path} does not exist")
        return path
    root = traces_dir()
    candidate = root / ref / "rate.csv"
    if candidate.is_file():
        return candidate
    if not root.is_dir():
        raise TraceError(
            f"trace {ref!r}: the traces directory {root} does not exist; put the traces there, set "
            f"ELASTIC_TRACES_DIR to their folder, or give the path of a rate.csv"
        )
    raise TraceError(f"trace {ref!r} not found in {root}; available: {', '.join(available_traces()) or '(none)'}")


def load_trace(ref: str) -> Trace:
    path = resolve_trace_path(ref)
    stat = path.stat()
    return _load(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int, size: int) -> Trace:
    return read_rate_csv(path)


# The bytes a fast-path file may hold after its header. Anything else (spaces, quotes, letters as in `nan` or
# `inf`, underscores, non-ASCII, the other line separators `str.splitlines` knows) goes to the line-by-line parser.
_FAST_BYTES = b"0123456789,.-+eE\r\n"
_FAST_HEADER = ",".join(HEADER).encode()


def read_rate_csv(path: str | Path) -> Trace:
    """Read and validate a rate.csv, without the cache: vectorised, or line by line whenever in doubt.

    The fast path parses with Arrow's C++ CSV reader and checks the columns with numpy; it only ever accepts a file
    and never writes an error message. Whenever a file is not plainly well formed (a header that is not exactly the
    first line, a byte outside `_FAST_BYTES`, a field Arrow cannot convert, a wrong number of fields, fewer than 2
    rows, a time not finite or not increasing, a negative count, an inconsistent bucket), the file is parsed again
    by `read_rate_csv_lines`, which raises the error naming the file and its 1-based line (header = line 1, blank
    lines counted). So errors read exactly as before, and the fast path needs no line numbers at all.
    Both paths give the same Trace for the same file: Arrow parses floats correctly rounded, as Python's `float()`
    does (pandas' default C float parser does not: it differs in the last bit for many decimals), integers exactly,
    and both skip blank lines.
    """
    path = str(path)
    raw = Path(path).read_bytes()
    return _parse_fast(path, raw) or _parse_lines(path, raw)


def read_rate_csv_lines(path: str | Path) -> Trace:
    """Read and validate a rate.csv line by line in Python, without the cache: the reference, and the error path."""
    path = str(path)
    return _parse_lines(path, Path(path).read_bytes())


def _parse_fast(path: str, raw: bytes) -> Trace | None:
    """The file's Trace if it is plainly valid, else None (and the line-by-line parser says what is wrong)."""
    body = raw[len(_FAST_HEADER):]
    if not raw.startswith(_FAST_HEADER) or body[:1] not in (b"\r", b"\n") or body.translate(None, _FAST_BYTES):
        return None
    import pyarrow as pa  # on first use, so that importing workloads stays light
    import pyarrow.csv as pa_csv

    try:
        table = pa_csv.read_csv(
            pa.BufferReader(pa.py_buffer(body)),
            read_options=pa_csv.ReadOptions(column_names=list(HEADER), use_threads=False),
            parse_options=pa_csv.ParseOptions(quote_char=False, double_quote=False, escape_char=False,
                                               ignore_empty_lines=True),
            convert_options=pa_csv.ConvertOptions(column_types={HEADER[0]: pa.float64(), HEADER[1]: pa.int64()},
                                                  null_values=[], strings_can_be_null=False,
                                                  quoted_strings_can_be_null=False))
    except pa.ArrowException:
        return None
    if table.num_rows < 2:
        return None
    times = table.column(0).to_numpy()
    counts = np.array(table.column(1).to_numpy(), dtype=np.int64)  # an owned, writable copy, as the slow path's
    if times.dtype != np.float64 or not np.isfinite(times).all() or (counts < 0).any():
        return None
    steps = np.diff(times)
    bucket = float(times[1] - times[0])
    if not (steps > 0).all() or (np.abs(steps - bucket) > 1e-6 * max(1.0, bucket)).any():
        return None
    return Trace(Path(path), bucket, float(times[0]), counts, hashlib.sha256(raw).hexdigest())


def _parse_lines(path: str, raw: bytes) -> Trace:
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if not lines:
        raise TraceError(f"{path}: empty file")
    header = tuple(h.strip() for h in lines[0].split(","))
    if header != HEADER:
        raise TraceError(f"{path}:1: expected header {','.join(HEADER)}, got {lines[0]!r}")
    times = np.empty(len(lines) - 1)
    counts = np.empty(len(lines) - 1, dtype=np.int64)
    n = 0
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != 2:
            raise TraceError(f"{path}:{lineno}: expected 2 fields (t_seconds,events), got {len(fields)}: {line!r}")
        try:
            t = float(fields[0])
        except ValueError:
            raise TraceError(f"{path}:{lineno}: t_seconds {fields[0]!r} is not a number") from None
        try:
            c = int(fields[1])
        except ValueError:
            raise TraceError(f"{path}:{lineno}: events {fields[1]!r} is not a whole number") from None
        if not np.isfinite(t):
            raise TraceError(f"{path}:{lineno}: t_seconds {fields[0]!r} is not finite")
        if c < 0:
            raise TraceError(f"{path}:{lineno}: negative count {c}")
        if n and t <= times[n - 1]:
            kind = "duplicate" if t == times[n - 1] else "non-monotonic"
            raise TraceError(f"{path}:{lineno}: {kind} time {t:g} after {times[n - 1]:g}")
        if n >= 2:
            bucket = times[1] - times[0]
            if abs((t - times[n - 1]) - bucket) > 1e-6 * max(1.0, bucket):
                raise TraceError(f"{path}:{lineno}: bucket of {t - times[n - 1]:g} s where the file's bucket is "
                                 f"{bucket:g} s (inconsistent bucket sizes; gaps must be rows with 0 events)")
        times[n], counts[n] = t, c
        n += 1
    if n < 2:
        raise TraceError(f"{path}: needs at least 2 data rows to know its bucket size, has {n}")
    return Trace(Path(path), float(times[1] - times[0]), float(times[0]), counts[:n].copy(),
                 hashlib.sha256(raw).hexdigest())


def window_counts(trace: Trace, start_s: float, length_s: float | None, where: str) -> np.ndarray:
    """The counts of the whole buckets in [start_s, start_s + length_s) of trace time (from its first bucket)."""
    if start_s < 0:
        raise TraceError(f"{where}: start_s must be >= 0, got {start_s}")
    first = int(round(start_s / trace.bucket_s))
    if abs(first * trace.bucket_s - start_s) > 1e-6:
        raise TraceError(f"{where}: start_s {start_s} is not on a bucket boundary ({trace.bucket_s:g} s buckets)")
    if first >= len(trace.counts):
        raise TraceError(f"{where}: start_s {start_s:g} is past the end of the trace ({trace.span_s:g} s)")
    if length_s is None:
        stop = len(trace.counts)
    else:
        if length_s <= 0:
            raise TraceError(f"{where}: empty window (length_s {length_s})")
        stop = first + int(np.ceil(length_s / trace.bucket_s - 1e-9))
        if stop > len(trace.counts):
            raise TraceError(f"{where}: window [{start_s:g}, {start_s + length_s:g}) s goes past the end of the trace "
                             f"({trace.span_s:g} s)")
    return trace.counts[first:stop]
