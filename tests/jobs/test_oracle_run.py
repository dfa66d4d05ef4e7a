"""The oracle on real Spark: calibrate the job's costs with `jobs.calibrate`, then run the oracle from the config it
wrote; it plans every batch from the schedule and the run records its calibration."""
import pytest
import json

import yaml
from mlflow.artifacts import download_artifacts

from controllers.loop import AT_BATCH_START
from jobs.calibrate import main as calibrate_main
from tests.support import run_cli

# timing: the step is sized from a calibration measured moments before; another run beside it would change the costs
# in between
pytestmark = [pytest.mark.spark, pytest.mark.timing]

OPS = ("parse", "enrich", "aggregate", "sink")
TRIGGER_S, STEP_S, DURATION_S = 4.0, 10.0, 22.0
HEADROOM = 0.9  # the oracle's default: it plans for headroom x (SLO - age of the oldest event read)


def step_for(params):
    """A step and an SLO under which, by the calibrated costs themselves, the low load fits at degree 1 with room
    to spare and the high load does not, while enrich at 2 carries it: so the oracle has to raise enrich at the step.

    Worked out by hand from the costs (not by the oracle's code): a batch reads one trigger's events, at degree 1 it
    lasts batch overhead + 4 task overheads + events x (per-record cost along the pipeline); enrich at 2 halves
    enrich's share and adds a task (its overhead and its launch). The high rate loads degree 1 to 75 % of the trigger, the low rate to 7.5 %; the
    budget sits halfway between the two high-load predictions. The batch overhead is measured on this machine, as
    loaded as it is, so the step is set for the machine the run meets."""
    service, selectivity = params["service_s"], params["selectivity"]
    per_record, upstream = 0.0, 1.0
    for op in OPS:
        per_record += upstream * service[op]
        if op == "enrich":
            enrich = upstream * service[op]
        upstream *= selectivity.get(op, 1.0)
    fixed = params["batch_overhead_s"] + len(OPS) * params["task_overhead_s"]
    high = 0.75 / per_record
    work = TRIGGER_S * high * per_record  # seconds of per-record work in a high-load batch at degree 1
    at_1 = fixed + work
    at_2 = fixed + params["task_overhead_s"] + params.get("task_launch_s", 0.0) + work - TRIGGER_S * high * enrich / 2
    budget = (at_1 + at_2) / 2
    return {"low": round(high / 10), "high": round(high)}, TRIGGER_S + budget / HEADROOM


def test_calibrate_then_run_the_oracle(tracking_uri, mlflow_client, tmp_path, capsys):
    out = tmp_path / "oracle.yaml"
    # 24 batches: the degree sweep (1, 2, 4, 8, three batches each) twice over, as the default 48 s at a 2 s trigger;
    # once over, degree and load rise together and the fit cannot tell a record's cost from a task's
    # (--no-stages: every operator at one degree, as this test's 24 batches need; the stage sweep is unit-tested)
    code = calibrate_main(["--master", "local[2]", "--trigger", "1", "--duration", "24", "--peak-rate", "3000",
                           "--no-stages",
                           "--tracking-uri", tracking_uri, "--experiment", "it-oracle", "--out", str(out)])
    assert code == 0, capsys.readouterr().err[-3000:]
    config = yaml.safe_load(out.read_text())
    params = config["params"]
    assert config["controller"] == "oracle" and set(params["service_s"]) == set(OPS)
    assert config["calibration"]["change_slowdown"] >= 0, "the sweep's changes show how long a changed batch runs"
    # enrich waits 150 us per record by design: the fit must see it as by far the most expensive operator
    assert params["service_s"]["enrich"] > 1e-4 and params["service_s"]["enrich"] == max(params["service_s"].values())
    calibration = mlflow_client.get_run(params["calibration_run"])
    assert calibration.data.tags["kind"] == "calibration" and "calibration.service_s.enrich" in calibration.data.params

    rates, slo = step_for(params)
    workload = tmp_path / "w.yaml"
    workload.write_text(f"name: step-it\nprofile: step\nparams: {{low: {rates['low']}, high: {rates['high']}, "
                        f"at_s: {STEP_S:g}}}\nduration_s: {DURATION_S:g}\nseed: 4\n")
    proc = run_cli(["--controller-config", str(out), "--workload", str(workload), "--trigger", f"{TRIGGER_S:g}",
                    "--slo-latency", f"{slo:.3f}", "--master", "local[2]", "--tracking-uri", tracking_uri,
                    "--experiment", "it-oracle", "--output-dir", str(tmp_path / "job")])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    exp = mlflow_client.get_experiment_by_name("it-oracle")
    [run] = mlflow_client.search_runs([exp.experiment_id], "tags.controller = 'oracle'")
    assert run.info.status == "FINISHED" and run.data.params["controller.calibration_run"] == params["calibration_run"]
    path = download_artifacts(run_id=run.info.run_id, artifact_path="decisions.jsonl", tracking_uri=tracking_uri)
    decisions = [json.loads(line) for line in open(path)]
    log = [(d["time_s"], d["after"]["enrich"], d["reason"]) for d in decisions]
    assert run.data.metrics["infeasible_decisions"] == 0 and run.data.metrics["records_lost"] == 0, (rates, slo, log)
    # every decision is the least-cost plan, after a batch or as one starts later than the plan's trigger (the oracle
    # plans again for the batch that runs: `Oracle.at_batch_start`, whose reasons the loop prefixes)
    assert decisions and all(d["reason"].removeprefix(f"{AT_BATCH_START}: ").startswith("least-cost vector")
                             for d in decisions), log
    # it sizes for the schedule: degree 1 for batches that can only read the low load (decided at least a trigger
    # before the step), a strictly higher enrich degree once the high-load batches are due
    before = [d["after"]["enrich"] for d in decisions if d["time_s"] + TRIGGER_S <= STEP_S]
    after = [d["after"]["enrich"] for d in decisions if STEP_S <= d["time_s"] <= DURATION_S]
    assert before and after, log
    assert max(before) == 1 and max(after) > max(before), (rates, slo, log)
