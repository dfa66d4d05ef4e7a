"""The benchmark topology: parse -> enrich -> keyed tumbling-window aggregate -> sink, with declared costs.

Each operator declares its per-record cost: `cpu_us` of real CPU and `wait_us` of emulated waiting (a sleep
standing for a remote lookup). Declaring the cost makes an operator's capacity known and its growth with parallelism
visible on a 2-core machine: CPU work scales up to the cores, waiting scales up to the task slots (ARCHITECTURE,
"A small machine"). The costs are part of the run's recorded parameters, never hidden. What the operators do with
the records is in `jobs.operators`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml


KINDS = ("parse", "enrich", "window_aggregate", "sink")


class TopologyError(ValueError):
    pass


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    kind: str
    cpu_us: float = 0.0  # real CPU per input record, microseconds
    wait_us: float = 0.0  # emulated remote wait per input record, microseconds

    @property
    def keyed(self) -> bool:
        """Keyed operators are hash-partitioned by key, so every (window, key) group lands in one task."""
        return self.kind == "window_aggregate"


PAYLOAD_FORMATS = ("binary", "google_task_events_csv")


@dataclass(frozen=True)
class Topology:
    operators: tuple[OperatorSpec, ...]
    window_s: float = 5.0
    # how `parse` reads an event's value: the first 4 payload bytes of synthetic events, or the cpu_request of a
    # replayed Google task_events row; set by the run from the workload, never by hand
    payload_format: str = "binary"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.operators)

    def to_dict(self) -> dict[str, Any]:
        return {"window_s": self.window_s, "payload_format": self.payload_format,
                "operators": [asdict(op) for op in self.operators]}


# The project's default costs: enrichment is dominated by an emulated 150 us lookup (I/O-bound, so it scales with
# task slots past the 2 cores), the rest is cheap real CPU. One enrich task then handles about 6,000 events/s.
DEFAULT_TOPOLOGY = Topology(
    operators=(
        OperatorSpec("parse", "parse", cpu_us=2.0),
        OperatorSpec("enrich", "enrich", cpu_us=2.0, wait_us=150.0),
        OperatorSpec("aggregate", "window_aggregate", cpu_us=3.0),
        OperatorSpec("sink", "sink", cpu_us=1.0),
    ),
    window_s=5.0,
)

# No declared cost at all: what the pipeline itself costs (used by the overhead benchmark).
ZERO_COST_TOPOLOGY = Topology(
    operators=tuple(OperatorSpec(op.name, op.kind) for op in DEFAULT_TOPOLOGY.operators), window_s=5.0
)


def _seep(mu: float) -> Topology:
    """The SEEP thesis' SimpleStatelessOperator with service rate mu tuples/s per task (§5.2.2, p. 68): enrich
    waits 1/mu s per record; the rest is the default topology's cheap work."""
    return Topology(tuple(OperatorSpec(op.name, op.kind, op.cpu_us, 1e6 / mu if op.name == "enrich" else 0.0)
                          for op in DEFAULT_TOPOLOGY.operators), window_s=DEFAULT_TOPOLOGY.window_s)


# The keyed operator does the expensive work (an emulated 500 us lookup per record; enrich waits 150 us by default):
# where its keys are skewed, the partition holding the hot keys sets the batch's time, which is what placement
# controllers act on (controllers/placement); the other operators keep the default topology's cheap work.
KEYED_HEAVY_TOPOLOGY = Topology(
    operators=tuple(OperatorSpec(op.name, op.kind, op.cpu_us, 500.0 if op.keyed else 0.0)
                    for op in DEFAULT_TOPOLOGY.operators), window_s=DEFAULT_TOPOLOGY.window_s)

NAMED_TOPOLOGIES = {"default": DEFAULT_TOPOLOGY, "zero-cost": ZERO_COST_TOPOLOGY, "seep-mu5": _seep(5.0),
                    "seep-mu10": _seep(10.0), "keyed-heavy": KEYED_HEAVY_TOPOLOGY}


def parse_topology(raw: Mapping[str, Any], source: str) -> Topology:
    if not isinstance(raw, Mapping) or "operators" not in raw:
        raise TopologyError(f"{source}: a topology needs a list 'operators'")
    unknown = sorted(set(raw) - {"operators", "window_s"})
    if unknown:
        raise TopologyError(f"{source}: unknown field(s) {', '.join(unknown)}; expected: operators, window_s")
    ops = []
    for i, op in enumerate(raw["operators"]):
        where = f"{source}: operators[{i}]"
        if not isinstance(op, Mapping):
            raise TopologyError(f"{where} must be a mapping")
        extra = sorted(set(op) - {"name", "kind", "cpu_us", "wait_us"})
        if extra:
            raise TopologyError(f"{where}: unknown field(s) {', '.join(extra)}; expected: name, kind, cpu_us, wait_us")
        if op.get("kind") not in KINDS:
            raise TopologyError(f"{where}: field 'kind' must be one of {', '.join(KINDS)}, got {op.get('kind')!r}")
        for cost in ("cpu_us", "wait_us"):
            v = op.get(cost, 0.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise TopologyError(f"{where}: field {cost!r} must be a number >= 0, got {v!r}")
        ops.append(OperatorSpec(str(op.get("name", op["kind"])), op["kind"], float(op.get("cpu_us", 0)), float(op.get("wait_us", 0))))
    kinds = [op.kind for op in ops]
    if kinds != list(KINDS):
        raise TopologyError(f"{source}: operators must be, in order, {' -> '.join(KINDS)}; got {' -> '.join(kinds)}")
    if len({op.name for op in ops}) != len(ops):
        raise TopologyError(f"{source}: operator names must be unique")
    window = raw.get("window_s", 5.0)
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window <= 0:
        raise TopologyError(f"{source}: field 'window_s' must be a number > 0, got {window!r}")
    return Topology(tuple(ops), float(window))


def load_topology(ref: str | None) -> Topology:
    if ref is None:
        return DEFAULT_TOPOLOGY
    if ref in NAMED_TOPOLOGIES:
        return NAMED_TOPOLOGIES[ref]
    path = Path(ref)
    if not path.is_file():
        raise TopologyError(f"topology {ref!r} is neither one of {', '.join(NAMED_TOPOLOGIES)} nor an existing "
                            "YAML file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise TopologyError(f"{path}:{at} is not valid YAML") from None
    return parse_topology(raw, str(path))
