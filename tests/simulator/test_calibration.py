"""The job's calibration as the simulator reads it: every bad field named with where it came from, and a
calibration of another topology refused (its costs would stand for a job that is not the one being tuned)."""
import pytest
import yaml

from simulator.calibration import Calibration, CalibrationError
from simulator.evaluate import simulate_configuration
from workloads import Schedule, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")
CALIBRATION = {"service_s": {"parse": 1e-5, "enrich": 1.6e-4, "aggregate": 1.5e-5, "sink": 5e-6},
               "selectivity": {op: 1.0 for op in OPS}, "task_overhead_s": 0.01, "batch_overhead_s": 0.3, "slots": 4,
               "calibration_run": "0123"}


def test_a_calibration_names_its_bad_field_and_must_match_the_topology(tmp_path):
    with pytest.raises(CalibrationError, match="field 'batch_overhead_s' must be a number >= 0, got -1"):
        Calibration.from_params({**CALIBRATION, "batch_overhead_s": -1}, source="c.yaml")
    with pytest.raises(CalibrationError, match=r"field 'slots' must be an integer >= 1"):
        Calibration.from_params({**CALIBRATION, "slots": 0})
    path = tmp_path / "c.yaml"
    path.write_text("controller: oracle\nparams: {service_s: {parse: 1.0e-5}, task_overhead_s: 0.01, "
                    "batch_overhead_s: 0.3, slots: 2}\n")
    with pytest.raises(CalibrationError, match="calibrated on operators parse, but the topology has parse, enrich"):
        Calibration.from_file(path).plant(OPS, 2.0, 8)
    with pytest.raises(CalibrationError, match="cannot read the calibration"):
        Calibration.from_file(tmp_path / "missing.yaml")



def test_the_plant_has_the_calibrated_costs_and_the_oracle_is_the_least_cost_that_keeps_the_slo():
    calibration = Calibration.from_params(CALIBRATION)
    plant = calibration.plant(OPS, 2.0, 8)
    assert plant.slots == 4 and plant.batch_overhead_s == 0.3 and plant.operators[1].service_s == 1.6e-4
    schedule = Schedule(load_workload("autoscale-paper").with_overrides(duration_s=60, seed=1))
    oracle = simulate_configuration("oracle", calibration.oracle_params(), schedule, plant, slo_latency_s=5.0,
                                    knows_schedule=True)
    for degree in (1, 2, 3):
        static = simulate_configuration("static", {"degree": degree}, schedule, plant, slo_latency_s=5.0)
        assert static.slo_attainment < 0.95 or static.cost_slot_seconds >= oracle.cost_slot_seconds, degree
    assert oracle.slo_attainment >= 0.95 and oracle.batches > 20


def test_a_calibration_file_carries_the_noise_into_the_plant_and_names_a_bad_spread(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": CALIBRATION,
                                    "calibration": {"noise": {"batch_overhead_sigma": 0.14, "service_sigma": {"enrich": 0.04}}}}))
    plant = Calibration.from_file(path).plant(OPS, 2.0, 8)
    assert plant.noisy and plant.batch_overhead_sigma == 0.14
    assert plant.service_sigma == {"parse": 0.0, "enrich": 0.04, "aggregate": 0.0, "sink": 0.0}
    assert "noise" not in str(Calibration.from_file(path).oracle_params()), "the oracle plans on the medians"
    path.write_text(yaml.safe_dump({"params": CALIBRATION}))
    assert not Calibration.from_file(path).plant(OPS, 2.0, 8).noisy, "a calibration made before noise was measured"
    path.write_text(yaml.safe_dump({"params": CALIBRATION, "calibration": {"noise": {"service_sigma": {"enrich": -1}}}}))
    with pytest.raises(CalibrationError, match=r"c.yaml: field 'noise.service_sigma\['enrich'\]' must be a number >= 0"):
        Calibration.from_file(path)


def test_a_calibration_file_carries_the_change_slowdown_into_the_plant_and_names_a_bad_one(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"params": CALIBRATION, "calibration": {"change_slowdown": 0.09}}))
    assert Calibration.from_file(path).plant(OPS, 2.0, 8).change_slowdown == 0.09
    path.write_text(yaml.safe_dump({"params": CALIBRATION}))
    assert Calibration.from_file(path).plant(OPS, 2.0, 8).change_slowdown == 0.0, "made before it was measured"
    for bad in (-0.1, "fast", True):
        path.write_text(yaml.safe_dump({"params": CALIBRATION, "calibration": {"change_slowdown": bad}}))
        with pytest.raises(CalibrationError, match=r"c.yaml: field 'change_slowdown' must be a number >= 0"):
            Calibration.from_file(path)
