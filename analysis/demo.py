"""The demo experiment: several controller configurations on one workload, one after another, then a comparison.

It is the embedded, Airflow-free equivalent of the experiment DAG: a parent MLflow run, one child run per
variant (each a separate `python -m jobs.run` process, exactly as spark-submit would run it), and a summary
table. Variants run sequentially because two streaming runs on one small machine spoil each other's timings.

    python -m analysis.demo                    # the default three variants on the `step` workload
    python -m analysis.demo --workload ramp --duration 40 --variant threshold --variant static:degree=2
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

from analysis.table import format_table
from jobs.recorder import DEFAULT_EXPERIMENT, REPO_ROOT, default_tracking_uri, ensure_experiment

# ConfMin (everything at degree 1), ConfExpt (enrich sized for the step's peak), and the reactive controller.
DEFAULT_VARIANTS = ("static:degree=1", "static:degree=1,degrees={enrich: 3}", "threshold")


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="step")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slo-latency", type=float, default=5.0)
    ap.add_argument("--variant", action="append", help="controller[:param=value,...] (repeatable)")
    ap.add_argument("--master", default="local[4]")
    ap.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    ap.add_argument("--tracking-uri", default=None)
    args = ap.parse_args(argv)
    variants = args.variant or list(DEFAULT_VARIANTS)
    tracking_uri = args.tracking_uri or default_tracking_uri()
    if tracking_uri.startswith("sqlite:"):
        Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)

    client = MlflowClient(tracking_uri)
    experiment_id = ensure_experiment(client, args.experiment, tracking_uri)
    parent = client.create_run(experiment_id, run_name=f"demo-{time.strftime('%Y%m%d-%H%M%S')}",
                               tags={"kind": "demo", "workload": args.workload})
    parent_id = parent.info.run_id
    for key, value in {"workload": args.workload, "duration_s": args.duration, "seed": args.seed,
                       "slo.latency_s": args.slo_latency, "variants": " | ".join(variants)}.items():
        client.log_param(parent_id, key, value)
    print(f"demo: {len(variants)} variants on workload {args.workload!r}, {args.duration:g}s each; "
          f"parent MLflow run {parent_id}", flush=True)

    results, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, variant in enumerate(variants):
            name, params = parse_variant(variant)
            summary_path = Path(tmp) / f"{i}.json"
            cmd = [sys.executable, "-m", "jobs.run", "--controller", name, "--workload", args.workload,
                   "--duration", str(args.duration), "--seed", str(args.seed), "--slo-latency", str(args.slo_latency),
                   "--master", args.master, "--experiment", args.experiment, "--tracking-uri", tracking_uri,
                   "--parent-run-id", parent_id, "--run-name", f"{variant}", "--summary-json", str(summary_path)]
            for p in params:
                cmd += ["--param", p]
            print(f"\n=== [{i + 1}/{len(variants)}] {variant}", flush=True)
            code = subprocess.run(cmd, cwd=REPO_ROOT).returncode
            if code != 0 or not summary_path.exists():
                failed.append(variant)
                continue
            summary = json.loads(summary_path.read_text())
            summary["variant"] = variant
            results.append(summary)

    client.log_dict(parent_id, results, "demo_results.json")
    client.set_terminated(parent_id, "FAILED" if failed else "FINISHED")
    print()
    print(format_table(results))
    if failed:
        print(f"\nfailed variants: {', '.join(failed)} (their MLflow runs are marked FAILED with the reason)")
    print(f"""
Results are in MLflow (experiment {args.experiment!r}, parent run {parent_id}); open the UI with
    make mlflow-ui        # then browse http://127.0.0.1:5000
or  .venv/bin/mlflow ui --backend-store-uri {tracking_uri} --host 127.0.0.1 --port 5000
Each run has per-batch metrics, its summary, and artifacts: timeline.png, batches.parquet, decisions.jsonl.
Ranked with intervals over seeds:  .venv/bin/python -m analysis.compare --parent-run-id {parent_id}""")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
