"""Deterministic event schedule: event i's arrival time, key and payload are a pure function of (spec, seed, i).

Why a pure function of the index rather than a random stream: the replay source reads arbitrary index ranges in
parallel partitions, and a replayed batch after a crash must produce exactly the same events. A counter-based hash
(splitmix64) gives that with no state to carry between partitions, and it is vectorised with numpy so generating
events costs far less than processing them.

Times are integer microseconds from the schedule's start, so "is event i due at time t" has one exact answer on the
driver (which counts due events) and on the workers (which generate them).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from workloads.profiles import resolve_profile
from workloads.spec import WorkloadSpec

US = 1_000_000
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

# Distinct streams of the counter-based generator, so keys and payloads are independent of each other.
_STREAM_KEY = 1
_STREAM_PAYLOAD = 2
# A payload is one splitmix64 word per event spread over its width by multiplying with distinct odd constants:
# as varied as hashing every word (each word is a bijection of the event's hash) at a fifth of the cost, which
# matters because the payload is most of what the source generates.


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser over a uint64 array (wrapping arithmetic is intended)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


_PAYLOAD_MULTIPLIERS = (np.arange(1, 65, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)


def _stream_seed(seed: int, stream: int) -> np.uint64:
    digest = hashlib.sha256(f"{seed}:{stream}".encode()).digest()
    return np.uint64(int.from_bytes(digest[:8], "little"))


@dataclass(frozen=True)
class EventColumns:
    event_id: np.ndarray  # int64
    arrival_us: np.ndarray  # int64, microseconds from the schedule start
    key: np.ndarray  # int32
    payload: np.ndarray  # uint8, shape (n, payload_bytes)


class Schedule:
    """Bucketed counts of a workload plus the exact arrival time of every event.

    Counts per bucket use cumulative rounding: bucket b holds floor(E(b+1)) - floor(E(b)) events, where E is the
    expected number of events up to the bucket's end. Totals are therefore exact to within one event for any
    prefix, however small the rate. Inside a bucket, n events are spread evenly, event j at
    start + floor((2j+1) * bucket / (2n)) microseconds.
    """

    def __init__(self, spec: WorkloadSpec):
        self.spec = spec
        self.bucket_us = int(round(spec.bucket_s * US))
        self.n_buckets = int(np.ceil(spec.duration_s * US / self.bucket_us))
        self.duration_us = int(round(spec.duration_s * US))
        _, rate_fn = resolve_profile(spec.profile, spec.params, where=spec.name)
        mids = (np.arange(self.n_buckets) + 0.5) * (self.bucket_us / US)
        widths = np.minimum(self.bucket_us, self.duration_us - np.arange(self.n_buckets) * self.bucket_us) / US
        expected = np.cumsum(np.maximum(rate_fn(mids), 0.0) * widths)
        cum = np.floor(expected + 1e-9).astype(np.int64)
        self.cum = np.concatenate([[0], cum])  # cum[b] = events before bucket b
        self.counts = np.diff(self.cum)
        self.total_events = int(self.cum[-1])
        self._key_seed = _stream_seed(spec.seed, _STREAM_KEY)
        self._payload_seed = _stream_seed(spec.seed, _STREAM_PAYLOAD)

    # ---- time -> events -------------------------------------------------------------------------------------
    def count_due(self, t_us: int) -> int:
        """Number of events whose arrival time is <= t_us (microseconds from the start)."""
        if t_us < 0:
            return 0
        b = t_us // self.bucket_us
        if b >= self.n_buckets:
            return self.total_events
        n = int(self.counts[b])
        rel = t_us - b * self.bucket_us
        # event j is due iff floor((2j+1)*W / 2n) <= rel  <=>  (2j+1)*W < 2n(rel+1)
        numerator = 2 * n * (rel + 1) - self.bucket_us
        due_in_bucket = -((-numerator) // (2 * self.bucket_us)) if numerator > 0 else 0
        return int(self.cum[b]) + min(max(due_in_bucket, 0), n)

    def arrival_us(self, first: int, stop: int) -> np.ndarray:
        """Arrival times of events [first, stop), microseconds from the start."""
        ids = np.arange(first, stop, dtype=np.int64)
        bucket = np.searchsorted(self.cum, ids, side="right") - 1
        j = ids - self.cum[bucket]
        n = self.counts[bucket]
        return bucket * self.bucket_us + ((2 * j + 1) * self.bucket_us) // (2 * n)

    # ---- events ------------------------------------------------------------------------------------------------
    def events(self, first: int, stop: int) -> EventColumns:
        if not 0 <= first <= stop <= self.total_events:
            raise IndexError(f"event range [{first}, {stop}) outside [0, {self.total_events})")
        ids = np.arange(first, stop, dtype=np.int64)
        uids = ids.astype(np.uint64)
        with np.errstate(over="ignore"):
            key_hash = splitmix64(uids * _M1 ^ self._key_seed)
        keys = (key_hash % np.uint64(self.spec.keys.count)).astype(np.int32)
        return EventColumns(ids, self.arrival_us(first, stop), keys, self._payload(uids))

    def _payload(self, uids: np.ndarray) -> np.ndarray:
        words = (self.spec.payload_bytes + 7) // 8
        with np.errstate(over="ignore"):
            h = splitmix64(uids ^ self._payload_seed)
            multipliers = np.resize(_PAYLOAD_MULTIPLIERS, words)
            multipliers[0] = 1  # word 0 is the hash itself
            block = h[:, None] * multipliers[None, :]
        payload = block.view(np.uint8).reshape(len(uids), words * 8)
        return payload if words * 8 == self.spec.payload_bytes else payload[:, : self.spec.payload_bytes]

    def rate_per_second(self) -> tuple[np.ndarray, np.ndarray]:
        """Bucket start times (s) and rates (events/s): what the timeline plot shows as the offered load."""
        starts = np.arange(self.n_buckets) * self.bucket_us / US
        return starts, self.counts / (self.bucket_us / US)
