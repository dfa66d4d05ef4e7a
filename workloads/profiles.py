"""Arrival-rate profiles: functions from time (seconds) to a rate (events per second).

A profile only says how fast events arrive; how many fall in each bucket and where inside it is the schedule's job
(``workloads.schedule``). Keeping the profile a plain rate function lets the schedule integrate any profile the
same way, so adding a profile never touches the event generator.

Each profile is registered with its parameter names, defaults and bounds, so a spec with a typo or an impossible
value is rejected with a message that names the parameter before anything runs. Random profiles (random walk,
random peaks, the Google-like process) draw from `workloads.rng` with the workload's seed: same seed, same rate.

Where a seed paper gives a profile but not its numbers, the defaults here are the project's choices; each says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from workloads import rng

RateFunction = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ProfileParam:
    default: float | str | None  # None: required
    minimum: float = 0.0
    doc: str = ""
    kind: type = float  # float, or str for patterns


@dataclass(frozen=True)
class ProfileContext:
    """What a profile may depend on besides its parameters."""
    duration_s: float
    seed: int
    stream: int = 0  # index of the sub-stream in a multi-stream workload (independent randomness per stream)


@dataclass(frozen=True)
class Profile:
    name: str
    params: Mapping[str, ProfileParam]
    build: Callable[[Mapping[str, float], ProfileContext], RateFunction]
    doc: str


def _constant(p, ctx) -> RateFunction:
    rate = p["rate"]
    return lambda t: np.full_like(t, rate, dtype=float)


def _step(p, ctx) -> RateFunction:
    low, high, at = p["low"], p["high"], p["at_s"]
    return lambda t: np.where(t < at, low, high).astype(float)


def _ramp(p, ctx) -> RateFunction:
    start, end, t0, t1 = p["start"], p["end"], p["ramp_start_s"], p["ramp_end_s"]
    if t1 <= t0:
        raise ValueError(f"ramp_end_s ({t1}) must be greater than ramp_start_s ({t0})")

    def rate(t: np.ndarray) -> np.ndarray:
        frac = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        return start + (end - start) * frac

    return rate


def _sine(p, ctx) -> RateFunction:
    base, amplitude, period, phase = p["base"], p["amplitude"], p["period_s"], p["phase_s"]
    if period <= 0:
        raise ValueError("period_s must be > 0")
    if amplitude > base:
        raise ValueError(f"amplitude ({amplitude}) must not exceed base ({base}): rates cannot go negative")
    return lambda t: base + amplitude * np.sin(2 * np.pi * (t - phase) / period)


def _flash_crowd(p, ctx) -> RateFunction:
    base, peak, at, rise, decay = p["base"], p["peak"], p["at_s"], p["rise_s"], p["decay_s"]
    if decay <= 0:
        raise ValueError("decay_s must be > 0")

    def rate(t: np.ndarray) -> np.ndarray:
        up = np.clip((t - at) / rise, 0.0, 1.0) if rise > 0 else (t >= at).astype(float)
        after = np.maximum(t - at - rise, 0.0)
        level = np.where(t < at + rise, up, np.exp(-after / decay))
        return base + (peak - base) * np.where(t < at, 0.0, level)

    return rate


def _grid(duration_s: float, step_s: float) -> np.ndarray:
    return np.arange(int(np.ceil(duration_s / step_s)) + 1)


def _on_grid(values: np.ndarray, step_s: float) -> RateFunction:
    """A piecewise-constant rate from values on a time grid of `step_s`."""
    return lambda t: values[np.clip((np.asarray(t) // step_s).astype(np.int64), 0, len(values) - 1)]


def _random_walk(p, ctx) -> RateFunction:
    start, sd, step, lo, hi = p["start"], p["step_sd"], p["step_s"], p["min"], p["max"]
    if step <= 0:
        raise ValueError("step_s must be > 0")
    if not lo <= start <= hi:
        raise ValueError(f"start ({start}) must lie in [min, max] = [{lo}, {hi}]")
    k = _grid(ctx.duration_s, step)
    steps = rng.normal(ctx.seed, rng.STREAM_PROFILE, k, ctx.stream) * sd
    values = np.empty(len(k))
    level = start
    for i, s in enumerate(steps):  # reflecting bounds: the walk stays in [min, max] without sticking to them
        values[i] = level
        level += s
        if level > hi:
            level = hi - (level - hi)
        if level < lo:
            level = lo + (lo - level)
        level = min(max(level, lo), hi)
    return _on_grid(values, step)


def _autoscale(p, ctx) -> RateFunction:
    """AUTOSCALE paper (digest_001 §4, §6.6): low plateau, exponential rise, high plateau, step-wise decrease."""
    low, high = p["low"], p["high"]
    t_rise = p["low_s"]
    t_high = t_rise + p["rise_s"]
    t_down = t_high + p["high_s"]
    steps, step_s = int(p["steps"]), p["step_s"]
    if low <= 0 or high <= low:
        raise ValueError(f"need 0 < low < high, got low={low}, high={high}")
    if steps < 1:
        raise ValueError("steps must be >= 1")

    def rate(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        frac = np.clip((t - t_rise) / max(p["rise_s"], 1e-9), 0.0, 1.0)
        rising = low * (high / low) ** frac
        k = np.clip(np.floor((t - t_down) / step_s) + 1, 0, steps)  # steps taken so far
        decreasing = high - (high - low) * k / steps
        return np.where(t < t_rise, low, np.where(t < t_high, rising, np.where(t < t_down, high, decreasing)))

    return rate


def _periodic_peaks(p, ctx) -> RateFunction:
    """SEEP thesis periodic source (digest_002 §6.4): trough at base, peaks at `peak`, fixed durations."""
    base, peak, peak_s, trough_s, first = p["base"], p["peak"], p["peak_s"], p["trough_s"], p["first_peak_s"]
    period = peak_s + trough_s
    if period <= 0:
        raise ValueError("peak_s + trough_s must be > 0")

    def rate(t: np.ndarray) -> np.ndarray:
        phase = np.mod(np.asarray(t, dtype=float) - first, period)
        in_peak = (np.asarray(t) >= first) & (phase < peak_s)
        return np.where(in_peak, peak, base).astype(float)

    return rate


def _random_peaks(p, ctx) -> RateFunction:
    """SEEP thesis T4 source: peaks of random length (bounded), troughs of random length; first peak fixed."""
    base, peak = p["base"], p["peak"]
    lo_p, hi_p, lo_t, hi_t = p["min_peak_s"], p["max_peak_s"], p["min_trough_s"], p["max_trough_s"]
    if lo_p > hi_p or lo_t > hi_t:
        raise ValueError("min_*_s must not exceed max_*_s")
    edges, t, i = [], p["first_at_s"], 0
    first = True
    while t < ctx.duration_s:
        u = rng.uniform(ctx.seed, rng.STREAM_PROFILE, np.array([2 * i, 2 * i + 1]), ctx.stream)
        length = p["first_peak_s"] if first else lo_p + (hi_p - lo_p) * u[0]
        edges.append((t, t + length))
        t += length + lo_t + (hi_t - lo_t) * u[1]
        first, i = False, i + 1
    starts = np.array([e[0] for e in edges]) if edges else np.zeros(0)
    ends = np.array([e[1] for e in edges]) if edges else np.zeros(0)

    def rate(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        idx = np.searchsorted(starts, t, side="right") - 1
        inside = (idx >= 0) & (t < ends[np.clip(idx, 0, max(len(ends) - 1, 0))]) if len(ends) else np.zeros(t.shape, bool)
        return np.where(inside, peak, base).astype(float)

    return rate


def _google_like(p, ctx) -> RateFunction:
    """Google-trace-like synthetic rate (digest_002 §6.4): lognormal marginal fitted to the 2011 task-event rate
    quantiles (median 31.6/s, sigma_log 1.02), temporal correlation as an AR(1) in log space, and a diurnal cycle.
    The thesis gives neither the correlation nor the diurnal amplitude: phi 0.98 per step and amplitude 0.3 (in log
    space) are the project's choices."""
    median, sigma, phi, step = p["median"], p["sigma_log"], p["phi"], p["step_s"]
    amplitude, period, scale = p["diurnal_amplitude"], p["period_s"], p["rate_scale"]
    if not 0 <= phi < 1:
        raise ValueError(f"phi must be in [0, 1), got {phi}")
    if step <= 0 or period <= 0:
        raise ValueError("step_s and period_s must be > 0")
    k = _grid(ctx.duration_s, step)
    z = rng.normal(ctx.seed, rng.STREAM_PROFILE, k, ctx.stream)
    x = np.empty(len(k))
    x[0] = z[0] * sigma  # start in the stationary distribution
    innovation = sigma * np.sqrt(1 - phi**2)
    for i in range(1, len(k)):
        x[i] = phi * x[i - 1] + innovation * z[i]
    diurnal = amplitude * np.sin(2 * np.pi * k * step / period)
    values = scale * median * np.exp(x + diurnal)
    return _on_grid(values, step)


def _levels(p, ctx) -> RateFunction:
    """A fixed pattern of high (A) and low (B) periods with linear ramps between them: the Sousa dissertation's
    variable per-pipeline load (digest_000 §3.3, §5.3). The ramp length is not given there: 5 s is the project's
    choice. Ramps are centred on the period boundary."""
    low, high, period, ramp = p["low"], p["high"], p["period_s"], p["ramp_s"]
    pattern = str(p["pattern"]).replace(" ", "").upper()
    if not pattern or set(pattern) - {"A", "B"}:
        raise ValueError(f"pattern must be a string of A (high) and B (low), got {p['pattern']!r}")
    if period <= 0 or ramp >= period:
        raise ValueError("need period_s > 0 and ramp_s < period_s")
    levels = np.array([high if c == "A" else low for c in pattern], dtype=float)

    def rate(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        i = np.clip((t // period).astype(np.int64), 0, len(levels) - 1)
        value = levels[i]
        if ramp > 0:
            nxt = levels[np.clip(i + 1, 0, len(levels) - 1)]
            prv = levels[np.clip(i - 1, 0, len(levels) - 1)]
            into = t - i * period  # seconds into the period
            # second half of the ramp into this period / first half of the ramp into the next one
            w_prev = np.clip(0.5 - into / ramp, 0.0, 0.5) * (i > 0)
            w_next = np.clip(0.5 - (period - into) / ramp, 0.0, 0.5) * (i < len(levels) - 1)
            value = value + w_prev * (prv - value) + w_next * (nxt - value)
        return value

    return rate


P = ProfileParam
PROFILES: dict[str, Profile] = {
    "constant": Profile("constant", {"rate": P(None, doc="events per second")}, _constant,
                        "A fixed rate for the whole run."),
    "step": Profile(
        "step",
        {"low": P(None, doc="events per second before the step"),
         "high": P(None, doc="events per second from the step on"),
         "at_s": P(None, doc="time of the step, seconds from the start")},
        _step, "One sudden change of rate: the simplest test of how fast a controller reacts."),
    "ramp": Profile(
        "ramp",
        {"start": P(None, doc="events per second before the ramp"),
         "end": P(None, doc="events per second after the ramp"),
         "ramp_start_s": P(0.0, doc="when the ramp begins"),
         "ramp_end_s": P(None, doc="when the ramp reaches `end`")},
        _ramp, "A linear change of rate between two times, flat before and after."),
    "sine": Profile(
        "sine",
        {"base": P(None, doc="mean events per second"), "amplitude": P(None, doc="events per second above/below base"),
         "period_s": P(None, doc="period, seconds (a day compressed, for a diurnal load)"),
         "phase_s": P(0.0, doc="time of the first upward crossing of base")},
        _sine, "A sinusoidal load: the diurnal cycle, compressed to the run's time scale."),
    "flash_crowd": Profile(
        "flash_crowd",
        {"base": P(None, doc="events per second outside the spike"), "peak": P(None, doc="events per second at the top"),
         "at_s": P(None, doc="when the spike starts"), "rise_s": P(2.0, doc="seconds from base to peak (linear)"),
         "decay_s": P(None, doc="time constant of the exponential decay back to base")},
        _flash_crowd, "A sudden spike that decays exponentially: a news event, a sale, a retry storm."),
    "random_walk": Profile(
        "random_walk",
        {"start": P(None, doc="events per second at t=0"), "step_sd": P(None, doc="standard deviation of each step"),
         "step_s": P(1.0, doc="seconds between steps"), "min": P(0.0, doc="lower bound (reflecting)"),
         "max": P(None, doc="upper bound (reflecting)")},
        _random_walk, "A seeded random walk between bounds: a load with no pattern to learn."),
    "autoscale": Profile(
        "autoscale",
        {"low": P(None, doc="events per second of the low plateaus"), "high": P(None, doc="events per second at the top"),
         "low_s": P(None, doc="length of the first low plateau"), "rise_s": P(None, doc="length of the exponential rise"),
         "high_s": P(None, doc="length of the high plateau"), "steps": P(4, minimum=1, doc="steps of the decrease"),
         "step_s": P(None, doc="length of each step of the decrease; low plateau afterwards")},
        _autoscale, "The AUTOSCALE paper's profile (digest_001 §6.6): low, exponential rise, high, step-wise decrease, "
                    "low. The paper gives no numbers; add `noise` for its irregularity."),
    "periodic_peaks": Profile(
        "periodic_peaks",
        {"base": P(10.0, doc="events per second in troughs (SEEP: 10)"),
         "peak": P(20.0, doc="events per second in peaks (SEEP: 20)"),
         "peak_s": P(20.0, doc="peak length (SEEP T5/T6: 20 s)"), "trough_s": P(40.0, doc="trough length (40 s)"),
         "first_peak_s": P(0.0, doc="start of the first peak")},
        _periodic_peaks, "The SEEP thesis' periodic source (digest_002 §6.4)."),
    "random_peaks": Profile(
        "random_peaks",
        {"base": P(10.0, doc="events per second in troughs"), "peak": P(20.0, doc="events per second in peaks"),
         "first_at_s": P(10.0, doc="start of the first peak"), "first_peak_s": P(5.0, doc="first peak length (SEEP: ~5 s)"),
         "min_peak_s": P(5.0, doc="shortest later peak"), "max_peak_s": P(30.0, doc="longest later peak (bounds the queue)"),
         "min_trough_s": P(20.0, doc="shortest trough"), "max_trough_s": P(60.0, doc="longest trough")},
        _random_peaks, "The SEEP thesis' T4 source: peaks of random, bounded length (digest_002 §6.4). Bounds are the "
                       "project's choice; the thesis only says the queue stayed below 10000."),
    "google_like": Profile(
        "google_like",
        {"median": P(31.6, doc="median events per second (Google 2011 task events: 31.6)"),
         "sigma_log": P(1.02, doc="standard deviation of log rate (1.02)"),
         "phi": P(0.98, doc="AR(1) correlation of log rate per step (project's choice)"),
         "step_s": P(1.0, doc="seconds per AR(1) step"),
         "diurnal_amplitude": P(0.3, doc="amplitude of the daily cycle in log space (project's choice)"),
         "period_s": P(86400.0, doc="length of a 'day', seconds (compress it to the run)"),
         "rate_scale": P(1.0, doc="multiplies every rate (e.g. 1000 for the thesis' 1000x acceleration)")},
        _google_like, "A Google-trace-like rate for when a real trace is too slow or too short (digest_002 §6.4)."),
    "levels": Profile(
        "levels",
        {"low": P(None, doc="events per second in B periods"), "high": P(None, doc="events per second in A periods"),
         "period_s": P(60.0, doc="length of each period"), "ramp_s": P(5.0, doc="ramp between levels (project's choice)"),
         "pattern": P(None, doc="string of A (high) and B (low), one letter per period", kind=str)},
        _levels, "A fixed high/low pattern with ramps: the Sousa dissertation's variable load (digest_000 §3.3)."),
}


def check_params(name: str, params: Mapping[str, object], where: str) -> dict[str, float | str]:
    """A profile's parameters completed with defaults and checked; errors name `where` and the parameter."""
    if name not in PROFILES:
        raise ValueError(f"{where}: unknown profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    profile = PROFILES[name]
    unknown = sorted(set(params) - set(profile.params))
    if unknown:
        raise ValueError(
            f"{where}: unknown parameter(s) {', '.join(unknown)} for profile {name!r}; "
            f"expected: {', '.join(profile.params)}"
        )
    values: dict[str, float | str] = {}
    for key, spec in profile.params.items():
        if key not in params:
            if spec.default is None:
                raise ValueError(f"{where}: profile {name!r} needs parameter {key!r} ({spec.doc})")
            values[key] = spec.default if spec.kind is str else float(spec.default)
            continue
        raw = params[key]
        if spec.kind is str:
            if not isinstance(raw, str):
                raise ValueError(f"{where}: parameter {key!r} of profile {name!r} must be a string, got {raw!r}")
            values[key] = raw
            continue
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError(f"{where}: parameter {key!r} of profile {name!r} must be a number, got {raw!r}")
        if not np.isfinite(raw) or raw < spec.minimum:
            raise ValueError(f"{where}: parameter {key!r} of profile {name!r} must be >= {spec.minimum}, got {raw!r}")
        values[key] = float(raw)
    return values


def resolve_profile(name: str, params: Mapping[str, object], where: str,
                    context: ProfileContext) -> tuple[dict[str, float | str], RateFunction]:
    """Checked parameters and the profile's rate function for this run (duration, seed, stream)."""
    values = check_params(name, params, where)
    try:
        return values, PROFILES[name].build(values, context)
    except ValueError as exc:
        raise ValueError(f"{where}: profile {name!r}: {exc}") from None
