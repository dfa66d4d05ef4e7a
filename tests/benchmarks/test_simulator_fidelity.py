"""The fidelity benchmark re-simulates each run from what the run recorded, not from what the benchmark assumes: a
recorded run whose figures are the plant's own must come out with zero error, and a run whose recorded cost is off
by 20 % must show that error and fail the cost goal."""
import pytest
import yaml
from mlflow.tracking import MlflowClient

from benchmarks.simulator_fidelity import main as fidelity_main
from jobs.topology import load_topology
from simulator.calibration import Calibration
from simulator.evaluate import simulate_configuration
from workloads import Schedule, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")
CALIBRATION = {"service_s": {"parse": 3e-6, "enrich": 1.4e-4, "aggregate": 4e-6, "sink": 9e-6},
               "selectivity": {"parse": 1.0, "enrich": 1.0, "aggregate": 0.25, "sink": 1.0},
               "task_overhead_s": 0.03, "batch_overhead_s": 0.45, "slots": 4, "calibration_run": ""}


def record_run(client, experiment_id, parent, controller, params, spec, figures):
    """A finished child run with the artifacts and parameters a Spark run records (jobs/recording/run_record.py)."""
    run = client.create_run(experiment_id, tags={"mlflow.parentRunId": parent, "config": controller,
                                                 "controller": controller, "workload": spec.name,
                                                 "seed": str(spec.seed)}).info.run_id
    for key, value in {"trigger_s": 2.0, "max_degree": 8, "slo.latency_s": 5.0, "slo.target": 0.95}.items():
        client.log_param(run, key, value)
    client.log_dict(run, {"controller": controller, "params": params}, "config/controller.json")
    client.log_dict(run, spec.to_dict(), "config/workload.json")
    client.log_dict(run, load_topology("default").to_dict(), "config/topology.json")
    for key, value in figures.items():
        client.log_metric(run, key, value)
    client.set_terminated(run, "FINISHED")


@pytest.mark.parametrize("cost_factor, verdict", [(1.0, "met"), (1.2, "MISSED")])
def test_each_recorded_run_is_re_simulated_from_its_own_record(tmp_path, capsys, cost_factor, verdict):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("f", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp).info.run_id
    calibration = tmp_path / "oracle.yaml"
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": CALIBRATION}))
    plant = Calibration.from_params(CALIBRATION).plant(OPS, 2.0, 8)
    for controller, params in (("static", {"degree": 2}), ("threshold", {"cooldown_s": 6.0})):
        spec = load_workload("autoscale-paper").with_overrides(duration_s=40, seed=1)
        sim = simulate_configuration(controller, params, Schedule(spec), plant, slo_latency_s=5.0)
        record_run(client, exp, parent, controller, params, spec,
                   {"cost_slot_seconds": sim.cost_slot_seconds * cost_factor, "latency_p95_s": sim.latency_p95_s,
                    "slo_attainment": sim.slo_attainment})
    client.set_terminated(parent, "FINISHED")
    assert fidelity_main(["--tracking-uri", uri, "--parent-run-id", parent, "--calibration", str(calibration)]) == 0
    out = capsys.readouterr().out
    cost_line = next(line for line in out.splitlines() if "cost error, max |rel|" in line)
    assert f"{1 / cost_factor - 1:10.3f}".strip().lstrip("-") in cost_line and cost_line.endswith(verdict), out
    assert "p95 error, max |rel|                    0.000" in out and "2 runs; 80 simulated seconds" in out
    assert all(f"{name} autoscale-paper" in out for name in ("static", "threshold")), out


def test_per_batch_fidelity_compares_each_measured_batch_with_the_plant_on_its_own_records_and_degrees(tmp_path):
    """A batch whose measured duration is exactly the plant's has zero error; one 25 % slower shows -20 %."""
    import pandas as pd

    from benchmarks.simulator_fidelity import batch_fidelity
    from controllers.cost_model import operator_timing

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("f", artifact_location=(tmp_path / "a").as_uri())
    calibration = Calibration.from_params(CALIBRATION)
    plant = calibration.plant(OPS, 2.0, 8)
    runs = []
    for slower in (1.0, 1.25):
        rows = []
        for records, degree in ((1000, 1), (12000, 4), (30000, 8)):
            exact = plant.batch_overhead_s + sum(operator_timing(op, records, degree, plant.slots)[0]
                                                 for op in plant.operators)
            rows.append({"records_read": records, "batch_duration_s": exact * slower,
                         **{f"records_in_{op}": records for op in OPS}, **{f"degree_{op}": degree for op in OPS}})
        run = client.create_run(exp).info.run_id
        pd.DataFrame(rows).to_parquet(tmp_path / "batches.parquet")
        client.log_artifact(run, str(tmp_path / "batches.parquet"))
        runs.append(run)
    exact_table = batch_fidelity(client, pd.DataFrame({"run_id": runs[:1]}), calibration)
    slow_table = batch_fidelity(client, pd.DataFrame({"run_id": runs[1:]}), calibration)
    assert list(exact_table["batches"]) == [1, 1, 1] and (exact_table["err_median"] == 0).all()
    assert (slow_table["err_median"] == -0.2).all()


def test_with_noise_draws_each_run_is_set_against_the_range_of_the_plants_noisy_runs(tmp_path, capsys):
    """A run recorded with the plant's deterministic figures, on a noisy calibration: the draws' range is printed and
    the per-configuration spreads; a cost far outside every draw is counted as outside."""
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("f", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp).info.run_id
    noise = {"batch_overhead_sigma": 0.3, "service_sigma": {"enrich": 0.2}}
    calibration = tmp_path / "oracle.yaml"
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": CALIBRATION,
                                           "calibration": {"noise": noise}}))
    plant = Calibration.from_params(CALIBRATION).plant(OPS, 2.0, 8)
    for seed, factor in ((1, 1.0), (2, 3.0)):
        spec = load_workload("autoscale-paper").with_overrides(duration_s=40, seed=seed)
        sim = simulate_configuration("threshold", {}, Schedule(spec), plant, slo_latency_s=5.0)
        record_run(client, exp, parent, "threshold", {}, spec,
                   {"cost_slot_seconds": sim.cost_slot_seconds * factor, "latency_p95_s": sim.latency_p95_s,
                    "slo_attainment": sim.slo_attainment})
    assert fidelity_main(["--tracking-uri", uri, "--parent-run-id", parent, "--calibration", str(calibration),
                          "--noise-draws", "4"]) == 0
    out = capsys.readouterr().out
    assert "each run simulated 4 times with the calibration's noise" in out
    assert "cost spread per configuration" in out and "plant_sd" in out
    assert "of 2 Spark runs' costs inside the plant's noisy range" in out
    assert not out.split("of 2 Spark runs")[0].rstrip().endswith("2"), "the tripled cost is outside every draw"
