"""Load predictors end to end on a real MLflow store (SQLite): leave-one-trace-out without leakage, the conformal
variant, registration with the dataset as input, the champion rule (never moved on an error), and how a run and a
user load, check or fall back from a registered model."""
import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from sklearn.linear_model import LinearRegression

from analysis.predictors import pipeline
from analysis.predictors.__main__ import main as predictors_cli
from analysis.predictors.dataset import load_dataset, parse_spec
from analysis.predictors.evaluation import group_weights, group_windows, leave_one_trace_out
from controllers.forecast import Horizon, LearnedPredictor, PaperPredictor
from jobs.config import InputError, RunConfig
from jobs.predictors import PredictorLoadError, load_registered_predictor
from tests.analysis.test_predictors_dataset import write_trace


def cycle(seed: int, n: int, level: float, period: int) -> np.ndarray:
    """A cycle with noise (1 s buckets): the shape a straight line extrapolates badly and a regression learns."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return rng.poisson(level * (1 + 0.7 * np.sin(2 * np.pi * t / period)))


@pytest.fixture
def spec_file(tmp_path):
    """Three 'traces' at different levels and periods: leave-one-out must generalise across them."""
    traces = [write_trace(tmp_path / f"trace{k}" / "rate.csv", cycle(k, 3000, level, period))
              for k, (level, period) in enumerate([(40.0, 60), (400.0, 80), (4000.0, 70)])]
    path = tmp_path / "dataset.yaml"
    path.write_text(json.dumps({"traces": traces}))
    return path


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def test_each_held_out_trace_is_scored_by_models_that_never_saw_it(spec_file):
    dataset = load_dataset(parse_spec(json.loads(spec_file.read_text()), str(spec_file)))
    groups = group_windows(dataset)
    seen = []

    class Recording(LinearRegression):
        def fit(self, X, y, sample_weight=None):
            seen.append(len(X))
            assert sample_weight is not None and sample_weight.mean() == pytest.approx(1.0)
            return super().fit(X, y, sample_weight=sample_weight)

    result = leave_one_trace_out(dataset, make=lambda seed: {"linear": Recording()}, progress=lambda _: None)
    active = {g: int((~w.idle).sum()) for g, w in groups.items()}
    assert seen == [sum(active.values()) - active[g] for g in groups]  # trained on every other group only
    assert set(result["per_group"]) == set(groups)
    assert {"last-value", "paper-ols-extrapolated", "paper-ols-literal", "linear", "linear+conformal80",
            "linear+conformal80-local"} <= set(
        result["summary"])


def test_training_weights_follow_the_level_within_each_trace_for_events():
    """With 'events' the fitted loss is each trace's MAE in events/s: a window at twice its trace's mean level
    weighs twice, whatever the trace's absolute level; 'windows' and 'traces' keep their meanings."""
    from analysis.predictors.windows import Windows

    def part(scales):
        n = len(scales)
        return Windows(pd.DataFrame({"x": np.zeros(n)}), np.zeros(n), np.asarray(scales, float), np.zeros((n, 5)),
                       np.full(n, np.nan), np.zeros(n, bool))

    quiet, busy = part([1.0, 3.0]), part([100.0, 100.0, 400.0, 200.0])
    w = group_weights([quiet, busy], "events")
    assert w.mean() == pytest.approx(1.0)
    assert w[1] / w[0] == pytest.approx(3.0) and w[4] / w[2] == pytest.approx(4.0)
    assert w[0] / w[2] == pytest.approx((1.0 / 2.0) / (100.0 / 200.0))  # relative to its own trace's mean only
    assert list(group_weights([quiet, busy], "windows")) == [1.0] * 6
    t = group_weights([quiet, busy], "traces")
    assert t[0] * 2 == pytest.approx(t[2] * 4)


def test_training_registers_the_best_with_its_conformal_variant_and_moves_the_aliases(spec_file, uri, tmp_path,
                                                                                      capsys):
    work = tmp_path / "work"
    spec = parse_spec(json.loads(spec_file.read_text()), str(spec_file))
    collected = pipeline.collect(work, spec)
    pipeline.evaluate(work, candidates="quick", progress=lambda _: None)
    result = json.loads((work / "evaluation.json").read_text())
    best, conformal = result["summary"][result["best"]], result["summary"][result["conformal"]]
    assert best["mae_vs_naive"] < 1 and best["mae_vs_paper"] < 1, best  # a learnable cycle: the model wins
    # calibrated on the other traces' residuals: under-predicts about 1 - coverage of the unseen trace's windows
    assert conformal["under_rate"] < best["under_rate"] and conformal["under_rate"] < 0.35, conformal
    # the best as a controller runs it: replayed through the runtime guard on each held-out trace
    guarded = result["summary"][f"{result['best']}+guard"]
    assert guarded["groups"] == best["groups"] and guarded["mae_vs_naive"] < 1
    assert all(0 <= per[f"{result['best']}+guard"]["naive_share"] <= 1 for per in result["per_group"].values())

    versions = pipeline.register_predictors(work, uri, experiment="predictors-test")
    assert set(versions) == {result["best"], result["conformal"]}
    client = mlflow.MlflowClient(uri)
    mv = client.get_model_version(pipeline.REGISTERED_MODEL, versions[result["best"]])
    assert mv.tags["dataset"] == collected["digest"]
    assert float(mv.tags["loto_mae_vs_naive"]) == pytest.approx(best["mae_vs_naive"], abs=1e-6)
    run = client.get_run(mv.tags["training_run"])
    assert [d.dataset.digest for d in run.inputs.dataset_inputs] == [collected["digest"][:16]]

    first = pipeline.choose_champion(work, uri)
    assert first["moved"] and first["incumbent"] is None
    assert str(client.get_model_version_by_alias(pipeline.REGISTERED_MODEL, "champion").version) == \
        versions[result["best"]]
    assert str(client.get_model_version_by_alias(pipeline.REGISTERED_MODEL, "conservative").version) == \
        versions[result["conformal"]]
    # the same dataset and candidates again: not better than the champion on the same dataset -> no move
    pipeline.register_predictors(work, uri, experiment="predictors-test")
    second = pipeline.choose_champion(work, uri)
    assert not second["moved"] and "keep version" in second["verdict"] and "on this dataset" in second["verdict"]

    # a run loads the champion, checked against its features and horizon; the conservative one carries its offset
    loaded = load_registered_predictor(uri, pipeline.REGISTERED_MODEL, "champion", horizon=Horizon(2.0, 5))
    assert isinstance(loaded.predictor, LearnedPredictor) and loaded.warning is None
    assert loaded.tags["predictor.dataset"] == collected["digest"] and loaded.tags["predictor.horizon"] == "5x2s"
    conservative = load_registered_predictor(uri, pipeline.REGISTERED_MODEL, "conservative")
    assert conservative.predictor.offset == pytest.approx(result["offset"]) and result["offset"] > 0
    assert conservative.predictor.offset_spread == result["conformal_local"]
    history = list(cycle(9, 40, 400.0, 80) * 2.0)
    fc = loaded.predictor.forecast(list(range(40)), history, [2.0] * 40, 10.0, 5)
    fc_c = conservative.predictor.forecast(list(range(40)), history, [2.0] * 40, 10.0, 5)
    assert 0 < fc.arrivals < fc_c.arrivals
    with pytest.raises(PredictorLoadError, match=r"trained to predict 5 sub-intervals of 2 s ahead, the run needs "
                                                 r"10 of 1 s"):
        load_registered_predictor(uri, pipeline.REGISTERED_MODEL, "champion", horizon=Horizon(1.0, 10))

    # a user scores the champion on a series of their own: the same table, one held-out series
    own = write_trace(tmp_path / "mine" / "rate.csv", cycle(11, 1200, 900.0, 75))
    capsys.readouterr()
    assert predictors_cli(["evaluate", "--model", "load-predictor@champion", "--series", own,
                           "--tracking-uri", uri]) == 0
    printed = capsys.readouterr().out
    assert "| load-predictor@champion |" in printed and "| load-predictor@champion+guard |" in printed
    assert "| trace:mine | last-value |" in printed  # the shared layout, <trace>/rate.csv: named by its folder
    # a file of any other name is named by itself, not by the folder it lies in, and not called a held-out trace
    checkout = write_trace(tmp_path / "mine" / "checkout_rate.csv", cycle(11, 1200, 900.0, 75))
    assert predictors_cli(["evaluate", "--model", "load-predictor@champion", "--series", checkout,
                           "--tracking-uri", uri]) == 0
    printed = capsys.readouterr().out
    assert "| trace:checkout_rate | last-value |" in printed and "trace:mine" not in printed
    assert printed.startswith(f"On {checkout} ") and "held-out" not in printed


def test_the_champion_never_moves_on_an_error(spec_file, uri, tmp_path, monkeypatch):
    work = tmp_path / "work"
    pipeline.collect(work, parse_spec(json.loads(spec_file.read_text()), str(spec_file)))
    pipeline.evaluate(work, candidates="quick", progress=lambda _: None)
    pipeline.register_predictors(work, uri, experiment="predictors-test")
    assert pipeline.choose_champion(work, uri)["moved"]
    client = mlflow.MlflowClient(uri)
    before = client.get_model_version_by_alias(pipeline.REGISTERED_MODEL, "champion").version
    (work / "dataset.json").write_text(json.dumps({**json.loads((work / "dataset.json").read_text()),
                                                   "digest": "another-dataset"}))  # would allow a move
    pipeline.register_predictors(work, uri, experiment="predictors-test")

    def unreachable(self, name, alias):
        raise MlflowException("registry unreachable: connection refused", error_code="INTERNAL_ERROR")

    monkeypatch.setattr(mlflow.MlflowClient, "get_model_version_by_alias", unreachable)
    with pytest.raises(MlflowException, match="connection refused"):
        pipeline.choose_champion(work, uri)
    monkeypatch.undo()
    assert client.get_model_version_by_alias(pipeline.REGISTERED_MODEL, "champion").version == before
    assert not (work / "champion.json").exists() or json.loads((work / "champion.json").read_text())["moved"]


def test_a_model_that_does_not_beat_the_baselines_is_not_made_champion(tmp_path, uri):
    # random walks: the last value is the best forecast there is, so no model beats it by the required margin
    walks = [np.maximum(50, 2000 + np.cumsum(np.random.default_rng(k).normal(0, 80, 3000))) for k in range(3)]
    lines = [write_trace(tmp_path / f"walk{k}" / "rate.csv", np.round(w)) for k, w in enumerate(walks)]
    work = tmp_path / "work"
    pipeline.collect(work, parse_spec({"traces": lines}, "walks.yaml"))
    pipeline.evaluate(work, candidates="quick", progress=lambda _: None)
    pipeline.register_predictors(work, uri, experiment="predictors-test")
    decision = pipeline.choose_champion(work, uri)
    assert not decision["moved"] and "does not beat both baselines on held-out traces" in decision["verdict"]


def test_bad_series_for_evaluate_are_one_line_errors(tmp_path, uri, capsys):
    bad = tmp_path / "bad" / "rate.csv"
    write_trace(bad, [5, 6, 7])
    bad.write_text(bad.read_text() + "1,8\n")
    assert predictors_cli(["evaluate", "--model", "nothing", "--series", str(bad), "--tracking-uri", uri]) == 2
    assert "give name@alias" in capsys.readouterr().err
    assert predictors_cli(["evaluate", "--model", "load-predictor@champion", "--series", str(bad),
                           "--tracking-uri", uri]) == 2
    assert "cannot load models:/load-predictor@champion" in capsys.readouterr().err


def test_without_a_registered_model_the_run_falls_back_and_records_why(uri):
    loaded = load_registered_predictor(uri, "no-such-model", "champion")
    assert isinstance(loaded.predictor, PaperPredictor)
    assert "'no-such-model' is not a registered model" in loaded.warning
    assert loaded.tags == {"predictor": "paper-ols-extrapolated", "predictor.warning": loaded.warning}
    mlflow.MlflowClient(uri).create_registered_model("empty-model")
    loaded = load_registered_predictor(uri, "empty-model", "champion")
    assert "has no version with alias 'champion'" in loaded.warning


def register_model(uri, name, model, X, artifacts):
    mlflow.set_tracking_uri(uri)
    exp = mlflow.MlflowClient(uri).create_experiment("wrong", artifact_location=artifacts.as_uri())
    with mlflow.start_run(experiment_id=exp):  # not the Default experiment: its artifacts would land in ./mlruns
        info = mlflow.sklearn.log_model(model, name="model", input_example=X.head(2), registered_model_name=name,
                                        signature=mlflow.models.infer_signature(X, model.predict(X)))
    mlflow.MlflowClient(uri).set_registered_model_alias(name, "champion", info.registered_model_version)


def test_a_model_with_another_input_schema_is_an_error_before_the_run(uri, tmp_path):
    X = pd.DataFrame({"hour": np.arange(20.0), "load": np.arange(20.0) * 2})
    register_model(uri, "wrong-schema", LinearRegression().fit(X, X["load"]), X, tmp_path / "artifacts")
    with pytest.raises(PredictorLoadError, match=r"expects inputs \['hour', 'load'\], but the controller provides"):
        load_registered_predictor(uri, "wrong-schema", "champion")
    config = RunConfig("autoscale", {"predictor": "registry", "predictor_model": "wrong-schema"}, "step",
                       tracking_uri=uri, master=None)
    with pytest.raises(InputError, match=r"controller 'autoscale': registered model wrong-schema version 1"):
        config.validate()
