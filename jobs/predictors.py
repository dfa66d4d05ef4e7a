"""The run's side of learned load predictors: load `models:/<name>@<alias>` for AUTOSCALE, check it, record it.

Loading happens while the run's configuration is validated, before Spark starts, so a model whose input schema
does not match the controller's features is a one-line error, not a failure minutes into the run. A registry that
has no such model, or no version under the alias, is not an error: the controller keeps the paper's predictor and
the run records the fallback (tags predictor / predictor.warning) so the results are never mistaken for the learned
predictor's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controllers.forecast import FEATURE_LAGS, Horizon, LearnedPredictor, PaperPredictor, feature_names


class PredictorLoadError(ValueError):
    """A registered predictor that exists but cannot be used by the controller."""


@dataclass
class LoadedPredictor:
    predictor: Any  # a controllers.forecast predictor
    tags: dict[str, str] = field(default_factory=dict)
    warning: str | None = None


def load_registered_predictor(tracking_uri: str, model_name: str, alias: str, eq2_reading: str = "extrapolated",
                              horizon: Horizon | None = None) -> LoadedPredictor:
    """The registered model behind `model_name@alias`, checked against the controller's features and, when given,
    the run's horizon (trigger and iteration): a model trained for another horizon is refused before Spark starts."""
    import mlflow
    import pandas as pd
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient(tracking_uri)
    fallback = PaperPredictor(eq2_reading)
    try:
        client.get_registered_model(model_name)
        version = client.get_model_version_by_alias(model_name, alias)
    except MlflowException as exc:
        what = (f"has no version with alias {alias!r}" if "alias" in str(exc).lower()
                else "is not a registered model")
        warning = (f"load predictor {model_name!r} {what} in the registry at {tracking_uri}; "
                   f"using the paper's predictor instead")
        return LoadedPredictor(fallback, {"predictor": fallback.name, "predictor.warning": warning}, warning)
    uri = f"models:/{model_name}@{alias}"
    mlflow.set_tracking_uri(tracking_uri)
    model = mlflow.pyfunc.load_model(uri)
    schema = model.metadata.get_input_schema()
    meta = model.metadata.metadata or {}
    expected = feature_names(int(meta.get("feature_lags", FEATURE_LAGS)))
    got = schema.input_names() if schema is not None else None
    if got != expected:
        raise PredictorLoadError(f"registered model {model_name} version {version.version} ({uri}) expects inputs "
                                 f"{got}, but the controller provides {expected}; retrain it with "
                                 f"`python -m analysis.predictors train`")
    where = f"registered model {model_name} version {version.version} ({uri})"
    try:
        trained_for = Horizon.from_metadata(meta, where)
    except ValueError as exc:
        raise PredictorLoadError(str(exc)) from None
    if horizon is not None and (why := trained_for.mismatch(horizon)):
        raise PredictorLoadError(f"{where}: {why}; set the controller's period_s / the run's --trigger-s to match, "
                                 f"or train a model for this horizon (`python -m analysis.predictors train "
                                 f"--step-s {horizon.step_s:g} --horizon {horizon.steps}`)")
    offset = float(meta.get("conformal_offset", 0.0))
    local = bool(meta.get("conformal_local", False))  # models registered before it: one offset everywhere

    def predict(rows: list[dict[str, float]]) -> list[float]:
        return [float(v) for v in pd.DataFrame(rows, columns=expected).pipe(model.predict)]

    try:
        probe = predict([dict.fromkeys(expected, 1.0)])
    except Exception as exc:  # noqa: BLE001 - any failure to predict makes the model unusable
        raise PredictorLoadError(f"registered model {model_name} version {version.version} cannot predict: {exc}"
                                 ) from None
    if len(probe) != 1:
        raise PredictorLoadError(f"registered model {model_name} version {version.version} returned {len(probe)} "
                                 f"values for one row")
    name = f"{model_name}@{alias}=v{version.version}"
    predictor = LearnedPredictor(predict, name, horizon=trained_for, offset=offset, offset_spread=local)
    return LoadedPredictor(predictor, {"predictor": name, "predictor.model": model_name,
                                       "predictor.version": str(version.version),
                                       "predictor.kind": version.tags.get("predictor", "?"),
                                       "predictor.horizon": f"{trained_for.steps}x{trained_for.step_s:g}s",
                                       "predictor.dataset": version.tags.get("dataset", "?")})
