"""Tuning: the search space from the controllers' declarations (and every way a user can get it wrong, each an error
before any trial), the screening study in the calibrated plant model, and the command a user types."""
import optuna
import pytest
import yaml

import controllers
from analysis.tuning.__main__ import main as tuning_main
from analysis.tuning.screening import best_so_far, evaluate, ranked, screen
from analysis.tuning.space import SpaceError, build_space
from params.declare import Choices, SearchRange
from simulator.calibration import Calibration, CalibrationError
from workloads import Schedule, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")
CALIBRATION = {"service_s": {"parse": 1e-5, "enrich": 1.6e-4, "aggregate": 1.5e-5, "sink": 5e-6},
               "selectivity": {op: 1.0 for op in OPS}, "task_overhead_s": 0.01, "batch_overhead_s": 0.3, "slots": 4,
               "calibration_run": "0123"}
SLO = dict(slo_latency_s=5.0, slo_target=0.95)


def test_the_space_is_the_controllers_own_declarations():
    space = build_space("threshold")
    assert dict(space.dimensions) == controllers.base.search_space_of("threshold")
    assert space.dimensions["cooldown_s"] == SearchRange(0.0, 60.0)
    assert space.dimensions["step"] == Choices(("ratio", "one"))
    assert space.defaults()["cooldown_s"] == 10.0 and space.fixed == {}


def test_a_study_narrows_widens_and_fixes_parameters():
    space = build_space("ds2", ["scale_down_delay_s=5:120:log", "window_batches=2:6", "initial_degree=1:4",
                                "guards=true"], ["target_utilization=0.8"])
    assert space.dimensions["scale_down_delay_s"] == SearchRange(5.0, 120.0, log=True)
    assert space.dimensions["window_batches"] == SearchRange(2, 6)
    assert space.dimensions["initial_degree"] == SearchRange(1, 4), "a declared but untuned parameter can be searched"
    assert space.dimensions["guards"] == Choices((True,))
    assert "target_utilization" not in space.dimensions and space.fixed == {"target_utilization": 0.8}
    lows = {k: d.values[0] if isinstance(d, Choices) else d.low for k, d in space.dimensions.items()}
    values = space.suggest(optuna.trial.FixedTrial(lows))
    assert values["target_utilization"] == 0.8 and isinstance(values["window_batches"], int)
    assert values["guards"] is True


@pytest.mark.parametrize("controller, ranges, fixed, message", [
    ("nope", [], [], "unknown controller 'nope'; controllers with tunable parameters: autoscale, ds2"),
    ("static", [], [], "controller 'static' declares no tunable parameter"),
    ("ds2", ["cooldown=1:2"], [], "--range 'cooldown=1:2': unknown parameter 'cooldown'; parameters: "
                                  "scale_down_delay_s"),
    ("ds2", ["scale_down_delay_s=30:5"], [], "search range [30.0, 5.0] is empty or inverted"),
    ("ds2", ["scale_down_delay_s=5:5"], [], "search range [5.0, 5.0] is empty or inverted"),
    ("ds2", ["catch_up_s=0:10:log"], [], "a log-scale search range needs low > 0"),
    ("threshold", ["scale_up_ratio=-1:2"], [], "parameter 'scale_up_ratio' must be >= 0.0, got -1.0"),
    ("ds2", ["window_batches=1.5:4"], [], "window_batches is an integer parameter"),
    ("ds2", ["window_batches=1-4"], [], "expected LOW:HIGH or LOW:HIGH:log"),
    ("threshold", ["step=ratio|double"], [], "parameter 'step' must be one of ratio, one, got 'double'"),
    ("static", ["degrees=1:3"], [], "a per-operator parameter is not searched"),
    ("threshold", [], ["cooldown_s=-1"], "--set cooldown_s: controller 'threshold': parameter 'cooldown_s' must be >= 0"),
    ("seep-detector", [], [f"{k}={str(controllers.base.registered()['seep-detector'].PARAMS[k].default).lower()}"
                           for k in controllers.base.search_space_of("seep-detector")],
     "the search space is empty"),
])
def test_a_bad_space_is_one_error_naming_it(controller, ranges, fixed, message):
    with pytest.raises(SpaceError) as err:
        build_space(controller, ranges, fixed)
    assert message in str(err.value)


@pytest.fixture(scope="module")
def plant():
    return Calibration.from_params(CALIBRATION).plant(OPS, 2.0, 8)


@pytest.fixture(scope="module")
def schedules():
    spec = load_workload("autoscale-paper")
    return [Schedule(spec.with_overrides(duration_s=60, seed=s)) for s in (1, 2)]


def test_screening_finds_a_cheaper_feasible_ds2_than_its_defaults_and_is_seeded(plant, schedules):
    space = build_space("ds2")
    study = screen(space, schedules, plant, trials=25, seed=3, **SLO)
    assert len(study.trials) == 25
    assert study.trials[0].user_attrs["params"] == space.defaults(), "the defaults are trial 0"
    best = ranked(study, space, SLO["slo_target"])[0]
    defaults = evaluate("ds2", {}, schedules, plant, **SLO)
    assert best.slo_attainment >= 0.95 and defaults.slo_attainment >= 0.95
    assert best.cost_slot_seconds < 0.95 * defaults.cost_slot_seconds, (best, defaults)
    assert best_so_far(study, 0.95)[-1] == best.cost_slot_seconds
    again = screen(space, schedules, plant, trials=25, seed=3, **SLO)
    assert ranked(again, space, 0.95)[0].params == best.params, "same seed, same study"


def test_a_configuration_that_breaks_a_rule_is_pruned_with_the_rule(plant, schedules):
    space = build_space("threshold", ["scale_up_ratio=0.2:0.6", "scale_down_ratio=0.3:0.6"], ["guards=false"])
    study = screen(space, schedules[:1], plant, trials=12, seed=1, **SLO)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned and all("scale_down_ratio" in t.user_attrs["invalid"] and "must be below scale_up_ratio"
                          in t.user_attrs["invalid"] for t in pruned)


def test_a_stored_study_resumes_and_refuses_another_space(plant, schedules, tmp_path):
    storage = f"sqlite:///{tmp_path / 'tuning.db'}"
    space = build_space("threshold", [], ["guards=false"])
    screen(space, schedules[:1], plant, trials=3, storage=storage, study_name="s", **SLO)
    resumed = screen(space, schedules[:1], plant, trials=2, storage=storage, study_name="s", **SLO)
    assert len(resumed.trials) == 5
    with pytest.raises(SpaceError, match="study 's' in .* searched another space"):
        screen(build_space("threshold"), schedules[:1], plant, trials=1, storage=storage, study_name="s", **SLO)


def test_headroom_judges_events_against_less_than_the_slo_and_a_study_keeps_its_headroom(plant, schedules,
                                                                                            tmp_path):
    # the same configuration, the same simulated run: only the bar an event is judged by differs
    strict = evaluate("ds2", {}, schedules, plant, **SLO, headroom=0.5)
    lenient = evaluate("ds2", {}, schedules, plant, **SLO, headroom=1.0)
    assert strict.cost_slot_seconds == lenient.cost_slot_seconds
    assert strict.slo_attainment < lenient.slo_attainment, (strict, lenient)
    storage = f"sqlite:///{tmp_path / 'tuning.db'}"
    space = build_space("ds2")
    study = screen(space, schedules[:1], plant, trials=2, storage=storage, study_name="h", **SLO, headroom=0.5)
    assert study.trials[0].user_attrs["slo_attainment"] == evaluate("ds2", {}, schedules[:1], plant, **SLO,
                                                                    headroom=0.5).slo_attainment
    with pytest.raises(SpaceError, match="study 'h' in .* judged its trials by .*'headroom': 0.5"):
        screen(space, schedules[:1], plant, trials=1, storage=storage, study_name="h", **SLO, headroom=0.8)
    with pytest.raises(SpaceError, match=r"headroom must be in \(0, 1\]"):
        screen(space, schedules[:1], plant, trials=1, **SLO, headroom=1.5)


def test_a_noisy_plant_judges_a_trial_on_its_worse_runs_and_a_study_keeps_its_noise_settings(schedules, tmp_path):
    """With the calibration's spread, each seed runs `draws` times on common noise; the constraint reads the runs'
    lower quantile, so a configuration feasible only on average is not feasible."""
    noisy = Calibration.from_params(CALIBRATION).with_noise(
        {"batch_overhead_sigma": 0.5, "service_sigma": {"enrich": 0.3}}).plant(OPS, 2.0, 8)
    tight = dict(slo_latency_s=3.5, slo_target=0.95)
    found = evaluate("ds2", {}, schedules, noisy, **tight, headroom=1.0, draws=4, quantile=0.1)
    again = evaluate("ds2", {}, schedules, noisy, **tight, headroom=1.0, draws=4, quantile=0.1)
    assert found == again, "seeded noise: the same figures"
    assert found.slo_attainment_low < found.slo_attainment, found
    assert found.judged_attainment == found.slo_attainment_low
    median = evaluate("ds2", {}, schedules, noisy, **tight, headroom=1.0, draws=4, quantile=0.5)
    assert median.slo_attainment_low >= found.slo_attainment_low
    storage = f"sqlite:///{tmp_path / 'tuning.db'}"
    space = build_space("ds2")
    study = screen(space, schedules[:1], noisy, trials=2, storage=storage, study_name="n", **SLO, draws=2)
    assert study.user_attrs["judged"]["draws"] == 2 and study.user_attrs["judged"]["quantile"] == 0.2
    assert study.trials[0].user_attrs["slo_attainment_low"] <= study.trials[0].user_attrs["slo_attainment"]
    assert study.trials[0].constraints["slo"] == pytest.approx(SLO["slo_target"]
                                                           - study.trials[0].user_attrs["slo_attainment_low"])
    with pytest.raises(SpaceError, match="study 'n' in .* judged its trials by .*'draws': 2"):
        screen(space, schedules[:1], noisy, trials=1, storage=storage, study_name="n", **SLO, draws=3)
    with pytest.raises(SpaceError, match=r"draws must be an integer >= 1.*quantile must be in \[0, 0.5\]"):
        screen(space, schedules[:1], noisy, trials=1, **SLO, draws=0, quantile=0.9)


def test_the_command_prints_the_space_and_screens_from_a_calibration_file(tmp_path, capsys):
    assert tuning_main(["space", "threshold", "--range", "cooldown_s=2:30"]) == 0
    assert "cooldown_s           float [2, 30]" in capsys.readouterr().out
    calibration = tmp_path / "oracle.yaml"
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": CALIBRATION}))
    code = tuning_main(["screen", "threshold", "--workload", "step", "--duration", "40", "--seeds", "1",
                        "--calibration", str(calibration), "--trials", "6", "--sampler", "both", "--top", "2",
                        "--record", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "tpe: 6 trials" in out and "random: 6 trials" in out and "threshold (defaults)" in out
    assert "(oracle: knows the schedule" in out and "confirm on Spark" in out and '"workloads": ["step"]' in out
    # --record: each sampler's study is a run of the tuning experiment with its 6 trials nested
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("elastic-streaming-tuning")
    studies = client.search_runs([exp.experiment_id], "tags.kind = 'tuning-study'")
    assert sorted(r.data.params["sampler"] for r in studies) == ["random", "tpe"]
    for study in studies:
        assert len(client.search_runs([exp.experiment_id],
                                      f"tags.mlflow.parentRunId = '{study.info.run_id}'")) == 6


@pytest.mark.parametrize("argv, message", [
    (["space", "static"], "declares no tunable parameter"),
    (["screen", "ds2", "--workload", "step", "--calibration", "nowhere.yaml"], "no such file, and not an MLflow run"),
    (["screen", "ds2", "--workload", "nope", "--calibration", "x"], "nope"),
    (["screen", "ds2", "--workload", "step", "--calibration", "x", "--trials", "0"], "--trials must be >= 1"),
    (["screen", "ds2", "--workload", "step", "--calibration", "x", "--slo-target", "1.5"], "slo_target"),
    (["screen", "ds2", "--workload", "step", "--calibration", "x", "--screen-headroom", "0"], "--screen-headroom"),
    (["screen", "ds2", "--workload", "step", "--calibration", "x", "--noise-draws", "0"], "--noise-draws must be"),
    (["screen", "ds2", "--workload", "step", "--calibration", "x", "--noise-quantile", "0.7"], "--noise-quantile"),
])
def test_bad_input_is_exit_2_and_one_line_before_any_trial(argv, message, capsys, tmp_path, monkeypatch):
    (tmp_path / "x").write_text(yaml.safe_dump({"params": CALIBRATION}))
    monkeypatch.chdir(tmp_path)
    assert tuning_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_tune_rejects_a_bad_request_with_every_problem_before_any_trial_or_spark_run(capsys, tmp_path):
    code = tuning_main(["tune", "--controllers", "ds2,static", "--workloads", "step", "--calibration", "nowhere.yaml",
                        "--trials", "0", "--spark-minutes", "0", "--screen-headroom", "2", "--noise-draws", "0",
                        "--tracking-uri", f"sqlite:///{tmp_path}/m.db",
                        "--storage", f"sqlite:///{tmp_path}/o.db"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: invalid tuning request:")
    for message in ("params.controllers[1]", "params.trials", "params.spark_minutes", "params.calibration",
                    "params.screen_headroom", "params.noise_draws must be an integer >= 1"):
        assert message in err, err
    assert not (tmp_path / "o.db").exists(), "no study was opened"


def test_a_calibration_is_found_by_its_mlflow_run_whatever_name_its_yaml_was_written_under(tmp_path):
    from mlflow.tracking import MlflowClient

    from analysis.tuning.calibrations import load_calibration

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("c", artifact_location=(tmp_path / "a").as_uri())
    run = client.create_run(exp, tags={"kind": "calibration"}).info.run_id
    written = tmp_path / "mine.yaml"  # jobs.calibrate --out mine.yaml logs it as calibration/mine.yaml
    written.write_text(yaml.safe_dump({"controller": "oracle", "params": CALIBRATION}))
    client.log_artifact(run, str(written), "calibration")
    calibration = load_calibration(run, uri)
    assert calibration.run_id == run and calibration.source == f"calibration run {run}" and calibration.slots == 4
    other = client.create_run(exp, tags={"kind": "experiment"}).info.run_id
    with pytest.raises(CalibrationError, match="run is not a calibration"):
        load_calibration(other, uri)


def test_guard_options_are_searched_only_when_guards_are_on(plant, schedules):
    """A conditional space (Optuna define-by-run): a trial with guards off samples no guard-only option (it would
    change nothing), one with guards on samples them and not the guards-off scale-down delay."""
    space = build_space("ds2")
    # the defaults (trial 0) have the guards on, so they carry the guard options and not the guards-off delay
    assert space.defaults()["stabilisation_s"] == 0.0 and "scale_down_delay_s" not in space.defaults()
    assert "searched only when guards=True" in "\n".join(space.describe())
    study = screen(space, schedules[:1], plant, trials=12, seed=5, **SLO)
    guard_only = {"stabilisation_s", "reconfig_cost_s", "burst_headroom"}
    by_guards = {True: 0, False: 0}
    for t in study.trials:
        on = t.params["guards"]
        by_guards[on] += 1
        assert (guard_only <= set(t.params)) is on and ("scale_down_delay_s" in t.params) is (not on)
    assert by_guards[True] and by_guards[False]
    # fixing the condition fixes which options are searched
    off = build_space("ds2", fixed=["guards=false"])
    assert "stabilisation_s" not in screen(off, schedules[:1], plant, trials=2, seed=5, **SLO).trials[1].params


def test_the_recheck_ranks_the_best_configurations_again_on_more_draws_of_the_same_noise(schedules):
    """The best of many noisy trials is partly the luckiest: on more draws (the same for each configuration) the
    figures change and the ranking follows them; a deterministic plant or 0 draws leaves the ranking alone."""
    from analysis.tuning.screening import recheck

    noisy = Calibration.from_params(CALIBRATION).with_noise(
        {"batch_overhead_sigma": 0.5, "service_sigma": {"enrich": 0.3}}).plant(OPS, 2.0, 8)
    judged = dict(**SLO, headroom=1.0, quantile=0.2)
    found = [evaluate("ds2", params, schedules, noisy, **judged, draws=1)
             for params in ({}, {"target_utilization": 0.9}, {"target_utilization": 0.5})]
    again = recheck("ds2", found, schedules, noisy, **judged, draws=6)
    assert sorted(s.label for s in again) == sorted(s.label for s in found)
    assert again == recheck("ds2", found, schedules, noisy, **judged, draws=6), "seeded: the same recheck"
    by_label = {s.label: s for s in again}
    for s in found:
        six = evaluate("ds2", s.params, schedules, noisy, **judged, draws=6)
        assert by_label[s.label].cost_slot_seconds == six.cost_slot_seconds
    order = [(not s.feasible(SLO["slo_target"]), s.cost_slot_seconds if s.feasible(SLO["slo_target"]) else 0)
             for s in again]
    assert order == sorted(order), "ranked on the rechecked figures"
    plain = Calibration.from_params(CALIBRATION).plant(OPS, 2.0, 8)
    assert recheck("ds2", found, schedules, plain, **judged, draws=6) == found
    assert recheck("ds2", found, schedules, noisy, **judged, draws=0) == found


def test_the_executor_level_controllers_are_screened_on_the_plant_with_their_own_space(plant, schedules, tmp_path):
    """executor-autoscaler and multilevel are in the tuning search space: the plant adds an executor's slot after
    its provisioning delay, and multilevel reads its capacity table once per study (a file here; a missing one is
    one error naming it)."""
    import json

    space = build_space("executor-autoscaler")
    assert {"target_utilization", "stabilisation_s", "max_executors"} <= set(space.dimensions)
    study = screen(space, schedules, plant, trials=3, seed=1, **SLO)
    assert all("invalid" not in t.user_attrs for t in study.trials)
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"operators": list(OPS), "query": "topology:default", "rows": [
        {"rate_eps": 1500, "degrees": {op: 1 for op in OPS}, "executors": 1},
        {"rate_eps": 4000, "degrees": {op: 2 for op in OPS}, "executors": 2},
        {"rate_eps": 9000, "degrees": {op: 4 for op in OPS}, "executors": 4}]}))
    found = evaluate("multilevel", {"table": str(table)}, schedules, plant, **SLO)
    assert 0 < found.slo_attainment <= 1 and found.cost_slot_seconds > 0
    assert {"headroom", "scale_in_band", "stabilisation_s"} <= set(build_space("multilevel").dimensions)
    with pytest.raises(SpaceError, match="parameter 'table': table file .*absent.json does not exist"):
        evaluate("multilevel", {"table": str(tmp_path / "absent.json")}, schedules, plant, **SLO)
