"""Load predictors: time-ordered windows without leakage, training, evaluation against the paper's predictor, the
MLflow registry (real SQLite store), the champion rule, and how a run loads, checks or falls back from a model."""
import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from analysis import load_predictors as lp
from controllers.forecast import FEATURE_LAGS, LearnedPredictor, PaperPredictor
from jobs.config import InputError, RunConfig
from jobs.predictors import PredictorLoadError, load_registered_predictor
from workloads.traces import available_traces


def periodic_series(seed: int, n: int = 1200) -> np.ndarray:
    """A daily-like cycle with bursts: the shape a straight line extrapolates badly and a regression learns."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return np.maximum(0.0, 1000 + 600 * np.sin(2 * np.pi * t / 40) + rng.normal(0, 60, n))


@pytest.fixture
def work(tmp_path):
    w = tmp_path / "work"
    w.mkdir()
    np.savez_compressed(w / "series.npz", **{f"synthetic:{s}": periodic_series(s) for s in (1, 2)})
    return w


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path / 'mlflow.db'}"


def test_held_back_windows_never_overlap_training_targets():
    rates = np.arange(1.0, 401.0)  # each value is its own index + 1
    train, test = lp.split(lp.windows(rates, horizon=5), 0.7, horizon=5)
    last_target = train.history[-1][-1] + 5  # the newest value any training target averages over
    assert test.history.min() > last_target
    assert len(train) > 0 and len(test) > 0


def test_training_evaluation_registry_and_champion_rule(work, uri, tmp_path):
    lp.train(work, horizon=5, train_fraction=0.7)
    scores = lp.evaluate(work)
    assert set(scores) == {"paper-ols", "last-value", "ridge", "gradient-boosting", "gradient-boosting-q80"}
    results = json.loads((work / "evaluation.json").read_text())
    for name in scores:  # every metric per series, and errors measured separately by sign
        assert set(results[name]) == {"synthetic:1", "synthetic:2", "mean"}
        assert {"mae", "mape", "under_rate", "under_mean", "over_mean", "score"} <= set(results[name]["mean"])
    assert min(scores["ridge"], scores["gradient-boosting"]) < scores["paper-ols"], scores
    # the conservative variant under-predicts less often than the mean-seeking one
    assert results["gradient-boosting-q80"]["mean"]["under_rate"] < results["gradient-boosting"]["mean"]["under_rate"]

    versions = lp.register_predictors(work, uri, experiment="predictors-test")
    assert sorted(versions) == ["gradient-boosting", "gradient-boosting-q80", "ridge"]
    client = mlflow.MlflowClient(uri)
    mv = client.get_model_version(lp.REGISTERED_MODEL, versions["ridge"])
    assert mv.tags["predictor"] == "ridge" and float(mv.tags["score"]) == pytest.approx(scores["ridge"], abs=1e-6)
    first = lp.choose_champion(work, uri)
    assert first["moved"] and first["incumbent"] is None
    champion = client.get_model_version_by_alias(lp.REGISTERED_MODEL, lp.CHAMPION_ALIAS)
    assert str(champion.version) == versions[first["best"]]
    # the same candidates again (new versions): not better than the champion on the same windows -> no move
    lp.register_predictors(work, uri, experiment="predictors-test")
    second = lp.choose_champion(work, uri)
    assert not second["moved"] and second["incumbent"] == str(champion.version) and "keep version" in second["verdict"]
    assert client.get_model_version_by_alias(lp.REGISTERED_MODEL, lp.CHAMPION_ALIAS).version == champion.version

    # a run loads the champion, checked against the controller's features, and says which version it used
    loaded = load_registered_predictor(uri, lp.REGISTERED_MODEL, lp.CHAMPION_ALIAS)
    assert isinstance(loaded.predictor, LearnedPredictor) and loaded.warning is None
    assert loaded.tags["predictor.version"] == str(champion.version)
    rates = list(periodic_series(3)[:20])
    fc = loaded.predictor.forecast(list(range(20)), rates, [1.0] * 20, 5.0, 5)
    assert fc.arrivals > 0 and fc.predictor == loaded.tags["predictor"]


def test_a_paper_predictor_that_wins_is_not_replaced(work, uri):
    series = {f"line:{k}": 500 + 3.0 * np.arange(600) for k in range(2)}  # a straight line: OLS is exact
    np.savez_compressed(work / "series.npz", **series)
    lp.train(work, horizon=5, train_fraction=0.7)
    lp.evaluate(work)
    lp.register_predictors(work, uri, experiment="predictors-test")
    decision = lp.choose_champion(work, uri)
    assert not decision["moved"] and "does not beat the paper's predictor" in decision["verdict"]


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


@pytest.mark.skipif(not available_traces(), reason="no real traces: ../shared/traces (or $ELASTIC_TRACES_DIR) "
                                                   "is absent in this checkout")
def test_collect_reads_real_traces_in_place(tmp_path):
    name = "azure_llm_2023_code" if "azure_llm_2023_code" in available_traces() else available_traces()[0]
    sizes = lp.collect(tmp_path, [name], step_s=2.0, max_points=500)
    series = lp.load_series(tmp_path)
    assert sizes == {f"trace:{name}": len(series[f"trace:{name}"])} and 0 < sizes[f"trace:{name}"] <= 500
    assert (series[f"trace:{name}"] >= 0).all()
    assert len(series[f"trace:{name}"]) > 2 * (FEATURE_LAGS + 5)
