"""The per-batch overhead benchmark runs end to end on real Spark (a few batches, one round): it prints the ratio
and a breakdown whose stages are the chained operators the job really ran, read back from Spark's REST API. It
also keeps benchmarks.foundation's throughput comparison working (it had drifted from BatchProcessor's signature
with no test to notice). The numbers themselves are measured by the benchmark, never asserted here."""
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.spark


def test_the_benchmark_prints_the_ratio_and_a_breakdown_by_chained_stage(tmp_path):
    # as a user runs it, in its own process: one Python process keeps the first Spark gateway's settings (its code
    # zip), so the in-process test below could not start a session after this one
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.batch_overhead", "--batches", "4", "--rounds", "1",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = proc.stdout
    assert "per-batch fixed overhead, project / bare" in text
    result = json.loads(out.read_text())["overhead"]
    assert result["ratio"] > 0 and len(result["ratios"]) == 1
    breakdown = result["breakdown"]
    # every operator at degree 2: parse and enrich share a stage, aggregate and sink another (jobs.operators.chains)
    assert {"  stage, source read: wall", "  stage, parse+enrich: wall", "  stage, aggregate+sink: wall"} <= set(breakdown)
    assert breakdown["spark.addBatch"] > 0 and breakdown["    parse+enrich: task run"] > 0


FOUNDATION_OVERHEAD = """
import json, sys
from pathlib import Path
from benchmarks import foundation
from jobs.config import RunConfig
from jobs.spark_session import PACKAGES, package_code, start_spark

work = Path(sys.argv[1])
config = RunConfig(controller="static", controller_params={}, workload="constant", quiet=True).validate()
spark = start_spark(config, package_code(work / "code.zip", PACKAGES + ("benchmarks",)))
try:
    result = foundation.overhead(spark, work, degree=2, events_per_batch=2000, rounds=1, warm=1, measured=2)
finally:
    spark.stop()
print(json.dumps(result))
"""


def test_the_foundation_throughput_comparison_runs_against_the_current_batch_function(tmp_path):
    # in its own process too: a test worker that ran another module's in-process Spark session keeps that gateway's
    # code zip, and a session with another one then fails to start ("code.zip exists and does not match")
    proc = subprocess.run([sys.executable, "-c", FOUNDATION_OVERHEAD, str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["instrumented_events_per_s"] > 0 and result["bare_events_per_s"] > 0
    assert len(result["ratios"]) == 1
