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


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """One row per run; a workload column when the runs are of more than one workload, the restarts and their
    downtime when some run rescaled a native query by restart."""
    if not rows:
        return "(no finished runs)"
    columns = list(COLUMNS)
    if len({r.get("workload") for r in rows}) > 1:
        columns.insert(1, ("workload", "workload", "{}"))
    if any(r.get("restarts") for r in rows):
        columns += [("restarts", "restarts", "{:.0f}"), ("downtime s", "restart_downtime_s", "{:.1f}")]
    header = [c[0] for c in columns]
    body = [[_cell(r.get(key, r.get("controller")) if key == "variant" else r.get(key), fmt) for _, key, fmt in columns]
            for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    slo = rows[0].get("slo_latency_s")
    title = f"SLO: latency <= {slo:g}s for {rows[0].get('slo_target', 0):.0%} of events" if slo else ""
    return "\n".join([title, line(header), line(["-" * w for w in widths])] + [line(b) for b in body])
