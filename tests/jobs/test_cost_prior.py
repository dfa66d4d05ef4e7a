"""The calibration as the controllers' cost prior (jobs/cost_prior.py): taken only where it was measured for the
run's master and operators, handed to the controller through the run's context, and named in the run's record."""
from dataclasses import replace

import pytest
import yaml

from jobs.cost_prior import calibrated_prior, operator_costs
from jobs.topology import DEFAULT_TOPOLOGY, OperatorSpec

SERVICE = {"parse": 8e-6, "enrich": 158e-6, "aggregate": 14e-6, "sink": 4e-6}


def calibration(tmp_path, master="local[4]", topology=None, name="oracle.yaml", **params):
    measured = {"master": master, "at": 1795000000.0}
    if topology is not None:
        measured["topology"] = topology
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": {
        "service_s": SERVICE, "selectivity": {"sink": 0.5}, "task_overhead_s": 0.002, "batch_overhead_s": 0.11,
        "keyed": {"aggregate": True}, "calibration_run": "abc123", **params},
        "calibration": {"measured": measured}}))
    return path


def test_a_calibration_of_this_master_and_these_operators_is_the_prior(tmp_path):
    prior = calibrated_prior("local[4]", DEFAULT_TOPOLOGY, calibration(tmp_path, topology=operator_costs(
        DEFAULT_TOPOLOGY)))
    assert prior is not None and prior.covers(DEFAULT_TOPOLOGY.names)
    models = {op.name: op for op in prior.operators}
    assert models["enrich"].service_s == pytest.approx(158e-6) and models["sink"].selectivity == 0.5
    assert models["aggregate"].keyed and not models["parse"].keyed
    assert prior.batch_overhead_s == pytest.approx(0.11)
    assert "calibration run abc123 on local[4] at 2026-11-18 11:06 UTC" in prior.source and "oracle.yaml" in prior.source
    # a calibration written before it recorded its operators was measured on the default topology
    assert calibrated_prior("local[4]", DEFAULT_TOPOLOGY, calibration(tmp_path, name="old.yaml")) is not None


def test_a_calibration_of_another_master_or_other_operators_or_none_is_no_prior(tmp_path):
    assert calibrated_prior("local[2]", DEFAULT_TOPOLOGY, calibration(tmp_path)) is None
    assert calibrated_prior("spark://h:7077", DEFAULT_TOPOLOGY, calibration(tmp_path)) is None
    slower = replace(DEFAULT_TOPOLOGY, operators=tuple(
        replace(op, wait_us=op.wait_us * 2) if op.name == "enrich" else op for op in DEFAULT_TOPOLOGY.operators))
    assert calibrated_prior("local[4]", slower, calibration(tmp_path)) is None  # an old file: the default's costs
    assert calibrated_prior("local[4]", slower, calibration(tmp_path, topology=operator_costs(slower))) is not None
    other = replace(DEFAULT_TOPOLOGY, operators=DEFAULT_TOPOLOGY.operators + (OperatorSpec("extra", "sink"),))
    assert calibrated_prior("local[4]", other, calibration(tmp_path, topology=operator_costs(other))) is None
    assert calibrated_prior("local[4]", DEFAULT_TOPOLOGY, tmp_path / "missing.yaml") is None
    (tmp_path / "bad.yaml").write_text("params: [1, 2\n")
    assert calibrated_prior("local[4]", DEFAULT_TOPOLOGY, tmp_path / "bad.yaml") is None
    # the payload format a run takes from its workload is not what the costs are of
    csv = replace(DEFAULT_TOPOLOGY, payload_format="google_task_events_csv")
    assert calibrated_prior("local[4]", csv, calibration(tmp_path)) is not None


def test_the_run_hands_the_prior_to_its_controller_and_a_query_of_its_own_gets_none(tmp_path, monkeypatch):
    from jobs.config import RunConfig

    monkeypatch.setenv("ELASTIC_CALIBRATION", str(calibration(tmp_path)))
    db = f"sqlite:///{tmp_path}/m.db"
    config = RunConfig(controller="ds2", controller_params={}, workload="step", tracking_uri=db).validate()
    assert config.cost_prior is not None and config.context().cost_prior is config.cost_prior
    assert "calibration run abc123" in config.cost_prior.source
    other = RunConfig(controller="ds2", controller_params={}, workload="step", tracking_uri=db,
                      master="local[2]").validate()
    assert other.cost_prior is None and other.context().cost_prior is None
