"""Workload specs: the declarative, versioned input that every controller variant of an experiment replays.

A spec is a small mapping (YAML file, catalogue name, or a dict from Airflow params). It is validated completely
before any Spark job starts, and every error names the file and the field, so a typo costs seconds, not a run.
The run records the spec verbatim, so a result can always be traced back to the exact load that produced it.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import yaml

from workloads.profiles import ProfileContext, check_profile_params, resolve_profile
from workloads.traces import TraceError, load_trace, window_counts

CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"

_TOP_LEVEL_FIELDS = {"name", "description", "profile", "params", "trace", "streams", "duration_s", "bucket_s", "seed",
                     "arrivals", "noise", "keys", "payload_bytes"}
_STREAM_FIELDS = {"name", "profile", "params", "trace", "keys"}
_KEY_FIELDS = {"count", "distribution", "zipf_s", "hot_key_drift_s"}
_TRACE_FIELDS = {"name", "path", "start_s", "length_s", "compression", "rate_scale", "mean_rate", "trace_bucket_s",
                 "sha256", "records", "event_types", "require_machine"}
_NOISE_FIELDS = {"sigma", "step_s"}
# What each field means (the documentation's workload reference is generated from these; a test keeps them equal
# to the field sets above)
FIELD_DOCS: dict[str, dict[str, str]] = {
    "workload": {
        "name": "the workload's name, recorded with every run",
        "description": "a line saying what it is",
        "profile": "a rate profile (`workloads/profiles.py`; `python -m workloads.inspect --profiles`)",
        "params": "the profile's parameters",
        "trace": "a real trace instead of a profile (fields below)",
        "streams": "several independent sub-streams, each with its own profile or trace and keys (fields below)",
        "duration_s": "seconds of load (with a trace: at most the window's, which is the default)",
        "bucket_s": "seconds per count bucket (default 1; with a trace, its bucket after compression)",
        "seed": "fixes every event (times, keys, payloads) and where Spark's triggers fall against them",
        "arrivals": "`even` or `poisson` (seeded Poisson counts and positions inside each bucket)",
        "noise": "mean-one lognormal noise on the rate (fields below)",
        "keys": "the key space (fields below)",
        "payload_bytes": "bytes of payload per event (default 32)",
    },
    "streams[]": {
        "name": "the sub-stream's name (unique)", "profile": "its rate profile", "params": "the profile's parameters",
        "trace": "a real trace instead of a profile", "keys": "its own key space",
    },
    "keys": {
        "count": "distinct keys (default 1000)", "distribution": "`uniform` or `zipf`",
        "zipf_s": "the Zipf exponent (default 1.1)",
        "hot_key_drift_s": "seconds between moves of the hot keys (0: they stay)",
    },
    "trace": {
        "name": "a folder under the traces directory holding `rate.csv` (`t_seconds,events`)",
        "path": "any such `rate.csv` instead of a name",
        "start_s": "where the window starts in the trace, s", "length_s": "the window's length, s (default: to the end)",
        "compression": "trace seconds per replayed second", "rate_scale": "counts multiplied by this",
        "mean_rate": "instead of rate_scale: scale the replayed part to this mean rate, events/s",
        "trace_bucket_s": "the trace's bucket, s (read from the data when validated)",
        "sha256": "pins the trace file's content; a changed file is refused",
        "records": "replay the trace's own rows as payloads (`task_events`: Google 2011), at their own times",
        "event_types": "with records: only these event types",
        "require_machine": "with records: only rows that name a machine",
    },
    "noise": {"sigma": "the lognormal's sigma", "step_s": "seconds between noise draws"},
}
ARRIVALS = ("even", "poisson")
KEY_DISTRIBUTIONS = ("uniform", "zipf")


class WorkloadError(ValueError):
    """A workload spec that cannot be replayed; the message names the source and the field."""


@dataclass(frozen=True)
class KeySpec:
    count: int = 1000
    distribution: str = "uniform"
    zipf_s: float = 1.1  # Zipf exponent (project's default: a moderately skewed key space)
    hot_key_drift_s: float = 0.0  # every this many seconds the hottest keys move to other keys; 0: never


@dataclass(frozen=True)
class TraceSpec:
    """A window of a real trace, replayed `compression` times faster with each bucket's count times `rate_scale`."""
    ref: str  # trace name (folder under the traces directory) or path to a rate.csv
    start_s: float
    length_s: float  # trace seconds (resolved at parse time when the spec leaves it open)
    compression: float = 1.0
    rate_scale: float = 1.0
    trace_bucket_s: float = 1.0  # read from the file at parse time
    sha256: str = ""
    records: str | None = None  # replay the trace's original rows (e.g. 'task_events') instead of its counts
    event_types: tuple[int, ...] | None = None  # with records: only rows of these event types
    require_machine: bool = False  # with records: only rows that name a machine
    mean_rate: float | None = None  # ev/s the replayed window offers on average; rate_scale is derived from it

    @property
    def bucket_s(self) -> float:
        return self.trace_bucket_s / self.compression

    @property
    def duration_s(self) -> float:
        return self.length_s / self.compression


@dataclass(frozen=True)
class StreamSpec:
    """One independent sub-stream: its own rate (profile or trace) and its own key range."""
    name: str
    profile: str | None
    params: Mapping[str, Any]
    trace: TraceSpec | None
    keys: KeySpec


@dataclass(frozen=True)
class NoiseSpec:
    sigma: float  # standard deviation of log(rate multiplier); the multiplier has mean 1
    step_s: float = 1.0  # one draw per this many seconds


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    streams: tuple[StreamSpec, ...]
    duration_s: float
    bucket_s: float = 1.0
    seed: int = 0
    arrivals: str = "even"
    noise: NoiseSpec | None = None
    payload_bytes: int = 32
    description: str = ""
    multi_stream: bool = False  # written with `streams:` (else the single stream's fields are top-level)

    # ---- the single-stream view most code needs ------------------------------------------------------------
    @property
    def profile(self) -> str:
        return self.streams[0].profile or "trace" if not self.multi_stream else "streams"

    @property
    def params(self) -> Mapping[str, Any]:
        return self.streams[0].params if not self.multi_stream else {}

    @property
    def keys(self) -> KeySpec:
        return self.streams[0].keys

    @property
    def total_keys(self) -> int:
        return sum(s.keys.count for s in self.streams)

    def to_dict(self) -> dict[str, Any]:
        """The spec in its written form (fully resolved: defaults filled in), which parse_workload accepts back."""
        d: dict[str, Any] = {"name": self.name, "description": self.description, "duration_s": self.duration_s,
                             "bucket_s": self.bucket_s, "seed": self.seed, "arrivals": self.arrivals,
                             "payload_bytes": self.payload_bytes}
        if self.noise is not None:
            d["noise"] = asdict(self.noise)
        streams = [_stream_to_dict(s) for s in self.streams]
        if self.multi_stream:
            d["streams"] = streams
        else:
            single = streams[0]
            single.pop("name", None)
            d.update(single)
        return d

    def to_json(self) -> str:
        """Canonical JSON: the form passed to Spark workers and hashed for identity."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def with_overrides(self, duration_s: float | None = None, seed: int | None = None) -> "WorkloadSpec":
        d = self.to_dict()
        if seed is not None:
            d["seed"] = seed
        if duration_s is not None:
            d["duration_s"] = duration_s
            # a trace's window follows the duration: length in trace time = duration x compression
            for stream in d.get("streams", [d]):
                if "trace" in stream:
                    stream["trace"]["length_s"] = duration_s * stream["trace"].get("compression", 1.0)
                    if "mean_rate" in stream["trace"]:
                        stream["trace"].pop("rate_scale")  # derived from the window, which changed
        return parse_workload(d, source="<overrides>")


def _stream_to_dict(s: StreamSpec) -> dict[str, Any]:
    d: dict[str, Any] = {"name": s.name, "keys": asdict(s.keys)}
    if s.trace is not None:
        t = s.trace
        d["trace"] = {"name" if os.sep not in t.ref and not t.ref.endswith(".csv") else "path": t.ref,
                      "start_s": t.start_s, "length_s": t.length_s, "compression": t.compression,
                      "rate_scale": t.rate_scale, "trace_bucket_s": t.trace_bucket_s, "sha256": t.sha256}
        if t.mean_rate is not None:
            d["trace"]["mean_rate"] = t.mean_rate
        if t.records:
            d["trace"].update({"records": t.records, "require_machine": t.require_machine,
                               "event_types": list(t.event_types) if t.event_types is not None else None})
    else:
        d["profile"] = s.profile
        d["params"] = dict(s.params)
    return d


def _number(value: Any, where: str, *, minimum: float, strict: bool = False, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(f"{where} must be a number, got {value!r}")
    if not np.isfinite(value):
        raise WorkloadError(f"{where} must be finite, got {value!r}")
    if integer and int(value) != value:
        raise WorkloadError(f"{where} must be a whole number, got {value!r}")
    if (strict and not value > minimum) or (not strict and value < minimum):
        raise WorkloadError(f"{where} must be {'>' if strict else '>='} {minimum}, got {value!r}")
    return value


def _mapping(raw: Any, where: str, allowed: set[str]) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{where} must be a mapping, got {raw!r}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise WorkloadError(f"{where}: unknown field(s) {', '.join(unknown)}; expected: {', '.join(sorted(allowed))}")
    return raw


def _parse_keys(raw: Any, where: str) -> KeySpec:
    keys = _mapping(raw, where, _KEY_FIELDS)
    count = int(_number(keys.get("count", 1000), f"{where}.count", minimum=1, integer=True))
    distribution = keys.get("distribution", "uniform")
    if distribution not in KEY_DISTRIBUTIONS:
        raise WorkloadError(f"{where}.distribution must be one of {', '.join(KEY_DISTRIBUTIONS)}, got {distribution!r}")
    zipf_s = float(_number(keys.get("zipf_s", 1.1), f"{where}.zipf_s", minimum=0, strict=True))
    drift = float(_number(keys.get("hot_key_drift_s", 0.0), f"{where}.hot_key_drift_s", minimum=0))
    return KeySpec(count, distribution, zipf_s, drift)


def _parse_trace(raw: Any, where: str, check: bool) -> TraceSpec:
    t = _mapping(raw, where, _TRACE_FIELDS)
    refs = [t[k] for k in ("name", "path") if k in t]
    if len(refs) != 1 or not isinstance(refs[0], str):
        raise WorkloadError(f"{where}: give exactly one of 'name' (a trace folder) or 'path' (a rate.csv)")
    ref = refs[0]
    start = float(_number(t.get("start_s", 0.0), f"{where}.start_s", minimum=0))
    compression = float(_number(t.get("compression", 1.0), f"{where}.compression", minimum=0, strict=True))
    scale = float(_number(t.get("rate_scale", 1.0), f"{where}.rate_scale", minimum=0, strict=True))
    mean_rate = t.get("mean_rate")
    if mean_rate is not None:
        mean_rate = float(_number(mean_rate, f"{where}.mean_rate", minimum=0, strict=True))
        if "records" in t:
            raise WorkloadError(f"{where}: mean_rate scales the counts, and a trace replayed with its records cannot "
                                f"be scaled; choose the window and compression instead")
    length = t.get("length_s")
    if length is not None:
        length = float(_number(length, f"{where}.length_s", minimum=0, strict=True))
    records, event_types, require_machine = _parse_records(t, where, scale)
    extra = {"records": records, "event_types": event_types, "require_machine": require_machine}
    if not check:  # on Spark workers: the driver validated the file and passes the counts
        return TraceSpec(ref, start, length, compression, scale, float(t.get("trace_bucket_s", 1.0)),
                         str(t.get("sha256", "")), mean_rate=mean_rate, **extra)
    try:
        trace = load_trace(ref)
        counts = window_counts(trace, start, length, where)
    except TraceError as exc:
        raise WorkloadError(str(exc)) from None
    if t.get("sha256") and t["sha256"] != trace.sha256:
        raise WorkloadError(f"{where}: {trace.path} has changed since this spec was recorded (sha256 "
                            f"{trace.sha256[:12]}..., spec pins {str(t['sha256'])[:12]}...)")
    if records:
        from workloads.records import RecordsError, record_files

        try:
            record_files(trace.path.parent, records)
        except RecordsError as exc:
            raise WorkloadError(f"{where}.records: {exc}") from None
    return TraceSpec(ref, start, len(counts) * trace.bucket_s, compression, scale, trace.bucket_s, trace.sha256,
                     mean_rate=mean_rate, **extra)


def _with_mean_rate(stream: StreamSpec, duration_s: float, where: str, written: Mapping[str, Any]) -> StreamSpec:
    """The stream with rate_scale derived from mean_rate over the buckets the run replays (the window's first
    duration_s after compression, not the whole window), so a trace nobody has measured offers the rate asked for:
    the bursty suite's rule (2,000 ev/s on average, each trace keeping its own bursts) in one field. A rate_scale
    written beside it is the recorded form of a resolved spec, accepted only where it is what mean_rate gives."""
    t = stream.trace
    try:
        counts = window_counts(load_trace(t.ref), t.start_s, t.length_s, where)
    except TraceError as exc:
        raise WorkloadError(str(exc)) from None
    replayed = float(np.sum(counts[: int(np.ceil(duration_s / t.bucket_s - 1e-9))]))
    if replayed <= 0:
        raise WorkloadError(f"{where}.mean_rate: the replayed window [{t.start_s:g}, "
                            f"{t.start_s + duration_s * t.compression:g}) s of {t.ref} has no events to scale")
    scale = t.mean_rate * duration_s / replayed
    if "rate_scale" in written and not np.isclose(float(written["rate_scale"]), scale, rtol=1e-9, atol=0.0):
        raise WorkloadError(f"{where}: give rate_scale or mean_rate, not both (mean_rate {t.mean_rate:g} gives "
                            f"rate_scale {scale:.6g} on this window, the spec says {written['rate_scale']!r})")
    return replace(stream, trace=replace(t, rate_scale=scale))


def _parse_records(t: Mapping[str, Any], where: str, scale: float):
    records = t.get("records")
    if records is None:
        for key in ("event_types", "require_machine"):
            if t.get(key) is not None:
                raise WorkloadError(f"{where}.{key} only applies with 'records'")
        return None, None, False
    if not isinstance(records, str):
        raise WorkloadError(f"{where}.records must be a record set name such as 'task_events', got {records!r}")
    if scale != 1.0:
        raise WorkloadError(f"{where}: rate_scale must be 1 with records (real rows cannot be scaled); "
                            f"choose the window and compression instead")
    types = t.get("event_types")
    if types is not None:
        if not isinstance(types, list) or not types or not all(isinstance(v, int) and not isinstance(v, bool)
                                                               and 0 <= v <= 8 for v in types):
            raise WorkloadError(f"{where}.event_types must be a list of event type codes 0-8, got {types!r}")
        types = tuple(sorted(set(types)))
    require = t.get("require_machine", False)
    if not isinstance(require, bool):
        raise WorkloadError(f"{where}.require_machine must be true or false, got {require!r}")
    return records, types, require


def _parse_stream(raw: Mapping[str, Any], where: str, index: int, default_name: str, check: bool) -> StreamSpec:
    has_trace, has_profile = "trace" in raw, "profile" in raw
    if has_trace == has_profile:
        raise WorkloadError(f"{where}: give exactly one of 'profile' (with 'params') or 'trace'")
    keys = _parse_keys(raw.get("keys"), f"{where}: field 'keys'")
    name = str(raw.get("name", default_name))
    if has_trace:
        if raw.get("params"):
            raise WorkloadError(f"{where}: 'params' belongs to a profile; a trace takes its options inside 'trace'")
        return StreamSpec(name, None, {}, _parse_trace(raw["trace"], f"{where}: field 'trace'", check), keys)
    profile = raw["profile"]
    if not isinstance(profile, str):
        raise WorkloadError(f"{where}: field 'profile' must be a profile name, got {profile!r}")
    params = raw.get("params") or {}
    if not isinstance(params, Mapping):
        raise WorkloadError(f"{where}: field 'params' must be a mapping, got {params!r}")
    try:
        values = check_profile_params(profile, params, where)
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    return StreamSpec(name, profile, values, None, keys)


def parse_workload(raw: Mapping[str, Any], source: str = "<dict>", check_traces: bool = True) -> WorkloadSpec:
    """Validate a raw mapping into a WorkloadSpec. `source` names where it came from, for the messages.
    `check_traces=False` skips reading trace files (Spark workers get the counts from the driver)."""
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{source}: a workload spec must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _TOP_LEVEL_FIELDS)
    if unknown:
        raise WorkloadError(f"{source}: unknown field(s) {', '.join(unknown)}; expected: {', '.join(sorted(_TOP_LEVEL_FIELDS))}")
    multi = "streams" in raw
    if multi:
        clash = sorted({"profile", "params", "trace", "keys"} & set(raw))
        if clash:
            raise WorkloadError(f"{source}: field(s) {', '.join(clash)} belong inside each of 'streams'")
        items = raw["streams"]
        if not isinstance(items, list) or not items:
            raise WorkloadError(f"{source}: field 'streams' must be a non-empty list")
        streams = []
        for i, item in enumerate(items):
            where = f"{source}: streams[{i}]"
            streams.append(_parse_stream(_mapping(item, where, _STREAM_FIELDS), where, i, f"s{i}", check_traces))
        if any(s.trace is not None and s.trace.records for s in streams):
            raise WorkloadError(f"{source}: a trace replayed with its records must be the only stream")
        names = [s.name for s in streams]
        if len(set(names)) != len(names):
            raise WorkloadError(f"{source}: stream names must be unique, got {names}")
    else:
        single = {k: v for k, v in raw.items() if k in ("profile", "params", "trace", "keys")}
        streams = [_parse_stream(single, source, 0, "main", check_traces)]
    traces = [s.trace for s in streams if s.trace is not None]

    duration = raw.get("duration_s")
    if duration is None:
        if not traces:
            raise WorkloadError(f"{source}: missing field 'duration_s'")
        duration = min(t.duration_s for t in traces)
    duration = float(_number(duration, f"{source}: field 'duration_s'", minimum=0, strict=True))
    if traces:
        buckets = {round(t.bucket_s, 9) for t in traces}
        if len(buckets) > 1:
            raise WorkloadError(f"{source}: the traces' buckets after compression differ ({sorted(buckets)} s); "
                                f"choose compressions that give them one bucket size")
        bucket = traces[0].bucket_s
        if "bucket_s" in raw and abs(float(raw["bucket_s"]) - bucket) > 1e-9:
            raise WorkloadError(f"{source}: field 'bucket_s' ({raw['bucket_s']}) contradicts the trace's bucket after "
                                f"compression ({bucket:g} s); leave it out")
        for t in traces:
            if t.duration_s + 1e-9 < duration:
                raise WorkloadError(f"{source}: duration_s {duration:g} is longer than the trace window "
                                    f"({t.length_s:g} s of trace / compression {t.compression:g} = {t.duration_s:g} s)")
    else:
        bucket = float(_number(raw.get("bucket_s", 1.0), f"{source}: field 'bucket_s'", minimum=0.001))
    if bucket > duration:
        raise WorkloadError(f"{source}: the bucket ({bucket:g} s) must not exceed duration_s ({duration:g})")
    if check_traces:
        for i, stream in enumerate(streams):
            if stream.trace is not None and stream.trace.mean_rate is not None:
                written = raw["streams"][i]["trace"] if multi else raw["trace"]
                where = f"{source}: streams[{i}]: field 'trace'" if multi else f"{source}: field 'trace'"
                streams[i] = _with_mean_rate(stream, duration, where, written)
    seed = int(_number(raw.get("seed", 0), f"{source}: field 'seed'", minimum=0, integer=True))
    payload = int(_number(raw.get("payload_bytes", 32), f"{source}: field 'payload_bytes'", minimum=8, integer=True))
    arrivals = raw.get("arrivals", "even")
    if arrivals not in ARRIVALS:
        raise WorkloadError(f"{source}: field 'arrivals' must be one of {', '.join(ARRIVALS)}, got {arrivals!r}")
    noise = None
    if raw.get("noise") is not None:
        n = _mapping(raw["noise"], f"{source}: field 'noise'", _NOISE_FIELDS)
        if "sigma" not in n:
            raise WorkloadError(f"{source}: field 'noise' needs 'sigma' (standard deviation of the log multiplier)")
        noise = NoiseSpec(float(_number(n["sigma"], f"{source}: field 'noise.sigma'", minimum=0)),
                          float(_number(n.get("step_s", 1.0), f"{source}: field 'noise.step_s'", minimum=0,
                                        strict=True)))
    spec = WorkloadSpec(
        name=str(raw.get("name", streams[0].profile or "trace" if not multi else "streams")),
        streams=tuple(streams), duration_s=duration, bucket_s=float(bucket), seed=seed, arrivals=arrivals,
        noise=noise, payload_bytes=payload, description=str(raw.get("description", "")), multi_stream=multi,
    )
    for i, stream in enumerate(spec.streams):  # built once for this duration and seed, so their errors show now
        if stream.profile is not None:
            try:
                resolve_profile(stream.profile, stream.params, f"{source}: streams[{i}]" if multi else source,
                                ProfileContext(spec.duration_s, spec.seed, i))
            except ValueError as exc:
                raise WorkloadError(str(exc)) from None
    return spec


def catalogue_names() -> list[str]:
    return sorted(p.stem for p in CATALOGUE_DIR.glob("*.yaml"))


def load_workload(ref: str | Mapping[str, Any]) -> WorkloadSpec:
    """A spec from a dict, a YAML file path, or a catalogue name (in that order of checking)."""
    if isinstance(ref, Mapping):
        return parse_workload(ref)
    path = Path(ref)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        if not path.is_file():
            raise WorkloadError(f"workload file {ref} does not exist")
        source = str(path)
    else:
        path = CATALOGUE_DIR / f"{ref}.yaml"
        if not path.is_file():
            raise WorkloadError(
                f"workload {ref!r} is neither a file nor a catalogue name; catalogue: {', '.join(catalogue_names())}"
            )
        source = f"{path.name} (catalogue)"
    try:
        text = path.read_text()
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise WorkloadError(f"{source}:{at} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    except OSError as exc:
        raise WorkloadError(f"{source}: cannot be read: {exc.strerror}") from None
    try:
        return parse_workload(raw, source=source)
    except WorkloadError as exc:
        line = line_of(str(exc), key_lines(yaml.compose(text)))
        if line is None or not str(exc).startswith(f"{source}:"):
            raise
        raise WorkloadError(f"{source}, line {line}:{str(exc)[len(source) + 1:]}") from None


def key_lines(node, prefix: str = "") -> dict[str, int]:
    """Every key of a composed YAML document, as a path ('params.rate', 'streams[0].params.rate') -> 1-based line."""
    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                path = f"{prefix}.{key.value}" if prefix else str(key.value)
                out[path] = key.start_mark.line + 1
                out.update(key_lines(value, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[f"{prefix}[{i}]"] = item.start_mark.line + 1
            out.update(key_lines(item, f"{prefix}[{i}]"))
    return out


def line_of(message: str, lines: Mapping[str, int]) -> int | None:
    """The line of the field an error message names: among the keys whose last part the message names before any
    '; expected: ...' list, the one with most of its path named, quoted names counting double ("streams[1]: ...
    parameter 'rate'" -> streams[1].params.rate, not streams[0]'s, nor 'profile'); None when it names no key."""
    head = message.split(";", 1)[0]

    def named(part: str) -> int:
        if part.startswith("["):
            return int(part in head)
        if f"'{part}'" in head:
            return 2
        return int(re.search(rf"(?<!\w){re.escape(part)}(?!\w)", head) is not None)

    best: tuple[int, int] | None = None
    for path, line in lines.items():
        parts = re.findall(r"\[\d+\]|[^.\[\]]+", path)
        if not parts or parts[-1].startswith("[") or not named(parts[-1]):
            continue
        score = sum(named(p) for p in parts)
        if best is None or score > best[0]:
            best = (score, line)
    return None if best is None else best[1]
