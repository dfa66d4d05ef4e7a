"""A plain-text comparison table of run summaries, for terminals and logs."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

COLUMNS = (
    ("variant", "variant", "{}"),
    ("p50 s", "latency_p50_s", "{:.2f}"),
    ("p95 s", "latency_p95_s", "{:.2f}"),
    ("p99 s", "latency_p99_s", "{:.2f}"),
    ("SLO att.", "slo_attainment", "{:.1%}"),
    ("cost slot-s", "cost_slot_seconds", "{:.0f}"),
    ("actions", "scaling_actions", "{:.0f}"),
    ("in", "records_in", "{:.0f}"),
    ("out", "records_out", "{:.0f}"),
    ("lost", "records_lost", "{:.0f}"),
    ("dup", "records_duplicated", "{:.0f}"),
)


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    try:
        return fmt.format(value)
    except (ValueError, TypeError):
        return str(value)


def label(row: Mapping[str, Any]) -> str:
    """A configuration as a person reads it in a table: the oracle as `oracle` (its calibration, a few hundred
    characters, is in the run's params), every other configuration as written."""
    return "oracle" if row.get("controller") == "oracle" else str(row.get("variant") or row.get("controller"))


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """One row per run, grouped by workload under a line naming it when the runs are of more than one workload; the
    restarts and their downtime when some run rescaled a native query by restart."""
    if not rows:
        return "(no finished runs)"
    columns = list(COLUMNS)
    if any(r.get("restarts") for r in rows):
        columns += [("restarts", "restarts", "{:.0f}"), ("downtime s", "restart_downtime_s", "{:.1f}")]
    workloads = list(dict.fromkeys(str(r.get("workload")) for r in rows))
    grouped = [r for w in workloads for r in rows if str(r.get("workload")) == w]
    header = [c[0] for c in columns]
    body = [[label(r) if key == "variant" else _cell(r.get(key), fmt) for _, key, fmt in columns] for r in grouped]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    slo = rows[0].get("slo_latency_s")
    title = f"SLO: latency <= {slo:g}s for {rows[0].get('slo_target', 0):.0%} of events" if slo else ""
    out = [title, line(header), line(["-" * w for w in widths])]
    for i, (row, cells) in enumerate(zip(grouped, body)):
        if len(workloads) > 1 and (i == 0 or str(grouped[i - 1].get("workload")) != str(row.get("workload"))):
            out += ([""] if i else []) + [f"workload {row.get('workload')}:"]
        out.append(line(cells))
    return "\n".join(out)
