"""A placement controller in a tuning study: its parameters join the space after '+', the plant models the keyed
operator's key groups, and the candidates come out as suite variants a Spark run accepts."""
import optuna
import pytest
import yaml

from analysis.suite import split_placement
from analysis.tuning.__main__ import main as tuning_main
from analysis.tuning.screening import evaluate, ranked, screen
from analysis.tuning.space import SpaceError, build_space
from simulator.plant import chain
from workloads import Schedule, load_workload

# the keyed operator is most of the work, as in the placement suite's topology
PLANT = chain([("parse", 1e-5), ("enrich", 2e-5), ("aggregate", 4e-4), ("sink", 5e-6)], trigger_interval_s=2.0,
              slots=4, batch_overhead_s=0.3, max_degree=8)
SLO = dict(slo_latency_s=3.0, slo_target=0.95)


@pytest.fixture(scope="module")
def skewed():
    return [Schedule(load_workload("skewed-keys-strong").with_overrides(duration_s=60, seed=1))]


def test_the_space_of_a_composite_prefixes_the_placement_parameters_and_fixes_them_by_that_name():
    space = build_space("static+souravlas", ["souravlas.imbalance=1.2:2"], ["souravlas.share=headroom"])
    assert set(space.dimensions) == {"souravlas.trigger_utilisation", "souravlas.imbalance", "souravlas.round_s"}
    assert space.fixed == {"souravlas.share": "headroom"}
    with pytest.raises(SpaceError, match="'static\\+hash' declares no tunable parameter"):
        build_space("static+hash")
    with pytest.raises(SpaceError, match="unknown placement controller 'nope'"):
        build_space("static+nope")
    with pytest.raises(SpaceError, match="unknown parameter 'sousa.d'"):
        build_space("static+sousa", ["sousa.d=0.1:0.9"])
    with pytest.raises(SpaceError, match="sensitivity"):
        build_space("static+sousa", [], ["sousa.sensitivity=-1"])


def test_in_the_plant_hash_placement_of_skewed_keys_is_slower_than_an_even_split_and_placement_is_scored(skewed):
    degrees = {"degrees": {"aggregate": 4}}
    even = evaluate("static", degrees, skewed, PLANT, **SLO)
    hashed = evaluate("static+hash", degrees, skewed, PLANT, **SLO, keyed_operator="aggregate")
    moved = evaluate("static+souravlas", {**degrees, "souravlas.share": "headroom"}, skewed, PLANT, **SLO,
                     keyed_operator="aggregate")
    assert hashed.latency_p95_s > even.latency_p95_s  # the plant without key groups assumes an even split
    assert moved.label == 'static:degrees={"aggregate":4}+souravlas:share=headroom'
    assert split_placement(moved.label) == ('static:degrees={"aggregate":4}', "souravlas:share=headroom")
    assert moved.latency_p95_s != hashed.latency_p95_s
    assert evaluate("static+souravlas", {**degrees, "souravlas.share": "headroom"}, skewed, PLANT, **SLO,
                    keyed_operator="aggregate") == moved  # seeded: the same figures again


def test_a_study_searches_the_placement_parameters_and_prunes_what_the_placement_controller_refuses(skewed):
    space = build_space("static+souravlas", [], {"degrees": {"aggregate": 4}})
    study = screen(space, skewed, PLANT, trials=4, **SLO, keyed_operator="aggregate")
    best = ranked(study, space, SLO["slo_target"])
    assert best and all(b.label.startswith('static:degrees={"aggregate":4}+souravlas') for b in best)
    bad = build_space("static+souravlas", ["souravlas.sub_cluster_size=1|1"], {"degrees": {"aggregate": 4}})
    study = screen(bad, skewed, PLANT, trials=1, **SLO, keyed_operator="aggregate")
    assert study.trials[0].state == optuna.trial.TrialState.PRUNED
    assert "sub_cluster_size must be at least 2" in study.trials[0].user_attrs["invalid"]


def test_the_command_screens_a_placement_controller_and_names_variants_to_confirm(tmp_path, capsys):
    calibration = tmp_path / "oracle.yaml"
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": {
        "service_s": {"parse": 1e-5, "enrich": 2e-5, "aggregate": 4e-4, "sink": 5e-6},
        "selectivity": {op: 1.0 for op in ("parse", "enrich", "aggregate", "sink")}, "task_overhead_s": 0.01,
        "batch_overhead_s": 0.3, "slots": 4}}))
    code = tuning_main(["screen", "threshold+sousa", "--workload", "skewed-keys", "--duration", "40", "--seeds", "1",
                        "--calibration", str(calibration), "--trials", "3", "--top", "1", "--recheck-draws", "0",
                        "--slo-latency", "3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "threshold+sousa (defaults)" in out  # the label a suite variant takes: both controllers at defaults
    confirm = out.split("confirm on Spark")[1] if "confirm on Spark" in out else ""
    assert not confirm or all(split_placement(v)[1] for v in yaml.safe_load(confirm.split("\n")[1])["controllers"])
    assert tuning_main(["screen", "threshold+sousa-rand", "--workload", "skewed-keys", "--calibration",
                        str(calibration)]) == 2
    assert "unknown placement controller 'sousa-rand'" in capsys.readouterr().err


def test_the_tuning_pipeline_screens_a_composite_and_confirms_it_with_its_placement_on_spark(tmp_path):
    from mlflow.tracking import MlflowClient

    from analysis.tuning.pipeline import open_confirmation, validate
    from analysis.tuning.study import StudyRequest, run_study
    from tests.analysis.test_tuning import CALIBRATION

    calibration = tmp_path / "oracle.yaml"
    calibration.write_text(yaml.safe_dump({"controller": "oracle", "params": {
        k: v for k, v in CALIBRATION.items() if k != "calibration_run"}}))
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    MlflowClient(uri).create_experiment("e", artifact_location=(tmp_path / "a").as_uri())
    request = validate({"controllers": ["threshold+souravlas"], "workloads": ["skewed-keys"], "seeds": [1],
                        "calibration": str(calibration), "trials": 2, "k": 1, "spark_minutes": 30,
                        "duration_s": 30, "slo_latency_s": 5.0, "slo_target": 0.95, "sampler": "tpe"}, uri)
    found, _ = run_study(StudyRequest("threshold+souravlas", "skewed-keys", str(calibration), seeds=(1,), trials=2,
                                      k=1, duration_s=30), name="t", storage=None, tracking_uri=uri, experiment="e")
    assert found and all("+souravlas" in c.label for c in found)
    screened = {"candidates": [{**c.__dict__} for c in found], "studies": {"t": "r"}}
    suite = open_confirmation(request, screened, tracking_uri=uri, experiment="e", dag_id="d", run_id="x",
                              include_champions=False)
    assert suite["cases"] and all(c[c.index("--placement") + 1] == "souravlas" for c in suite["cases"])
