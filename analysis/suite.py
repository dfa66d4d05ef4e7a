"""Running a suite without Airflow: a parent MLflow run and one child `python -m jobs.run` process per
(variant, workload, seed), strictly one after another — two streaming runs on one small machine spoil each other's
timings. The demo and the reproduction suite use it; the experiment DAG does the same with SparkSubmitOperator.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from mlflow.tracking import MlflowClient

from jobs.recorder import REPO_ROOT, ensure_experiment


def parse_variant(text: str) -> tuple[str, list[str]]:
    """'name:k=v,k=v' -> (name, ['k=v', ...]); values may be YAML flow mappings containing commas in braces."""
    name, _, rest = text.partition(":")
    params, depth, current = [], 0, ""
    for ch in rest:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += ch
    if current:
        params.append(current)
    return name, [p.strip() for p in params if p.strip()]


@dataclass
class SuiteResult:
    parent_run_id: str
    summaries: list[dict] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def open_parent(tracking_uri: str, experiment: str, run_name: str, tags: dict[str, str],
                params: dict[str, object]) -> str:
    if tracking_uri.startswith("sqlite:"):
        Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    client = MlflowClient(tracking_uri)
    experiment_id = ensure_experiment(client, experiment, tracking_uri)
    parent_id = client.create_run(experiment_id, run_name=run_name, tags=tags).info.run_id
    for key, value in params.items():
        client.log_param(parent_id, key, value)
    return parent_id


def run_suite(parent_run_id: str, variants: Sequence[str], workloads: Sequence[str], seeds: Sequence[int],
              *, tracking_uri: str, experiment: str, duration_s: float | None, slo_latency_s: float,
              master: str, tags: dict[str, str] | None = None) -> SuiteResult:
    """Every (variant, workload, seed) as a child run of parent_run_id; a failed run is recorded and the suite goes
    on (its MLflow run is FAILED with the reason, so the comparison and the promotion see it)."""
    result = SuiteResult(parent_run_id)
    cases = [(v, w, s) for w in workloads for v in variants for s in seeds]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (variant, workload, seed) in enumerate(cases):
            name, params = parse_variant(variant)
            summary_path = Path(tmp) / f"{i}.json"
            cmd = [sys.executable, "-m", "jobs.run", "--controller", name, "--workload", workload,
                   "--seed", str(seed), "--slo-latency", str(slo_latency_s), "--master", master,
                   "--experiment", experiment, "--tracking-uri", tracking_uri, "--parent-run-id", parent_run_id,
                   "--run-name", f"{variant} | {workload} | seed {seed}", "--summary-json", str(summary_path)]
            if duration_s is not None:
                cmd += ["--duration", str(duration_s)]
            for p in params:
                cmd += ["--param", p]
            for key, value in {"variant": variant, **(tags or {})}.items():
                cmd += ["--tag", f"{key}={value}"]
            print(f"\n=== [{i + 1}/{len(cases)}] {variant} on {workload}, seed {seed}", flush=True)
            code = subprocess.run(cmd, cwd=REPO_ROOT).returncode
            if code != 0 or not summary_path.exists():
                result.failed.append(f"{variant} on {workload} seed {seed}")
                continue
            summary = json.loads(summary_path.read_text())
            summary["variant"] = variant
            result.summaries.append(summary)
    return result


def timestamped(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}"
