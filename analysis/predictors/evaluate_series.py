"""Score a registered load predictor on a series the user brings (a rate.csv or a workload spec), next to the
naive, seasonal-naive and paper baselines, and as a controller runs it (through the runtime guard): the same table
as the leave-one-trace-out evaluation, for one series."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from analysis.predictors.dataset import DatasetError, Series, series_from_file
from analysis.predictors.evaluation import scores, spread_of, summarise
from analysis.predictors.guard_replay import guarded_predictions
from analysis.predictors.windows import as_deployed, baselines, make_windows
from controllers.forecast import Horizon, feature_names


def parse_model_ref(ref: str) -> str:
    """`name@alias`, `name/version` or a models:/ URI -> a models:/ URI."""
    if ref.startswith("models:/"):
        return ref
    if "@" in ref or "/" in ref:
        return f"models:/{ref}"
    raise DatasetError(f"--model {ref!r}: give name@alias (load-predictor@champion), name/version or a models:/ URI")


def load_model(ref: str, tracking_uri: str) -> tuple[Any, Horizon, float, bool]:
    """(model, horizon, conformal offset, whether the offset scales with the local spread) of a registered model."""
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = parse_model_ref(ref)
    mlflow.set_tracking_uri(tracking_uri)
    try:
        model = mlflow.pyfunc.load_model(uri)
    except MlflowException as exc:
        raise DatasetError(f"--model {ref}: cannot load {uri} from {tracking_uri}: {exc.message}") from None
    meta = model.metadata.metadata or {}
    try:
        horizon = Horizon.from_metadata(meta, f"--model {ref}")
    except ValueError as exc:
        raise DatasetError(str(exc)) from None
    schema = model.metadata.get_input_schema()
    if schema is None or schema.input_names() != feature_names(horizon.lags):
        raise DatasetError(f"--model {ref}: expects inputs {None if schema is None else schema.input_names()}, "
                           f"not this project's features {feature_names(horizon.lags)}")
    return model, horizon, float(meta.get("conformal_offset", 0.0)), bool(meta.get("conformal_local", False))


def workload_series(ref: str, horizon: Horizon) -> Series:
    from workloads.schedule import Schedule
    from workloads.spec import WorkloadError, load_workload

    try:
        spec = load_workload(ref)
    except WorkloadError as exc:
        raise DatasetError(f"--series {ref}: {exc}") from None
    schedule = Schedule(spec)
    starts, rates = schedule.rate_per_second()
    bucket_s = float(starts[1] - starts[0]) if len(starts) > 1 else horizon.step_s
    k = horizon.step_s / bucket_s
    if abs(k - round(k)) > 1e-6 or round(k) < 1:
        raise DatasetError(f"--series {ref}: its {bucket_s:g} s buckets do not divide the model's {horizon.step_s:g} s "
                           f"sub-intervals")
    k = int(round(k))
    n = len(rates) // k * k
    return Series(f"workload:{spec.name}", f"workload:{spec.name}", rates[:n].reshape(-1, k).mean(axis=1))


def evaluate_series(model_ref: str, series_ref: str, tracking_uri: str, compression: float = 1.0,
                    period_s: float | None = None) -> dict[str, Any]:
    model, horizon, offset, local = load_model(model_ref, tracking_uri)
    path = Path(series_ref)
    if path.suffix == ".csv" or path.name == "rate.csv":
        series = series_from_file(series_ref, horizon, compression)
    else:
        series = workload_series(series_ref, horizon)
    if period_s:
        series = replace(series, period_steps=int(round(period_s / (horizon.step_s * compression))))
    w = make_windows(series, horizon)
    if len(w) == 0:
        raise DatasetError(f"--series {series_ref}: {int(np.isfinite(series.rates).sum())} sub-intervals of "
                           f"{horizon.step_s:g} s, fewer than the {horizon.lags + horizon.steps} one window needs")
    active = w.take(~w.idle)
    if len(active) == 0:
        raise DatasetError(f"--series {series_ref}: every window is idle (fewer than {horizon.idle_events:g} events "
                           f"in {horizon.lags} sub-intervals); nothing to forecast")
    base = baselines(active, horizon, with_seasonal=bool(np.isfinite(active.seasonal).any()))
    naive, paper = base["last-value"], base["paper-ols-extrapolated"]
    per = {name: scores(p, active, naive, paper) for name, p in base.items()}
    margin = offset * (spread_of(w) if local else 1.0)
    full = as_deployed(np.asarray(model.predict(w.X), dtype=float) + margin, w)
    label = model_ref + (f" (+{offset:.3f}{' x local spread' if local else ''} conformal offset)" if offset else "")
    per[label] = scores(full[~w.idle], active, naive, paper)
    # as a controller runs it: the runtime guard sets the model aside while it does worse than naive
    guarded, naive_share = guarded_predictions(full, w, horizon)
    per[f"{label}+guard"] = {**scores(guarded[~w.idle], active, naive, paper), "naive_share": naive_share}
    return {"per_group": {series.name: per}, "summary": summarise({series.name: per}), "best": label,
            "windows": {series.name: {"all": len(w), "idle": int(w.idle.sum())}}}
