"""The declared dataset of the load predictors: which traces (and recorded runs), which windows of them, at what
resolution, with which stretches masked. The same spec on another machine gives the same rows, and its digest is
recorded with every model trained on it.

A spec is a YAML file (the project's is analysis/predictors/dataset.yaml):

    horizon: {step_s: 2.0, steps: 5}     # the controller's sub-interval and iteration (controllers.forecast.Horizon)
    max_points: 20000                    # most recent sub-intervals kept per trace, after masking
    outage: {min_s: 600, nats: 14}       # automatic outage detection (below)
    traces:
      - name: nasa_http_1995             # folder under the traces directory, or a path to a rate.csv
        compression: 30                  # trace seconds per replay second: 60 s buckets become 2 s sub-intervals
        period_s: 86400                  # a season (trace time) for the seasonal-naive baseline
        window: [0, 2592000]             # trace time [start, end) to use
        mask: [[86400, 90000]]           # declared bad stretches (trace time)
    runs: [<run id>, ...]                # recorded experiment runs, only by explicit id
    weighting: events                    # training weight: by level within its trace (events), every window
                                         # the same (windows) or every trace the same (traces)

Each trace is read at `step_s × compression` trace seconds per sub-interval (a whole number of its buckets), the
resolution a replay of it with that compression has. **Outages**: a run of empty buckets is masked as a logging
outage, not a drop of load, when it lasts at least `outage.min_s` trace seconds AND an idle stretch that long would be
a rare event at the trace's typical rate: median bucket rate × length > `outage.nats` (14 nats: a Poisson
probability below 1e-6). The median, not the mean: a bursty trace that is mostly empty (its median bucket holds 0)
has no detectable outage, since emptiness is its normal state, while the mean, pulled up by the bursts, would mask
its quiet hours. Both thresholds are the project's choice; `python -m analysis.predictors dataset` and
docs/predictors.md list what they masked on each trace. A masked
stretch splits the series: no window of history or target crosses it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import yaml

from controllers.forecast import FEATURE_LAGS, IDLE_WINDOW_EVENTS, Horizon

DEFAULT_SPEC = Path(__file__).resolve().parent / "dataset.yaml"
_TOP = {"horizon", "max_points", "outage", "traces", "runs", "weighting"}
WEIGHTINGS = ("events", "windows", "traces")
_TRACE = {"name", "compression", "period_s", "window", "mask"}
_HORIZON = {"step_s", "steps", "lags", "idle_events"}
_OUTAGE = {"min_s", "nats"}


class DatasetError(ValueError):
    """A dataset spec or series that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class TraceEntry:
    name: str
    compression: float = 1.0
    period_s: float | None = None
    window: tuple[float, float] | None = None
    mask: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class DatasetSpec:
    horizon: Horizon
    traces: tuple[TraceEntry, ...]
    runs: tuple[str, ...] = ()
    max_points: int = 20000
    outage_min_s: float = 600.0
    outage_nats: float = 14.0
    source: str = "<dict>"
    weighting: str = "events"  # training weight per window: see evaluation.group_weights

    def canonical(self) -> dict[str, Any]:
        h = self.horizon
        return {"horizon": {"step_s": h.step_s, "steps": h.steps, "lags": h.lags, "idle_events": h.idle_events},
                "max_points": self.max_points,
                "outage": {"min_s": self.outage_min_s, "nats": self.outage_nats},
                "traces": [asdict(t) for t in self.traces], "runs": list(self.runs), "weighting": self.weighting}


@dataclass
class Series:
    """One source's rates (events/s per sub-interval, NaN where masked) and what the evaluation needs about it."""
    name: str
    group: str  # leave-one-out unit: the trace, or the workload family of recorded runs
    rates: np.ndarray
    period_steps: int | None = None
    masked: dict[str, float] = field(default_factory=dict)  # what was masked: declared / outage sub-intervals

    def segments(self) -> list[tuple[int, int]]:
        """Contiguous unmasked stretches [start, stop) of sub-intervals."""
        ok = np.isfinite(self.rates).astype(np.int8)
        edges = np.flatnonzero(np.diff(np.concatenate([[0], ok, [0]])))
        return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


@dataclass
class Dataset:
    spec: DatasetSpec
    series: dict[str, Series]
    digest: str  # sha256 of the canonical spec and of every input's content

    def describe(self) -> list[str]:
        lines = []
        for s in self.series.values():
            kept = int(np.isfinite(s.rates).sum())
            masked = ", ".join(f"{v:g} {k}" for k, v in s.masked.items() if v) or "nothing"
            lines.append(f"{s.name}: {kept} sub-intervals kept in {len(s.segments())} segment(s); masked in the "
                         f"whole trace: {masked}")
        return lines


# ---------------------------------------------------------------- spec

def _number(value: Any, where: str, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise DatasetError(f"{where} must be a number, got {value!r}")
    if positive and value <= 0:
        raise DatasetError(f"{where} must be > 0, got {value!r}")
    return float(value)


def _whole(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DatasetError(f"{where} must be a whole number >= {minimum}, got {value!r}")
    return value


def _span(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise DatasetError(f"{where} must be [start_s, end_s], got {value!r}")
    start, end = _number(value[0], f"{where}[0]", positive=False), _number(value[1], f"{where}[1]", positive=False)
    if not 0 <= start < end:
        raise DatasetError(f"{where} must satisfy 0 <= start_s < end_s, got {value!r}")
    return start, end


def _unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    extra = sorted(set(raw) - known)
    if extra:
        raise DatasetError(f"{where}: unknown field(s) {', '.join(extra)}; known: {', '.join(sorted(known))}")


def parse_spec(raw: Any, source: str = "<dict>") -> DatasetSpec:
    if not isinstance(raw, Mapping):
        raise DatasetError(f"{source}: a dataset spec is a mapping, got {type(raw).__name__}")
    _unknown(raw, _TOP, source)
    h = raw.get("horizon", {})
    if not isinstance(h, Mapping):
        raise DatasetError(f"{source}: horizon must be a mapping with step_s and steps")
    _unknown(h, _HORIZON, f"{source}: horizon")
    steps = _whole(h.get("steps", 5), f"{source}: horizon.steps", 1)
    lags = _whole(h.get("lags", FEATURE_LAGS), f"{source}: horizon.lags", 5)
    horizon = Horizon(_number(h.get("step_s", 2.0), f"{source}: horizon.step_s"), steps, lags,
                      _number(h.get("idle_events", IDLE_WINDOW_EVENTS), f"{source}: horizon.idle_events"))
    o = raw.get("outage", {})
    if not isinstance(o, Mapping):
        raise DatasetError(f"{source}: outage must be a mapping with min_s and nats")
    _unknown(o, _OUTAGE, f"{source}: outage")
    max_points = _whole(raw.get("max_points", 20000), f"{source}: max_points", 100)
    traces_raw = raw.get("traces", [])
    if not isinstance(traces_raw, list):
        raise DatasetError(f"{source}: traces must be a list")
    traces = []
    for i, t in enumerate(traces_raw):
        where = f"{source}: traces[{i}]"
        if isinstance(t, str):
            t = {"name": t}
        if not isinstance(t, Mapping) or not isinstance(t.get("name"), str) or not t["name"]:
            raise DatasetError(f"{where} needs a name (a trace folder or a rate.csv path)")
        where = f"{source}: traces[{i}] ({t['name']})"
        _unknown(t, _TRACE, where)
        period = t.get("period_s")
        traces.append(TraceEntry(
            t["name"], _number(t.get("compression", 1.0), f"{where}.compression"),
            None if period is None else _number(period, f"{where}.period_s"),
            None if t.get("window") is None else _span(t["window"], f"{where}.window"),
            tuple(_span(m, f"{where}.mask[{k}]") for k, m in enumerate(t.get("mask") or []))))
    names = [t.name for t in traces]
    if len(set(names)) != len(names):
        raise DatasetError(f"{source}: traces: {sorted({n for n in names if names.count(n) > 1})} listed twice")
    runs = raw.get("runs") or []
    if not isinstance(runs, list) or not all(isinstance(r, str) and r for r in runs):
        raise DatasetError(f"{source}: runs must be a list of MLflow run ids")
    weighting = raw.get("weighting", "events")
    if weighting not in WEIGHTINGS:
        raise DatasetError(f"{source}: weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
    if not traces and not runs:
        raise DatasetError(f"{source}: no traces and no runs: the dataset would be empty")
    return DatasetSpec(horizon, tuple(traces), tuple(runs), max_points,
                       _number(o.get("min_s", 600.0), f"{source}: outage.min_s"),
                       _number(o.get("nats", 14.0), f"{source}: outage.nats"), source, weighting)


def load_spec(path: Path | str = DEFAULT_SPEC) -> DatasetSpec:
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"dataset spec {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise DatasetError(f"{path}: not valid YAML: {exc}") from None
    return parse_spec(raw, str(path))


# ---------------------------------------------------------------- series

def outage_mask(counts: np.ndarray, bucket_s: float, min_s: float, nats: float) -> np.ndarray:
    """True on buckets inside a run of zeros that is an outage (see the module docstring)."""
    typical_rate = float(np.median(counts)) / bucket_s if len(counts) else 0.0
    zero = (counts == 0).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], zero, [0]])))
    out = np.zeros(len(counts), dtype=bool)
    for start, stop in zip(edges[::2], edges[1::2]):
        length_s = (stop - start) * bucket_s
        if length_s >= min_s and typical_rate * length_s > nats:
            out[start:stop] = True
    return out


def trace_series(entry: TraceEntry, spec: DatasetSpec, where: str) -> tuple[Series, str]:
    """The trace entry as sub-intervals of `step_s` replay seconds, masked; and the trace file's sha256."""
    from workloads.traces import TraceError, load_trace

    try:
        trace = load_trace(entry.name)
    except TraceError as exc:
        raise DatasetError(f"{where}: {exc}") from None
    sub_s = spec.horizon.step_s * entry.compression  # trace seconds per sub-interval
    k = sub_s / trace.bucket_s
    if k < 1 - 1e-9 or abs(k - round(k)) > 1e-6:
        raise DatasetError(
            f"{where}.compression: {spec.horizon.step_s:g} s x {entry.compression:g} = {sub_s:g} trace seconds per "
            f"sub-interval is not a whole number of the trace's {trace.bucket_s:g} s buckets; choose compression "
            f"so that it is (e.g. {trace.bucket_s / spec.horizon.step_s:g})")
    k = int(round(k))
    counts = trace.counts.astype(float)
    declared = np.zeros(len(counts), dtype=bool)
    times = np.arange(len(counts)) * trace.bucket_s
    for start, end in entry.mask:
        declared |= (times + trace.bucket_s > start) & (times < end)
    outage = outage_mask(trace.counts, trace.bucket_s, spec.outage_min_s, spec.outage_nats) & ~declared
    bad = declared | outage
    if entry.window is not None:
        start, end = entry.window
        inside = (times >= start) & (times + trace.bucket_s <= end)
        if not inside.any():
            raise DatasetError(f"{where}.window [{start:g}, {end:g}) s holds no bucket of the trace "
                               f"({trace.span_s:g} s long)")
        first, stop = np.flatnonzero(inside)[[0, -1]] + [0, 1]
        counts, bad, declared, outage = counts[first:stop], bad[first:stop], declared[first:stop], outage[first:stop]
    n = len(counts) // k * k
    grouped = counts[:n].reshape(-1, k)
    bad_sub = bad[:n].reshape(-1, k).any(axis=1)
    rates = grouped.sum(axis=1) / spec.horizon.step_s  # events per replay second
    rates[bad_sub] = np.nan
    keep = np.flatnonzero(~bad_sub)
    if len(keep) == 0:
        raise DatasetError(f"{where}: empty after masking ({int(declared.sum())} buckets declared bad, "
                           f"{int(outage.sum())} in outages)")
    if len(keep) > spec.max_points:
        rates = rates[keep[-spec.max_points]:]
    period = None if entry.period_s is None else int(round(entry.period_s / sub_s))
    masked = {"sub-intervals declared": float(declared[:n].reshape(-1, k).any(axis=1).sum()),
              "sub-intervals in outages": float(outage[:n].reshape(-1, k).any(axis=1).sum())}
    name = f"trace:{_series_name(entry.name)}"
    return Series(name, name, rates, period if period and period > spec.horizon.steps else None, masked), trace.sha256


def run_series(run_id: str, tracking_uri: str, spec: DatasetSpec, where: str) -> Series:
    """A recorded experiment run's offered rate per micro-batch; its group is its workload (a run family)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    try:
        run = client.get_run(run_id)
    except MlflowException as exc:
        raise DatasetError(f"{where}: run {run_id} not found in {tracking_uri}: {exc.message}") from None
    if run.info.status != "FINISHED":
        raise DatasetError(f"{where}: run {run_id} is {run.info.status}, not FINISHED")
    arrivals = {m.step: m.value for m in client.get_metric_history(run_id, "batch.arrivals")}
    intervals = {m.step: m.value for m in client.get_metric_history(run_id, "batch.interval_s")}
    steps = sorted(s for s in arrivals if intervals.get(s, 0) > 0)
    if not steps:
        raise DatasetError(f"{where}: run {run_id} recorded no batch.arrivals / batch.interval_s")
    trigger = float(run.data.params.get("trigger_s", spec.horizon.step_s))
    if abs(trigger - spec.horizon.step_s) > 1e-9:
        raise DatasetError(f"{where}: run {run_id} ran with a {trigger:g} s trigger, the horizon's sub-interval is "
                           f"{spec.horizon.step_s:g} s")
    workload = run.data.tags.get("workload", "?")
    return Series(f"run:{run_id[:8]}:{workload}", f"runs:{workload}",
                  np.array([arrivals[s] / intervals[s] for s in steps], dtype=float))


def load_dataset(spec: DatasetSpec, tracking_uri: str | None = None) -> Dataset:
    digest = hashlib.sha256(json.dumps(spec.canonical(), sort_keys=True).encode())
    series: dict[str, Series] = {}
    for i, entry in enumerate(spec.traces):
        s, sha = trace_series(entry, spec, f"{spec.source}: traces[{i}] ({entry.name})")
        series[s.name] = s
        digest.update(sha.encode())
    if spec.runs and not tracking_uri:
        raise DatasetError(f"{spec.source}: runs are listed but no tracking URI was given to read them from")
    for i, run_id in enumerate(spec.runs):
        s = run_series(run_id, tracking_uri, spec, f"{spec.source}: runs[{i}]")
        series[s.name] = s
        digest.update(s.rates.tobytes())
    return Dataset(spec, series, digest.hexdigest())


def _series_name(name: str) -> str:
    """A catalogue trace by its name; a file by its folder in the shared layout (<trace>/rate.csv), else by its own
    name: a user's /data/checkout_rate.csv is `checkout_rate`, not the folder it happens to lie in."""
    if not name.endswith(".csv"):
        return name
    path = Path(name)
    return path.parent.name if path.name == "rate.csv" and path.parent.name else path.stem


def series_from_file(path: str, horizon: Horizon, compression: float = 1.0) -> Series:
    """A user's own series: a rate.csv (t_seconds,events; validated like a trace) read as sub-intervals of the
    horizon's step, nothing masked."""
    spec = DatasetSpec(horizon, (TraceEntry(path, compression),), outage_min_s=float("inf"), source=path)
    s, _ = trace_series(spec.traces[0], spec, path)
    return s
