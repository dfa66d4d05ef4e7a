"""Deterministic event schedule: event i's arrival time, key and payload are a pure function of (spec, seed, i).

Why a pure function of the index rather than a random stream: the replay source reads arbitrary index ranges in
parallel partitions, and a replayed batch after a crash must produce exactly the same events. Counter-based hashes
(`workloads.rng`) give that with no state to carry between partitions, vectorised with numpy so generating events
costs far less than processing them.

The schedule is lazy: it holds one count per bucket (per stream), never the events, so a 29-day trace or a 10^8-event
window costs memory in proportion to its buckets, and any range of events is generated on demand.

Times are integer microseconds from the schedule's start, so "is event i due at time t" has one exact answer on the
driver (which counts due events) and on the workers (which generate them).

Counts per bucket: the expected count of a bucket comes from the profile (rate integrated over the bucket, times an
optional mean-one lognormal noise) or from the trace (its count times `rate_scale`). With `arrivals: even` the
counts use cumulative rounding — bucket b holds floor(E(b+1)) - floor(E(b)) events, E the expected total up to its
end — so every prefix is exact to within one event and a trace's counts are reproduced exactly when rate_scale is 1.
With `arrivals: poisson` a profile's counts are Poisson draws around their expectation (a trace's stay its data).

Placement inside a bucket: `even` puts event j of n at start + floor((2j+1) * bucket / (2n)); `poisson` at sorted
uniform positions (the arrival times of a Poisson process given its count). Streams are merged by arrival time.
"""
from __future__ import annotations

import base64
import io
import zlib
from dataclasses import dataclass

import numpy as np

from workloads import rng
from workloads.profiles import ProfileContext, resolve_profile
from workloads.spec import KeySpec, WorkloadSpec

from params.units import US

# A payload is one splitmix64 word per event spread over its width by multiplying with distinct odd constants:
# as varied as hashing every word (each word is a bijection of the event's hash) at a fifth of the cost, which
# matters because the payload is most of what the source generates.
_PAYLOAD_MULTIPLIERS = (np.arange(1, 65, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)


@dataclass(frozen=True)
class EventColumns:
    event_id: np.ndarray  # int64
    arrival_us: np.ndarray  # int64, microseconds from the schedule start
    key: np.ndarray  # int32
    payload: np.ndarray  # uint8, shape (n, payload_bytes); or a pyarrow binary array of original rows
    stream: np.ndarray  # int32 index of the sub-stream


def expected_counts(spec: WorkloadSpec, stream_index: int, n_buckets: int, bucket_us: int,
                    duration_us: int) -> np.ndarray:
    """Expected events per bucket for one stream (before rounding), from its profile or its trace."""
    stream = spec.streams[stream_index]
    if stream.trace is not None:
        from workloads.traces import load_trace, window_counts

        t = stream.trace
        counts = window_counts(load_trace(t.ref), t.start_s, t.length_s, f"workload {spec.name!r}")
        expected = np.zeros(n_buckets)  # (a bucket rounded to whole microseconds can add one empty bucket)
        expected[: min(n_buckets, len(counts))] = counts[:n_buckets] * t.rate_scale
    else:
        _, rate_fn = resolve_profile(stream.profile, stream.params, where=spec.name,
                                     context=ProfileContext(spec.duration_s, spec.seed, stream_index))
        starts = np.arange(n_buckets) * bucket_us
        mids = (starts + 0.5 * bucket_us) / US
        widths = np.minimum(bucket_us, duration_us - starts) / US
        expected = np.maximum(rate_fn(mids), 0.0) * widths
    if spec.noise is not None and spec.noise.sigma > 0:
        step = np.floor(np.arange(n_buckets) * bucket_us / (spec.noise.step_s * US)).astype(np.int64)
        z = rng.normal(spec.seed, rng.STREAM_NOISE, step, stream_index)
        expected = expected * np.exp(spec.noise.sigma * z - spec.noise.sigma**2 / 2)  # mean-one multiplier
    return expected


class KeySampler:
    """Keys of one stream: uniform or Zipf over its own range, with the hot keys optionally moving over time."""

    def __init__(self, keys: KeySpec, seed: int, stream: int, offset: int):
        self.keys, self.seed, self.stream, self.offset = keys, seed, stream, offset
        self._cdf = None
        if keys.distribution == "zipf":
            weights = np.arange(1, keys.count + 1, dtype=np.float64) ** -keys.zipf_s
            self._cdf = np.cumsum(weights) / weights.sum()

    def __call__(self, ids: np.ndarray, arrival_us: np.ndarray) -> np.ndarray:
        count = self.keys.count
        if self._cdf is None:
            rank = rng.hashes(self.seed, rng.STREAM_KEY, ids, self.stream) % np.uint64(count)
        else:
            u = rng.uniform(self.seed, rng.STREAM_KEY, ids, self.stream)
            rank = np.minimum(np.searchsorted(self._cdf, u, side="right"), count - 1).astype(np.uint64)
        if self.keys.hot_key_drift_s > 0:
            epoch = arrival_us // int(self.keys.hot_key_drift_s * US)
            shift = rng.hashes(self.seed, rng.STREAM_HOT_KEY, epoch, self.stream) % np.uint64(count)
            rank = (rank + shift) % np.uint64(count)
        return (rank.astype(np.int64) + self.offset).astype(np.int32)


class RecordStream:
    """A trace replayed row by row: each selected original row is one event, at its own compressed time, keyed by
    its machine (dense index over the machines in the window), with the row as payload."""

    def __init__(self, spec: WorkloadSpec, bucket_us: int, n_buckets: int, duration_us: int):
        from workloads.records import load_records, select
        from workloads.traces import resolve_trace_path

        t = spec.streams[0].trace
        self.records = load_records(resolve_trace_path(t.ref).parent, t.records)
        rows = select(self.records, t.event_types, t.require_machine, t.start_s, t.start_s + t.length_s)
        times = np.rint((np.asarray(self.records.time_s[rows]) - t.start_s) * US / t.compression).astype(np.int64)
        keep = times < duration_us  # a --duration shorter than the window cuts it
        self.rows, self.times_us = rows[keep], times[keep]
        self.machines, self.keys = np.unique(np.asarray(self.records.machine[self.rows]), return_inverse=True)
        self.keys = self.keys.astype(np.int32)
        self.counts = np.bincount(self.times_us // bucket_us, minlength=n_buckets)[:n_buckets]


class Schedule:
    """Bucketed counts of a workload plus the exact arrival time, stream and key of every event."""

    def __init__(self, spec: WorkloadSpec, expected: list[np.ndarray] | None = None):
        self.spec = spec
        self.bucket_us = int(round(spec.bucket_s * US))
        self.duration_us = int(round(spec.duration_s * US))
        self.n_buckets = int(np.ceil(self.duration_us / self.bucket_us))
        first = spec.streams[0].trace
        self._records = (RecordStream(spec, self.bucket_us, self.n_buckets, self.duration_us)
                         if first is not None and first.records else None)
        if self._records is not None:
            expected = [self._records.counts.astype(np.float64)]  # exact: the rows themselves
        if expected is None:
            expected = [expected_counts(spec, i, self.n_buckets, self.bucket_us, self.duration_us)
                        for i in range(len(spec.streams))]
        self.expected = expected
        per_stream = []
        for i, (stream, e) in enumerate(zip(spec.streams, expected)):
            if spec.arrivals == "poisson" and stream.trace is None:
                counts = rng.poisson(spec.seed, rng.STREAM_COUNTS, np.arange(len(e)), e, i)
            else:
                cum = np.floor(np.cumsum(e) + 1e-9).astype(np.int64)
                counts = np.diff(np.concatenate([[0], cum]))
            per_stream.append(counts)
        self.stream_counts = np.vstack(per_stream)  # (streams, buckets)
        self.stream_cum = np.concatenate([np.zeros((len(per_stream), 1), np.int64),
                                          np.cumsum(self.stream_counts, axis=1)], axis=1)
        self.counts = self.stream_counts.sum(axis=0)
        self.cum = np.concatenate([[0], np.cumsum(self.counts)])  # cum[b] = events before bucket b
        self.total_events = int(self.cum[-1])
        self._fast = len(spec.streams) == 1 and spec.arrivals == "even"
        offsets = np.concatenate([[0], np.cumsum([s.keys.count for s in spec.streams])])
        self._keys = [KeySampler(s.keys, spec.seed, i, int(offsets[i])) for i, s in enumerate(spec.streams)]
        self._payload_seed = rng.stream_seed(spec.seed, rng.STREAM_PAYLOAD)

    # ---- shipping to Spark workers --------------------------------------------------------------------------
    def state(self) -> str:
        """The per-bucket expectations, compressed: lets a worker rebuild this schedule without the trace files."""
        buf = io.BytesIO()
        np.savez(buf, *self.expected)
        return base64.b64encode(zlib.compress(buf.getvalue(), 6)).decode("ascii")

    @classmethod
    def from_state(cls, spec: WorkloadSpec, state: str) -> "Schedule":
        with np.load(io.BytesIO(zlib.decompress(base64.b64decode(state)))) as data:
            expected = [data[f"arr_{i}"] for i in range(len(spec.streams))]
        return cls(spec, expected)

    # ---- within-bucket placement ------------------------------------------------------------------------------
    def _bucket_events(self, b0: int, b1: int) -> tuple[np.ndarray, np.ndarray]:
        """Arrival times (us from the start) and stream ids of every event in buckets [b0, b1), in event order."""
        times, streams = [], []
        W = self.bucket_us
        for s in range(len(self.spec.streams)):
            n = self.stream_counts[s, b0:b1]
            total = int(n.sum())
            if total == 0:
                continue
            bucket = np.repeat(np.arange(b0, b1), n)
            j = np.arange(total) - np.repeat(np.cumsum(n) - n, n)  # index within (bucket, stream)
            if self.spec.arrivals == "even":
                nn = np.repeat(n, n)
                offset = ((2 * j + 1) * W) // (2 * nn)
            else:
                # sorted uniforms per bucket: draw by global stream index, sort within bucket
                idx = self.stream_cum[s, b0] + np.arange(total)
                u = rng.uniform(self.spec.seed, rng.STREAM_PLACEMENT, idx, s)
                offset = np.floor(u * W).astype(np.int64)
                order = np.lexsort((offset, bucket))
                offset = offset[order]
            times.append(bucket * W + offset)
            streams.append(np.full(total, s, dtype=np.int32))
        if not times:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        t, st = np.concatenate(times), np.concatenate(streams)
        order = np.lexsort((st, t))  # merge streams by time; ties by stream index, stable within a stream
        return t[order], st[order]

    def _bucket_of(self, event: int) -> int:
        return int(np.searchsorted(self.cum, event, side="right") - 1)

    # ---- time -> events -------------------------------------------------------------------------------------
    def count_due(self, t_us: int) -> int:
        """Number of events whose arrival time is <= t_us (microseconds from the start)."""
        if t_us < 0:
            return 0
        b = t_us // self.bucket_us
        if b >= self.n_buckets:
            return self.total_events
        if self._records is not None:
            return int(np.searchsorted(self._records.times_us, t_us, side="right"))
        if not self._fast:
            times, _ = self._bucket_events(b, b + 1)
            return int(self.cum[b]) + int(np.searchsorted(times, t_us, side="right"))
        n = int(self.counts[b])
        rel = t_us - b * self.bucket_us
        # event j is due iff floor((2j+1)*W / 2n) <= rel  <=>  (2j+1)*W < 2n(rel+1)
        numerator = 2 * n * (rel + 1) - self.bucket_us
        due_in_bucket = -((-numerator) // (2 * self.bucket_us)) if numerator > 0 else 0
        return int(self.cum[b]) + min(max(due_in_bucket, 0), n)

    def arrival_us(self, first: int, stop: int) -> np.ndarray:
        """Arrival times of events [first, stop), microseconds from the start."""
        return self._times_and_streams(first, stop)[0]

    def _times_and_streams(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        if stop <= first:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        if self._records is not None:
            return self._records.times_us[first:stop], np.zeros(stop - first, np.int32)
        if self._fast:
            ids = np.arange(first, stop, dtype=np.int64)
            bucket = np.searchsorted(self.cum, ids, side="right") - 1
            j = ids - self.cum[bucket]
            n = self.counts[bucket]
            return bucket * self.bucket_us + ((2 * j + 1) * self.bucket_us) // (2 * n), np.zeros(len(ids), np.int32)
        b0, b1 = self._bucket_of(first), self._bucket_of(stop - 1) + 1
        times, streams = self._bucket_events(b0, b1)
        lo = first - int(self.cum[b0])
        return times[lo: lo + (stop - first)], streams[lo: lo + (stop - first)]

    # ---- events ------------------------------------------------------------------------------------------------
    def events(self, first: int, stop: int) -> EventColumns:
        if not 0 <= first <= stop <= self.total_events:
            raise IndexError(f"event range [{first}, {stop}) outside [0, {self.total_events})")
        ids = np.arange(first, stop, dtype=np.int64)
        arrivals, streams = self._times_and_streams(first, stop)
        if self._records is not None:  # the original rows, keyed by their machine
            return EventColumns(ids, arrivals, self._records.keys[first:stop],
                                self._records.records.payload(self._records.rows[first:stop]), streams)
        keys = self._sample_keys(ids, arrivals, streams)
        return EventColumns(ids, arrivals, keys, self._payload(ids.astype(np.uint64)), streams)

    def keys(self, first: int, stop: int) -> np.ndarray:
        """The keys of events [first, stop), as events() has them, without generating their payloads (the plant's
        key groups need only the keys)."""
        if not 0 <= first <= stop <= self.total_events:
            raise IndexError(f"event range [{first}, {stop}) outside [0, {self.total_events})")
        if self._records is not None:
            return self._records.keys[first:stop]
        arrivals, streams = self._times_and_streams(first, stop)
        return self._sample_keys(np.arange(first, stop, dtype=np.int64), arrivals, streams)

    def _sample_keys(self, ids: np.ndarray, arrivals: np.ndarray, streams: np.ndarray) -> np.ndarray:
        if len(self._keys) == 1:
            return self._keys[0](ids, arrivals)
        keys = np.empty(len(ids), dtype=np.int32)
        for s, sampler in enumerate(self._keys):
            mask = streams == s
            if mask.any():
                keys[mask] = sampler(ids[mask], arrivals[mask])
        return keys

    def _payload(self, uids: np.ndarray) -> np.ndarray:
        words = (self.spec.payload_bytes + 7) // 8
        with np.errstate(over="ignore"):
            h = rng.splitmix64(uids ^ self._payload_seed)
            multipliers = np.resize(_PAYLOAD_MULTIPLIERS, words)
            multipliers[0] = 1  # word 0 is the hash itself
            block = h[:, None] * multipliers[None, :]
        payload = block.view(np.uint8).reshape(len(uids), words * 8)
        return payload if words * 8 == self.spec.payload_bytes else payload[:, : self.spec.payload_bytes]

    # ---- describing the load ---------------------------------------------------------------------------------
    def rate_per_second(self) -> tuple[np.ndarray, np.ndarray]:
        """Bucket start times (s) and rates (events/s): what the timeline plot shows as the offered load."""
        starts = np.arange(self.n_buckets) * self.bucket_us / US
        return starts, self.counts / (self.bucket_us / US)

    def summary(self) -> dict[str, float]:
        """Duration, total, and the distribution of the per-bucket rate (events/s)."""
        _, rates = self.rate_per_second()
        mean = float(self.total_events / (self.duration_us / US))
        return {
            "duration_s": self.duration_us / US, "bucket_s": self.bucket_us / US, "total_events": self.total_events,
            "streams": len(self.spec.streams),
            "keys": len(self._records.machines) if self._records is not None else self.spec.total_keys,
            "rate_mean": mean, "rate_p50": float(np.percentile(rates, 50)), "rate_p99": float(np.percentile(rates, 99)),
            "rate_max": float(rates.max()), "rate_min": float(rates.min()),
            # burstiness: how far the load strays from its mean (peak-to-mean, coefficient of variation)
            "peak_to_mean": float(rates.max() / mean) if mean > 0 else 0.0,
            "rate_cv": float(rates.std() / rates.mean()) if rates.mean() > 0 else 0.0,
        }
