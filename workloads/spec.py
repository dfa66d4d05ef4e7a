"""Workload specs: the declarative, versioned input that every controller variant of an experiment replays.

A spec is a small mapping (YAML file, catalogue name, or a dict from Airflow params). It is validated completely
before any Spark job starts, and every error names the file and the field, so a typo costs seconds, not a run.
The run records the spec verbatim, so a result can always be traced back to the exact load that produced it.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from workloads.profiles import resolve_profile

CATALOGUE_DIR = Path(__file__).resolve().parent / "catalogue"

_TOP_LEVEL_FIELDS = {"name", "description", "profile", "params", "duration_s", "bucket_s", "seed", "keys", "payload_bytes"}
_KEY_FIELDS = {"count", "distribution"}


class WorkloadError(ValueError):
    """A workload spec that cannot be replayed; the message names the source and the field."""


@dataclass(frozen=True)
class KeySpec:
    count: int = 1000
    distribution: str = "uniform"


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    profile: str
    params: Mapping[str, float]
    duration_s: float
    bucket_s: float = 1.0
    seed: int = 0
    keys: KeySpec = field(default_factory=KeySpec)
    payload_bytes: int = 32
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = dict(self.params)
        return d

    def to_json(self) -> str:
        """Canonical JSON: the form passed to Spark workers and hashed for identity."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def with_overrides(self, **changes: Any) -> "WorkloadSpec":
        d = self.to_dict()
        d.update({k: v for k, v in changes.items() if v is not None})
        return parse_workload(d, source="<overrides>")


def _number(value: Any, where: str, *, minimum: float, strict: bool = False, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(f"{where} must be a number, got {value!r}")
    if integer and int(value) != value:
        raise WorkloadError(f"{where} must be a whole number, got {value!r}")
    if (strict and not value > minimum) or (not strict and value < minimum):
        raise WorkloadError(f"{where} must be {'>' if strict else '>='} {minimum}, got {value!r}")
    return value


def parse_workload(raw: Mapping[str, Any], source: str = "<dict>") -> WorkloadSpec:
    """Validate a raw mapping into a WorkloadSpec. `source` names where it came from, for the messages."""
    if not isinstance(raw, Mapping):
        raise WorkloadError(f"{source}: a workload spec must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _TOP_LEVEL_FIELDS)
    if unknown:
        raise WorkloadError(f"{source}: unknown field(s) {', '.join(unknown)}; expected: {', '.join(sorted(_TOP_LEVEL_FIELDS))}")
    for required in ("profile", "duration_s"):
        if required not in raw:
            raise WorkloadError(f"{source}: missing field {required!r}")
    profile = raw["profile"]
    if not isinstance(profile, str):
        raise WorkloadError(f"{source}: field 'profile' must be a profile name, got {profile!r}")
    params = raw.get("params") or {}
    if not isinstance(params, Mapping):
        raise WorkloadError(f"{source}: field 'params' must be a mapping, got {params!r}")
    try:
        values, _ = resolve_profile(profile, params, where=f"{source}: params")
    except ValueError as exc:
        raise WorkloadError(str(exc)) from None
    duration = _number(raw["duration_s"], f"{source}: field 'duration_s'", minimum=0, strict=True)
    bucket = _number(raw.get("bucket_s", 1.0), f"{source}: field 'bucket_s'", minimum=0.001)
    if bucket > duration:
        raise WorkloadError(f"{source}: field 'bucket_s' ({bucket}) must not exceed duration_s ({duration})")
    seed = int(_number(raw.get("seed", 0), f"{source}: field 'seed'", minimum=0, integer=True))
    payload = int(_number(raw.get("payload_bytes", 32), f"{source}: field 'payload_bytes'", minimum=8, integer=True))
    keys_raw = raw.get("keys") or {}
    if not isinstance(keys_raw, Mapping):
        raise WorkloadError(f"{source}: field 'keys' must be a mapping, got {keys_raw!r}")
    unknown_keys = sorted(set(keys_raw) - _KEY_FIELDS)
    if unknown_keys:
        raise WorkloadError(f"{source}: unknown field(s) keys.{', keys.'.join(unknown_keys)}; expected: {', '.join(sorted(_KEY_FIELDS))}")
    key_count = int(_number(keys_raw.get("count", 1000), f"{source}: field 'keys.count'", minimum=1, integer=True))
    distribution = keys_raw.get("distribution", "uniform")
    if distribution != "uniform":
        raise WorkloadError(f"{source}: field 'keys.distribution' must be 'uniform', got {distribution!r}")
    return WorkloadSpec(
        name=str(raw.get("name", profile)),
        description=str(raw.get("description", "")),
        profile=profile,
        params=values,
        duration_s=float(duration),
        bucket_s=float(bucket),
        seed=seed,
        keys=KeySpec(count=key_count, distribution=distribution),
        payload_bytes=payload,
    )


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
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise WorkloadError(f"{source}:{at} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    except OSError as exc:
        raise WorkloadError(f"{source}: cannot be read: {exc.strerror}") from None
    return parse_workload(raw, source=source)
