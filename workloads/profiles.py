"""Arrival-rate profiles: functions from time (seconds) to a rate (events per second).

A profile only says how fast events arrive; how many fall in each bucket and where inside it is the schedule's job
(``workloads.schedule``). Keeping the profile a plain rate function lets the schedule integrate any profile the
same way, so adding a profile never touches the event generator.

Each profile declares its parameters (`params.declare.Param`: type, default, bounds, meaning) and the constraints
across them (`params.declare.Rule`), and they are checked in one place (`check_profile_params`, through
`params.declare.check_params`) before anything runs, so a spec with a typo or an impossible value is rejected with a
message that names the parameter. A parameter whose default is None (`REQUIRED`) must be given. Workloads are the
experiments' inputs, not something a study tunes, so no profile parameter carries a search range.
`python -m workloads.inspect --describe PROFILE` prints a profile's declarations.

Random profiles (random walk, random peaks, the Google-like process) draw from `workloads.rng` with the workload's
seed: same seed, same rate.

Where a seed paper gives a profile but not its numbers, the defaults here are the project's choices; each says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from params.declare import Param, Rule, check_params, describe_params
from workloads import rng

RateFunction = Callable[[np.ndarray], np.ndarray]

REQUIRED = None  # the default of a profile parameter that has none: the spec must give it


@dataclass(frozen=True)
class ProfileContext:
    """What a profile may depend on besides its parameters."""
    duration_s: float
    seed: int
    stream: int = 0  # index of the sub-stream in a multi-stream workload (independent randomness per stream)


@dataclass(frozen=True)
class Profile:
    name: str
    params: Mapping[str, Param]
    build: Callable[[Mapping[str, float], ProfileContext], RateFunction]  # gets the checked parameters
    doc: str
    rules: tuple[Rule, ...] = ()  # constraints across the parameters, checked before `build` runs


def _constant(p, ctx) -> RateFunction:
    rate = p["rate"]
    return lambda t: np.full_like(t, rate, dtype=float)


def _step(p, ctx) -> RateFunction:
    low, high, at = p["low"], p["high"], p["at_s"]
    return lambda t: np.where(t < at, low, high).astype(float)


def _staircase(p, ctx) -> RateFunction:
    """Constant levels rising by `step` every `step_s`, from `start` to at most `end`: the injector of the
    multi-level seed's automatic benchmark (TPDS 2019, step 2), which raises the rate step by step and holds each
    level long enough to judge the configuration's health."""
    start, end, step, step_s, hold = p["start"], p["end"], p["step"], p["step_s"], p["hold_s"]
    return lambda t: np.minimum(start + step * np.floor(np.maximum(np.asarray(t, dtype=float) - hold, 0.0) / step_s),
                                end)


def _ramp(p, ctx) -> RateFunction:
    start, end, t0, t1 = p["start"], p["end"], p["ramp_start_s"], p["ramp_end_s"]

    def rate(t: np.ndarray) -> np.ndarray:
        frac = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        return start + (end - start) * frac

    return rate


def _sine(p, ctx) -> RateFunction:
    base, amplitude, period, phase = p["base"], p["amplitude"], p["period_s"], p["phase_s"]
    return lambda t: base + amplitude * np.sin(2 * np.pi * (t - phase) / period)


def _flash_crowd(p, ctx) -> RateFunction:
    base, peak, at, rise, decay = p["base"], p["peak"], p["at_s"], p["rise_s"], p["decay_s"]

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
    """AUTOSCALE paper (§5.1, Fig. 2, pp. 64-65): low plateau, exponential rise, high plateau, step-wise decrease."""
    low, high = p["low"], p["high"]
    t_rise = p["low_s"]
    t_high = t_rise + p["rise_s"]
    t_down = t_high + p["high_s"]
    steps, step_s = int(p["steps"]), p["step_s"]

    def rate(t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        frac = np.clip((t - t_rise) / max(p["rise_s"], 1e-9), 0.0, 1.0)
        rising = low * (high / low) ** frac
        k = np.clip(np.floor((t - t_down) / step_s) + 1, 0, steps)  # steps taken so far
        decreasing = high - (high - low) * k / steps
        return np.where(t < t_rise, low, np.where(t < t_high, rising, np.where(t < t_down, high, decreasing)))

    return rate


def _periodic_peaks(p, ctx) -> RateFunction:
    """SEEP thesis periodic source (§5.2.5-5.2.6, pp. 73-74): trough at base, peaks at `peak`, fixed durations."""
    base, peak, peak_s, trough_s, first = p["base"], p["peak"], p["peak_s"], p["trough_s"], p["first_peak_s"]
    period = peak_s + trough_s

    def rate(t: np.ndarray) -> np.ndarray:
        phase = np.mod(np.asarray(t, dtype=float) - first, period)
        in_peak = (np.asarray(t) >= first) & (phase < peak_s)
        return np.where(in_peak, peak, base).astype(float)

    return rate


def _random_peaks(p, ctx) -> RateFunction:
    """SEEP thesis T4 source: peaks of random length (bounded), troughs of random length; first peak fixed."""
    base, peak = p["base"], p["peak"]
    lo_p, hi_p, lo_t, hi_t = p["min_peak_s"], p["max_peak_s"], p["min_trough_s"], p["max_trough_s"]
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
    """Google-trace-like synthetic rate (SEEP thesis p. 81): lognormal marginal fitted to the 2011 task-event rate
    quantiles (median 31.6/s, sigma_log 1.02), temporal correlation as an AR(1) in log space, and a diurnal cycle.
    The thesis gives neither the correlation nor the diurnal amplitude: phi 0.98 per step and amplitude 0.3 (in log
    space) are the project's choices."""
    median, sigma, phi, step = p["median"], p["sigma_log"], p["phi"], p["step_s"]
    amplitude, period, scale = p["diurnal_amplitude"], p["period_s"], p["rate_scale"]
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
    variable per-pipeline load (§4.2, p. 40; App. A.0.2). The ramp length is not given there: 5 s is the project's
    choice. Ramps are centred on the period boundary."""
    low, high, period, ramp = p["low"], p["high"], p["period_s"], p["ramp_s"]
    pattern = _pattern(p["pattern"])
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


def _pattern(text: str) -> str:
    """A levels pattern as the profile reads it: spaces dropped, case ignored ("ab a" is "ABA")."""
    return text.replace(" ", "").upper()


# ---- declarations --------------------------------------------------------------------------------------------
def _num(doc: str, default: float | None = REQUIRED, *, minimum: float = 0.0, positive: bool = False) -> Param:
    """A numeric profile parameter: a float >= 0 (rates, seconds, counts), > 0 when `positive`."""
    return Param(float, default, doc, minimum=minimum, open_minimum=positive)


def _greater(high: str, low: str) -> Rule:
    return _rule((low, high), lambda v: v[high] > v[low], f"{high} ({{{high}}}) must be greater than {low} ({{{low}}})")


def _not_above(low: str, high: str) -> Rule:
    return _rule((low, high), lambda v: v[low] <= v[high], f"{low} ({{{low}}}) must not exceed {high} ({{{high}}})")


def _valid_pattern(v: Mapping[str, Any]) -> bool | str:
    pattern = _pattern(v["pattern"])
    return bool(pattern) and not set(pattern) - {"A", "B"} or \
        f"pattern must be a string of A (high) and B (low), got {v['pattern']!r}"


def _rule(fields: tuple[str, ...], holds: Callable[[Mapping[str, Any]], bool | str], message: str) -> Rule:
    """A profile rule: profiles know no topology or max degree, so `holds` reads the values only."""
    return Rule(fields, lambda values, context: holds(values), message)


P = _num
PROFILES: dict[str, Profile] = {
    "constant": Profile("constant", {"rate": P("events per second")}, _constant, "A fixed rate for the whole run."),
    "step": Profile(
        "step",
        {"low": P("events per second before the step"),
         "high": P("events per second from the step on"),
         "at_s": P("time of the step, seconds from the start")},
        _step, "One sudden change of rate: the simplest test of how fast a controller reacts."),
    "staircase": Profile(
        "staircase",
        {"start": P("events per second of the first level"),
         "end": P("events per second of the last level (the levels stop rising there)"),
         "step": P("events per second added at each level", positive=True),
         "step_s": P("seconds each level lasts", positive=True),
         "hold_s": P("seconds the first level lasts beyond step_s (a run's start-up, not judged)", 0.0)},
        _staircase, "Levels rising step by step: the multi-level seed's automatic benchmark injector (TPDS 2019).",
        (_not_above("start", "end"),)),
    "ramp": Profile(
        "ramp",
        {"start": P("events per second before the ramp"),
         "end": P("events per second after the ramp"),
         "ramp_start_s": P("when the ramp begins", 0.0),
         "ramp_end_s": P("when the ramp reaches `end`")},
        _ramp, "A linear change of rate between two times, flat before and after.",
        (_greater("ramp_end_s", "ramp_start_s"),)),
    "sine": Profile(
        "sine",
        {"base": P("mean events per second"), "amplitude": P("events per second above/below base"),
         "period_s": P("period, seconds (a day compressed, for a diurnal load)", positive=True),
         "phase_s": P("time of the first upward crossing of base", 0.0)},
        _sine, "A sinusoidal load: the diurnal cycle, compressed to the run's time scale.",
        (_rule(("amplitude", "base"), lambda v: v["amplitude"] <= v["base"],
              "amplitude ({amplitude}) must not exceed base ({base}): rates cannot go negative"),)),
    "flash_crowd": Profile(
        "flash_crowd",
        {"base": P("events per second outside the spike"), "peak": P("events per second at the top"),
         "at_s": P("when the spike starts"), "rise_s": P("seconds from base to peak (linear)", 2.0),
         "decay_s": P("time constant of the exponential decay back to base", positive=True)},
        _flash_crowd, "A sudden spike that decays exponentially: a news event, a sale, a retry storm."),
    "random_walk": Profile(
        "random_walk",
        {"start": P("events per second at t=0"), "step_sd": P("standard deviation of each step"),
         "step_s": P("seconds between steps", 1.0, positive=True), "min": P("lower bound (reflecting)", 0.0),
         "max": P("upper bound (reflecting)")},
        _random_walk, "A seeded random walk between bounds: a load with no pattern to learn.",
        (_rule(("start", "min", "max"), lambda v: v["min"] <= v["start"] <= v["max"],
              "start ({start}) must lie between min ({min}) and max ({max})"),)),
    "autoscale": Profile(
        "autoscale",
        {"low": P("events per second of the low plateaus", positive=True),
         "high": P("events per second at the top"),
         "low_s": P("length of the first low plateau"), "rise_s": P("length of the exponential rise"),
         "high_s": P("length of the high plateau"),
         "steps": P("steps of the decrease (a fraction is cut off)", 4.0, minimum=1.0),
         "step_s": P("length of each step of the decrease; low plateau afterwards")},
        _autoscale, "The AUTOSCALE paper's profile (§5.1, p. 64): low, exponential rise, high, step-wise decrease, "
                    "low. The paper gives no numbers; add `noise` for its irregularity.",
        (_greater("high", "low"),)),
    "periodic_peaks": Profile(
        "periodic_peaks",
        {"base": P("events per second in troughs (SEEP: 10)", 10.0),
         "peak": P("events per second in peaks (SEEP: 20)", 20.0),
         "peak_s": P("peak length (SEEP T5/T6: 20 s)", 20.0), "trough_s": P("trough length (40 s)", 40.0),
         "first_peak_s": P("start of the first peak", 0.0)},
        _periodic_peaks, "The SEEP thesis' periodic source (§5.2.5-5.2.6, pp. 73-74).",
        (_rule(("peak_s", "trough_s"), lambda v: v["peak_s"] + v["trough_s"] > 0,
              "peak_s ({peak_s}) + trough_s ({trough_s}) must be > 0"),)),
    "random_peaks": Profile(
        "random_peaks",
        {"base": P("events per second in troughs", 10.0), "peak": P("events per second in peaks", 20.0),
         "first_at_s": P("start of the first peak", 10.0), "first_peak_s": P("first peak length (SEEP: ~5 s)", 5.0),
         "min_peak_s": P("shortest later peak", 5.0), "max_peak_s": P("longest later peak (bounds the queue)", 30.0),
         "min_trough_s": P("shortest trough", 20.0), "max_trough_s": P("longest trough", 60.0)},
        _random_peaks, "The SEEP thesis' T4 source: peaks of random, bounded length (§5.2.5, p. 73). Bounds are the "
                       "project's choice; the thesis only says the queue stayed below 10000.",
        (_not_above("min_peak_s", "max_peak_s"), _not_above("min_trough_s", "max_trough_s"))),
    "google_like": Profile(
        "google_like",
        {"median": P("median events per second (Google 2011 task events: 31.6)", 31.6),
         # at most 5 (the project's choice: e^5, 148x the median per standard deviation, is burstier than any
         # shared trace); a fuzzed 165 drew rates whose events filled 23 GB before any check could refuse them
         "sigma_log": Param(float, 1.02, "standard deviation of log rate (1.02), at most 5", minimum=0.0, maximum=5.0),
         "phi": P("AR(1) correlation of log rate per step, in [0, 1) (project's choice)", 0.98),
         "step_s": P("seconds per AR(1) step", 1.0, positive=True),
         "diurnal_amplitude": P("amplitude of the daily cycle in log space (project's choice)", 0.3),
         "period_s": P("length of a 'day', seconds (compress it to the run)", 86400.0, positive=True),
         "rate_scale": P("multiplies every rate (e.g. 1000 for the thesis' 1000x acceleration)", 1.0)},
        _google_like, "A Google-trace-like rate for when a real trace is too slow or too short (SEEP thesis p. 81).",
        (_rule(("phi",), lambda v: v["phi"] < 1, "phi ({phi}) must be below 1 (a correlation in [0, 1))"),)),
    "levels": Profile(
        "levels",
        {"low": P("events per second in B periods"), "high": P("events per second in A periods"),
         "period_s": P("length of each period", 60.0, positive=True),
         "ramp_s": P("ramp between levels (project's choice)", 5.0),
         "pattern": Param(str, REQUIRED, "string of A (high) and B (low), one letter per period; spaces and case "
                                         "are ignored")},
        _levels, "A fixed high/low pattern with ramps: the Sousa dissertation's variable load (§4.2, p. 40; App. A).",
        (_rule(("pattern",), _valid_pattern, "pattern must be a string of A (high) and B (low)"),
         _rule(("ramp_s", "period_s"), lambda v: v["ramp_s"] < v["period_s"],
              "ramp_s ({ramp_s}) must be shorter than period_s ({period_s})"))),
}


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _required(declared: Mapping[str, Param]) -> tuple[Rule, ...]:
    """A REQUIRED parameter must be given (its default, None, is no value); they run before the profile's own
    rules, which may then compare the values freely. (Non-finite numbers are refused by Param itself.)"""
    return tuple(_rule((key,), lambda v, key=key: v[key] is not None,
                       f"needs parameter {key!r} ({_escaped(spec.doc)})")
                 for key, spec in declared.items() if spec.default is REQUIRED)


def _owner(where: str, name: str) -> str:
    return f"{where}: profile {name!r}"


def check_profile_params(name: str, params: Mapping[str, object], where: str) -> dict[str, float | str]:
    """A profile's parameters completed with defaults and checked against its declaration and rules; errors
    (params.declare.ParamError, a ValueError) read "<where>: profile '<name>': ..." and name the parameter."""
    if name not in PROFILES:
        raise ValueError(f"{where}: unknown profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    profile = PROFILES[name]
    return check_params(_owner(where, name), profile.params, params,
                        _required(profile.params) + profile.rules)


def resolve_profile(name: str, params: Mapping[str, object], where: str,
                    context: ProfileContext) -> tuple[dict[str, float | str], RateFunction]:
    """Checked parameters and the profile's rate function for this run (duration, seed, stream)."""
    values = check_profile_params(name, params, where)
    try:
        return values, PROFILES[name].build(values, context)
    except ValueError as exc:
        raise ValueError(f"{_owner(where, name)}: {exc}") from None


def describe_profile(name: str) -> str:
    """A profile as a user reads it: what it is, its parameters (type, default or `required`, bounds, meaning) and
    the rules across them, from the same declarations the checks use."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    profile = PROFILES[name]
    lines = [f"{name}: {profile.doc}"]
    lines += [line.replace(", default None", ", required", 1) for line in describe_params(profile.params)]
    lines += [f"  rule: {rule.describe()}" for rule in profile.rules]
    return "\n".join(lines)
