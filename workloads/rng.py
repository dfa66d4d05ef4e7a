"""Counter-based randomness: a value is a pure function of (seed, stream, index), never of call order.

Why not numpy's Generator: the replay source generates arbitrary index ranges in parallel tasks, a replayed batch must
regenerate exactly the same values, and profiles draw per-bucket noise lazily. A hash of the counter gives all of
that with no state to carry, bit-identical on every machine and numpy version (integer arithmetic only, plus
log/cos/sqrt for normals).
"""
from __future__ import annotations

import hashlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_53 = float(1 << 53)

# Named streams, so independent uses of one seed never share values.
STREAM_KEY = 1
STREAM_PAYLOAD = 2
STREAM_PROFILE = 3
STREAM_NOISE = 4
STREAM_COUNTS = 5
STREAM_PLACEMENT = 6
STREAM_HOT_KEY = 7
STREAM_NEXMARK = 8


def splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser over a uint64 array (wrapping arithmetic is intended)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def stream_seed(seed: int, stream: int, *extra: int) -> np.uint64:
    digest = hashlib.sha256(":".join(str(v) for v in (seed, stream, *extra)).encode()).digest()
    return np.uint64(int.from_bytes(digest[:8], "little"))


def hashes(seed: int, stream: int, index: np.ndarray, *extra: int) -> np.ndarray:
    """One uint64 per index."""
    with np.errstate(over="ignore"):
        return splitmix64(np.asarray(index, dtype=np.uint64) * _M1 ^ stream_seed(seed, stream, *extra))


def uniform(seed: int, stream: int, index: np.ndarray, *extra: int) -> np.ndarray:
    """Uniform floats in (0, 1), one per index (never exactly 0, so log() is safe)."""
    return ((hashes(seed, stream, index, *extra) >> np.uint64(11)).astype(np.float64) + 0.5) / _TWO_POW_53


def normal(seed: int, stream: int, index: np.ndarray, *extra: int) -> np.ndarray:
    """Standard normal floats, one per index (Box-Muller on two independent uniforms)."""
    index = np.asarray(index, dtype=np.uint64)
    u1 = uniform(seed, stream, index * np.uint64(2), *extra)
    u2 = uniform(seed, stream, index * np.uint64(2) + np.uint64(1), *extra)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def poisson(seed: int, stream: int, index: np.ndarray, lam: np.ndarray, *extra: int) -> np.ndarray:
    """Poisson counts with means `lam`, one per index: exact inversion for small means, a continuity-corrected
    normal approximation above 500 (where its error is far below the run-to-run noise of any experiment)."""
    lam = np.asarray(lam, dtype=np.float64)
    index = np.asarray(index, dtype=np.uint64)
    out = np.zeros(lam.shape, dtype=np.int64)
    big = lam > 500
    if big.any():
        z = normal(seed, stream, index[big], *extra)
        out[big] = np.maximum(0, np.floor(lam[big] + np.sqrt(lam[big]) * z + 0.5)).astype(np.int64)
    small = ~big & (lam > 0)
    if small.any():
        u = uniform(seed, stream, index[small], *extra)
        lam_s = lam[small]
        k = np.zeros(lam_s.shape, dtype=np.int64)
        p = np.exp(-lam_s)
        cdf = p.copy()
        active = u > cdf
        while active.any():  # at most a few dozen rounds for means <= 500
            k[active] += 1
            p[active] *= lam_s[active] / k[active]
            cdf[active] += p[active]
            active &= (u > cdf) & (p > 0)
        out[small] = k
    return out
