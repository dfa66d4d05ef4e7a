"""A claim's measurement as a file in the repository, so the reproduction page survives the MLflow store it came from.

Why: the page's suites take about 3.4 hours on a 2-core machine, longer than anyone keeps one local store, and a
fresh clone has no store at all. When the page is written from a store that has a claim's finished suite, the row's
figures, verdict and provenance (when, on what machine, at which code revision, how loaded the machine was) are
written to `docs/reproduction/<claim>.json` beside the claim's timeline figure. A store without that suite reads the
record instead, and the row says so. A record measured under another definition of the claim (workload, variants,
seeds, SLO, reused baselines, cluster) is stale and not used. Rerunning a claim (`--run CLAIM`) replaces its record.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from studies.provenance import SuiteProvenance

RECORD_FORMAT = 1


def definition(claim) -> dict[str, Any]:
    """What a measurement depends on: a record made under another definition measures another experiment."""
    return {"workload": claim.workload, "variants": list(claim.variants), "seeds": list(claim.seeds),
            "slo_latency_s": claim.slo_latency_s, "cluster_workers": claim.cluster_workers,
            "reuse": [{"variants": list(r.variants), "from_claims": list(r.from_claims)} for r in claim.reuse]}


def record_path(records_dir: Path, claim_id: str) -> Path:
    return records_dir / f"{claim_id}.json"


def write_record(records_dir: Path, claim, measured: str, verdict: str, suite: str,
                 suites: list[SuiteProvenance], figure: str | None) -> Path:
    """Write (replace) the claim's record; atomic, so a page interrupted mid-write leaves the old record whole."""
    records_dir.mkdir(parents=True, exist_ok=True)
    path = record_path(records_dir, claim.id)
    body = {"format": RECORD_FORMAT, "claim": claim.id, "definition": definition(claim), "measured": measured,
            "verdict": verdict, "suite": suite, "figure": figure, "written": time.strftime("%Y-%m-%d"),
            "suites": [asdict(p) for p in suites]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


class StaleRecord(Exception):
    """A record exists but does not stand for the claim as defined now (another definition or format)."""


def read_record(records_dir: Path, claim) -> dict[str, Any] | None:
    """The claim's record, with its suites as SuiteProvenance; None when there is none; StaleRecord when it no longer
    matches the claim."""
    path = record_path(records_dir, claim.id)
    if not path.exists():
        return None
    try:
        body = json.loads(path.read_text())
    except ValueError as exc:
        raise StaleRecord(f"{path.name} is not valid JSON ({exc})") from None
    if body.get("format") != RECORD_FORMAT:
        raise StaleRecord(f"{path.name} has record format {body.get('format')!r}, this code reads {RECORD_FORMAT}")
    if body.get("definition") != definition(claim):
        raise StaleRecord(f"{path.name} was measured under another definition of the claim")
    body["suites"] = [SuiteProvenance(**p) for p in body.get("suites", [])]
    return body
