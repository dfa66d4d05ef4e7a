"""The tuning pipeline without Airflow or Spark: studies recorded in MLflow (nested trials, figures, resumed without
duplicates), the confirmation plan within a Spark-minutes budget, the request's errors before any trial."""
import pytest
import yaml
from mlflow.tracking import MlflowClient

from analysis.tuning.confirmation import BudgetError, Candidate, case_minutes, plan
from analysis.tuning.pipeline import TuningError, validate
from analysis.tuning.records import STUDY_KIND, pareto_front, tuning_experiment
from analysis.tuning.study import StudyRequest, run_study
from tests.analysis.test_tuning import CALIBRATION


@pytest.fixture()
def calibration_file(tmp_path):
    """A calibration written by hand (no calibration run named in it: the study names the file)."""
    path = tmp_path / "oracle.yaml"
    params = {k: v for k, v in CALIBRATION.items() if k != "calibration_run"}
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": params}))
    return path


def test_a_study_is_a_run_with_its_trials_nested_and_a_resumed_study_adds_only_new_trials(tmp_path,
                                                                                          calibration_file):
    uri, storage = f"sqlite:///{tmp_path}/mlflow.db", f"sqlite:///{tmp_path}/optuna.db"
    request = StudyRequest("threshold", "step", str(calibration_file), seeds=(1,), trials=5, k=2, duration_s=40,
                           slo_latency_s=5.0, slo_target=0.95)
    candidates, run_id = run_study(request, name="s1", storage=storage, tracking_uri=uri, experiment="e")
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.data.tags["kind"] == STUDY_KIND and run.data.tags["tuning.study"] == "s1"
    assert run.data.params["calibration"] == str(calibration_file) and run.data.params["sampler"] == "tpe"
    assert client.get_experiment(run.info.experiment_id).name == tuning_experiment("e") == "e-tuning"
    assert {a.path for a in client.list_artifacts(run_id, "figures")} >= {"figures/history.png", "figures/pareto.png"}

    def trials():
        return client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run_id}'")

    first = trials()
    assert sorted(int(t.data.tags["tuning.trial"]) for t in first) == list(range(5))
    done = [t for t in first if t.info.status == "FINISHED"]
    assert done and all({"cost_slot_seconds", "slo_attainment", "constraint_slo", "feasible"} <= set(t.data.metrics)
                        for t in done)
    assert all(t.data.metrics["feasible"] == float(t.data.metrics["constraint_slo"] <= 0) for t in done)
    # the defaults are trial 0 (what runs without tuning), and every candidate names its study and calibration
    assert candidates[0].role == "defaults" and candidates[0].trial == 0 and candidates[0].label == "threshold"
    assert [c.role for c in candidates[1:]] == ["top-1", "top-2"]
    assert all(c.study == "s1" and c.study_run_id == run_id and c.calibration == str(calibration_file)
               for c in candidates)
    assert candidates[1].tags()["tuning.trial"] == str(candidates[1].trial)
    # a retried task resumes the stored study: three more trials, recorded once each, in the same study run
    _, again = run_study(replace_trials(request, 3), name="s1", storage=storage, tracking_uri=uri, experiment="e")
    assert again == run_id
    assert sorted(int(t.data.tags["tuning.trial"]) for t in trials()) == list(range(8))


def replace_trials(request, trials):
    from dataclasses import replace

    return replace(request, trials=trials)


def test_the_pareto_front_keeps_what_nothing_beats_on_both_cost_and_slo():
    points = [(10, 90), (12, 99), (11, 95), (13, 98), (9, 80), (12, 99)]
    assert [points[i] for i in pareto_front(points)] == [(9, 80), (10, 90), (11, 95), (12, 99)]


def cand(label, role, workload="step"):
    return Candidate(label, workload, role, controller=label.split(":")[0], study="s", trial=1, calibration="c")


def test_the_plan_confirms_defaults_and_best_first_then_champion_then_the_rest_within_the_budget():
    candidates = [cand("ds2", "defaults"), cand("ds2:a=1", "top-1"), cand("ds2:a=2", "top-2"),
                  cand("ds2:a=3", "top-3"), cand("threshold", "champion"), cand("ds2", "top-4")]
    one = case_minutes(60)  # per seed
    planned = plan(candidates, [1, 2], {"step": 60}, budget_minutes=one * 2 * 4 + 0.01)
    assert list(dict.fromkeys(c.variant for c in planned.cases)) == ["ds2", "ds2:a=1", "threshold", "ds2:a=2"]
    assert [c.seed for c in planned.cases[:2]] == [1, 2], "every seed of a configuration or none"
    assert planned.left_out == [f"ds2:a=3 on step (top-3, {2 * one:.1f} Spark minutes): over the budget of "
                                f"{one * 8 + 0.01:g}"]
    assert planned.case_tags[0] == {"tuning.role": "defaults", "tuning.study": "s", "tuning.calibration": "c",
                                    "tuning.trial": "1"}
    assert planned.case_tags[4] == {"tuning.role": "champion"}
    assert planned.case_minutes == [pytest.approx(one)] * 8, "each case's estimate, for the budget gate"


@pytest.mark.parametrize("minutes, seeds, message", [
    (0, [1], "spark_minutes must be > 0"),
    (0.5, [1, 2, 3], "cannot confirm a single configuration over 3 seed(s)"),
    (10, [], "at least one seed"),
])
def test_a_budget_that_confirms_nothing_is_an_error(minutes, seeds, message):
    with pytest.raises(BudgetError) as err:
        plan([cand("ds2", "defaults")], seeds, {"step": 60}, minutes)
    assert message in str(err.value)


GOOD = {"controllers": ["ds2"], "workloads": ["step"], "trials": 3, "k": 1, "seeds": [1], "spark_minutes": 5,
        "duration_s": 20, "slo_latency_s": 5.0, "slo_target": 0.95, "sampler": "tpe"}


@pytest.mark.parametrize("change, message", [
    ({"controllers": ["ds2", "static"]}, "params.controllers[1]"),
    ({"controllers": ["nope"]}, "params.controllers[0]"),
    ({"trials": 0}, "params.trials: must be an integer >= 1"),
    ({"k": 0}, "params.k"),
    ({"spark_minutes": 0}, "params.spark_minutes: must be a number > 0"),
    ({"workloads": ["nowhere"]}, "nowhere"),
    ({"sampler": "grid"}, "params.sampler"),
    ({"calibration": "nowhere.yaml"}, "params.calibration: --calibration 'nowhere.yaml': no such file"),
    ({"calibration": "0123456789abcdef0123456789abcdef"}, "no such run"),
    ({"calibration": ""}, "params.calibration: none given and the MLflow store has no calibration run"),
])
def test_a_bad_tuning_request_names_the_parameter_before_any_trial(change, message, calibration_file, tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with pytest.raises(TuningError) as err:
        validate({**GOOD, "calibration": str(calibration_file), **change}, uri)
    assert message in str(err.value)
    assert not (tmp_path / "optuna.db").exists()


def test_a_calibration_of_another_topology_is_refused(tmp_path):
    other = {**CALIBRATION, "service_s": {"parse": 1e-5, "sink": 1e-5}, "selectivity": {"parse": 1, "sink": 1}}
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump({"controller": "oracle", "params": other}))
    with pytest.raises(TuningError) as err:
        validate({**GOOD, "calibration": str(path)}, f"sqlite:///{tmp_path}/mlflow.db")
    assert "measured on another topology" in str(err.value)


def test_a_calibration_of_another_master_is_refused_and_an_old_one_named_in_a_warning(tmp_path):
    import time

    params = {k: v for k, v in CALIBRATION.items() if k != "calibration_run"}
    path = tmp_path / "measured.yaml"
    path.write_text(yaml.safe_dump({"params": params, "calibration": {"measured": {
        "master": "spark://10.0.0.1:7077", "at": time.time() - 3 * 86400}}}))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    with pytest.raises(TuningError) as err:
        validate({**GOOD, "calibration": str(path), "master": "local[4]"}, uri)
    assert ("params.calibration: " + str(path) + ": measured on master spark://10.0.0.1:7077, but the runs use "
            "local[4]") in str(err.value)
    request = validate({**GOOD, "calibration": str(path), "master": "spark://10.0.0.1:7077"}, uri)
    [warning] = request["warnings"]
    assert warning.startswith(f"params.calibration: {path} was measured 3.0 days ago")
    assert validate({**GOOD, "calibration": str(path)}, uri)["warnings"], "no master given: only the age is checked"


def test_an_empty_calibration_means_the_stores_latest(tmp_path, calibration_file):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("e", artifact_location=(tmp_path / "a").as_uri())
    run = client.create_run(exp, tags={"kind": "calibration"}).info.run_id
    client.log_artifact(run, str(calibration_file), "calibration")
    client.set_terminated(run, "FINISHED")
    assert validate({**GOOD, "calibration": ""}, uri)["calibration"] == run


def test_a_study_stored_in_postgres_resumes_as_on_the_cluster(tmp_path, calibration_file):
    """docker-compose.yaml stores studies in PostgreSQL (database optuna): a retried task resumes its study there."""
    from tests.postgres import temporary_databases

    with temporary_databases("optuna") as [name]:
        storage = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
        uri = f"sqlite:///{tmp_path}/mlflow.db"
        request = StudyRequest("ds2", "step", str(calibration_file), seeds=(1,), trials=2, k=1, duration_s=30)
        _, first = run_study(request, name="pg", storage=storage, tracking_uri=uri, experiment="e")
        _, again = run_study(request, name="pg", storage=storage, tracking_uri=uri, experiment="e")
        import optuna

        assert first == again and len(optuna.load_study(study_name="pg", storage=storage).trials) == 4


def test_the_confirmation_suite_adds_the_calibrated_oracle_and_records_its_plan(tmp_path, calibration_file):
    from analysis.tuning.pipeline import open_confirmation

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    MlflowClient(uri).create_experiment("e", artifact_location=(tmp_path / "a").as_uri())
    request = {**GOOD, "calibration": str(calibration_file), "seeds": [1, 2], "spark_minutes": 30}
    screened = {"candidates": [{"label": "ds2", "workload": "step", "role": "defaults", "controller": "ds2",
                                "study": "s", "trial": 0, "calibration": "c", "study_run_id": "r"}],
                "studies": {"s": "r"}}
    suite = open_confirmation(request, screened, tracking_uri=uri, experiment="e", dag_id="d", run_id="x",
                              with_oracle=True)
    assert suite["case_count"] == 4 and suite["left_out"] == []
    oracle_cases = [c for c in suite["cases"] if c[c.index("--controller") + 1] == "oracle"]
    assert len(oracle_cases) == 2 and all("tuning.role=oracle" in c for c in oracle_cases)
    assert all("--stop-when-slo-unreachable" in c for c in suite["cases"])
    client = MlflowClient(uri)
    parent = client.get_run(suite["parent_run_id"])
    assert parent.data.tags["kind"] == "tuning" and parent.data.params["spark_minutes.budget"] == "30"
    assert "tuning/plan.json" in {a.path for a in client.list_artifacts(parent.info.run_id, "tuning")}


def test_with_a_noisy_calibration_candidates_are_named_on_the_rechecks_figures(tmp_path):
    from analysis.suite import parse_variant
    from analysis.tuning.screening import evaluate
    from jobs.config import param_value
    from jobs.topology import load_topology
    from simulator.calibration import Calibration
    from workloads import Schedule, load_workload

    noise = {"batch_overhead_sigma": 0.3, "service_sigma": {"enrich": 0.2}}
    path = tmp_path / "noisy.yaml"
    path.write_text(yaml.safe_dump({"params": {k: v for k, v in CALIBRATION.items() if k != "calibration_run"},
                                    "calibration": {"noise": noise}}))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    request = StudyRequest("ds2", "step", str(path), seeds=(1,), trials=4, k=1, duration_s=30, slo_latency_s=5.0,
                           slo_target=0.95, draws=2, recheck_draws=4)
    candidates, run_id = run_study(request, name="noisy", storage=None, tracking_uri=uri, experiment="e")
    client = MlflowClient(uri)
    assert client.get_run(run_id).data.params["screen.recheck_draws"] == "4"
    assert "recheck.json" in {a.path for a in client.list_artifacts(run_id)}
    plant = Calibration.from_file(path).plant(load_topology("default").names, 2.0, 8)
    schedules = [Schedule(load_workload("step").with_overrides(duration_s=30, seed=1))]
    for candidate in candidates:  # the defaults and the top-1, each as its label says
        _, pairs = parse_variant(candidate.label)
        params = {k: param_value(v) for k, v in (pair.split("=", 1) for pair in pairs)}
        four = evaluate("ds2", params, schedules, plant, slo_latency_s=5.0, slo_target=0.95, headroom=1.0, draws=4)
        assert candidate.simulated_cost == four.cost_slot_seconds, candidate.role
