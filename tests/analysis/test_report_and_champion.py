"""A real small experiment end to end: the demo runs two configurations on Spark, promotes the winner in the MLflow
registry, logs a report with its figures to the parent run, and a production-style start loads the champion."""
import base64
import json
import re
import subprocess
import sys

import pytest

from analysis.report import main as report_main
from tests.support import ROOT, run_cli

pytestmark = pytest.mark.spark

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def experiment(tracking_uri):
    cmd = [sys.executable, "-m", "analysis.demo", "--duration", "8", "--slo-latency", "6", "--tracking-uri",
           tracking_uri, "--experiment", "report-test", "--variant", "static", "--variant", "static:degree=2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    parent = re.search(r"parent MLflow run (\w+)", done.stdout).group(1)
    return parent, done.stdout


def test_the_parent_run_carries_the_report_and_the_decision(experiment, mlflow_client, tmp_path):
    parent, stdout = experiment
    assert "step: PROMOTE static (first champion) as version 1" in stdout
    names = {a.path for a in mlflow_client.list_artifacts(parent, "report")}
    assert {"report/report.html", "report/figures"} <= names
    figures = {a.path for a in mlflow_client.list_artifacts(parent, "report/figures")}
    assert figures == {f"report/figures/step-{k}.png" for k in ("timelines", "intervals", "pareto")}
    page = open(mlflow_client.download_artifacts(parent, "report/report.html", str(tmp_path))).read()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 3 and all(base64.b64decode(i).startswith(PNG) for i in images), "embedded, self-contained"
    assert "<b>static</b> wins" in page and "promoted <b>static</b> (model version 1)" in page
    assert "Ranking rule.</b> Among configurations whose mean SLO attainment meets the target" in page
    # static controllers take no action: their ledger is empty, and the columns say so rather than show zeros
    assert "<th>regret per SLO</th>" in page and "decision ledger" in page and "<th>actions that fell behind</th>" in page
    decisions = json.load(open(mlflow_client.download_artifacts(parent, "promotion/decisions.json", str(tmp_path))))
    assert decisions[0]["promote"] and decisions[0]["challenger"] == "static"
    assert mlflow_client.get_run(parent).data.tags["promotion.step"].startswith("step: PROMOTE static")


def test_the_report_can_be_written_to_a_folder(experiment, tracking_uri, tmp_path, capsys):
    parent, _ = experiment
    assert report_main(["--tracking-uri", tracking_uri, "--parent-run-id", parent, "--out", str(tmp_path),
                        "--no-log"]) == 0
    assert (tmp_path / "report.html").read_text().count("data:image/png;base64,") == 3
    assert (tmp_path / "figures" / "step-timelines.png").read_bytes().startswith(PNG)
    assert "promoted <b>static</b>" in (tmp_path / "report.html").read_text(), "decisions read back from the run"


def test_a_production_start_runs_the_champion(experiment, tracking_uri, mlflow_client, tmp_path):
    done = run_cli(["--champion", "step", "--duration", "4", "--tracking-uri", tracking_uri, "--experiment",
                    "report-test", "--summary-json", str(tmp_path / "s.json"), "--quiet"])
    assert done.returncode == 0, done.stderr[-3000:]
    run = mlflow_client.get_run(json.load(open(tmp_path / "s.json"))["run_id"])
    assert run.data.tags["champion.version"] == "1" and run.data.tags["config"] == "static"
    assert run.data.tags["workload"] == "step"
