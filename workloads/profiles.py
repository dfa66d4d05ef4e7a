"""Arrival-rate profiles: functions from time (seconds) to a rate (events per second).

A profile only says how fast events arrive; how many fall in each bucket and where inside it is the schedule's job
(``workloads.schedule``). Keeping the profile a plain rate function lets the schedule integrate any profile the
same way, so adding a profile never touches the event generator.

Each profile is registered with its parameter names, defaults and bounds, so a spec with a typo or an impossible
value is rejected with a message that names the parameter before anything runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

RateFunction = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ProfileParam:
    default: float | None  # None: required
    minimum: float = 0.0
    doc: str = ""


@dataclass(frozen=True)
class Profile:
    name: str
    params: Mapping[str, ProfileParam]
    build: Callable[[Mapping[str, float]], RateFunction]
    doc: str


def _constant(p: Mapping[str, float]) -> RateFunction:
    rate = p["rate"]
    return lambda t: np.full_like(t, rate, dtype=float)


def _step(p: Mapping[str, float]) -> RateFunction:
    low, high, at = p["low"], p["high"], p["at_s"]
    return lambda t: np.where(t < at, low, high).astype(float)


def _ramp(p: Mapping[str, float]) -> RateFunction:
    start, end, t0, t1 = p["start"], p["end"], p["ramp_start_s"], p["ramp_end_s"]
    if t1 <= t0:
        raise ValueError(f"ramp_end_s ({t1}) must be greater than ramp_start_s ({t0})")

    def rate(t: np.ndarray) -> np.ndarray:
        frac = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        return start + (end - start) * frac

    return rate


PROFILES: dict[str, Profile] = {
    "constant": Profile(
        "constant",
        {"rate": ProfileParam(None, doc="events per second")},
        _constant,
        "A fixed rate for the whole run.",
    ),
    "step": Profile(
        "step",
        {
            "low": ProfileParam(None, doc="events per second before the step"),
            "high": ProfileParam(None, doc="events per second from the step on"),
            "at_s": ProfileParam(None, doc="time of the step, seconds from the start"),
        },
        _step,
        "One sudden change of rate: the simplest test of how fast a controller reacts.",
    ),
    "ramp": Profile(
        "ramp",
        {
            "start": ProfileParam(None, doc="events per second before the ramp"),
            "end": ProfileParam(None, doc="events per second after the ramp"),
            "ramp_start_s": ProfileParam(0.0, doc="when the ramp begins"),
            "ramp_end_s": ProfileParam(None, doc="when the ramp reaches `end`"),
        },
        _ramp,
        "A linear change of rate between two times, flat before and after.",
    ),
}


def resolve_profile(name: str, params: Mapping[str, object], where: str) -> tuple[dict[str, float], RateFunction]:
    """Check a profile's parameters and build its rate function; errors name `where` and the parameter."""
    if name not in PROFILES:
        raise ValueError(f"{where}: unknown profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}")
    profile = PROFILES[name]
    unknown = sorted(set(params) - set(profile.params))
    if unknown:
        raise ValueError(
            f"{where}: unknown parameter(s) {', '.join(unknown)} for profile {name!r}; "
            f"expected: {', '.join(profile.params)}"
        )
    values: dict[str, float] = {}
    for key, spec in profile.params.items():
        if key not in params:
            if spec.default is None:
                raise ValueError(f"{where}: profile {name!r} needs parameter {key!r} ({spec.doc})")
            values[key] = float(spec.default)
            continue
        raw = params[key]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ValueError(f"{where}: parameter {key!r} of profile {name!r} must be a number, got {raw!r}")
        if not np.isfinite(raw) or raw < spec.minimum:
            raise ValueError(f"{where}: parameter {key!r} of profile {name!r} must be >= {spec.minimum}, got {raw!r}")
        values[key] = float(raw)
    try:
        return values, profile.build(values)
    except ValueError as exc:
        raise ValueError(f"{where}: profile {name!r}: {exc}") from None
