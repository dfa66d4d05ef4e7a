"""The training pipeline's steps over one work directory, so the training DAG runs each as a task and the CLI runs
them in a row:

    collect (dataset.npz, dataset.json) -> evaluate (evaluation.json: leave-one-trace-out)
    -> register (the best model fitted on everything, and its conformal variant) -> choose_champion (champion.json)

`champion` and `conservative` are registry aliases of `load-predictor`: AUTOSCALE runs use them with
predictor=registry (predictor_alias=conservative for the calibrated variant). They move only when the new model
beats the paper's predictor and the naive one on held-out traces, and the current champion on the same dataset (or
the current champion was evaluated on another dataset, which the decision says). They never move on an error.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from analysis.predictors.dataset import Dataset, DatasetSpec, Series, load_dataset, parse_spec
from analysis.predictors.report import evaluation_markdown
from analysis.predictors.evaluation import (CANDIDATE_SETS, CONSERVATIVE_SETS, DEFAULT_COVERAGE, fit_final, group_windows,
                                           leave_one_trace_out)
from controllers.forecast import feature_names

REGISTERED_MODEL = "load-predictor"
CHAMPION_ALIAS = "champion"
CONSERVATIVE_ALIAS = "conservative"
EXPERIMENT = "load-predictors"
MIN_IMPROVEMENT = 0.01  # relative margin a challenger needs over the paper, the naive predictor and the champion
# skops (MLflow's default sklearn format) refuses types it cannot bound-check; these are our own fitted trees
TRUSTED_TYPES = ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
                 "sklearn._loss.link.IdentityLink", "sklearn._loss.loss.AbsoluteError",
                 "sklearn._loss.loss.HalfSquaredError"]


class PredictorError(ValueError):
    """A training request or a registry state that cannot be used; the message names the culprit."""


# ---------------------------------------------------------------- collect

def collect(work: Path, spec: DatasetSpec, tracking_uri: str | None = None) -> dict[str, Any]:
    dataset = load_dataset(spec, tracking_uri)
    work.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(work / "dataset.npz", **{s.name: s.rates for s in dataset.series.values()})
    meta = {"spec": spec.canonical(), "source": spec.source, "digest": dataset.digest,
            "series": {s.name: {"group": s.group, "period_steps": s.period_steps, "masked": s.masked}
                       for s in dataset.series.values()},
            "described": dataset.describe()}
    (work / "dataset.json").write_text(json.dumps(meta, indent=1))
    return {"digest": dataset.digest, "series": dataset.describe()}


def read_dataset(work: Path) -> Dataset:
    meta = json.loads((work / "dataset.json").read_text())
    spec = parse_spec(meta["spec"], meta["source"])
    with np.load(work / "dataset.npz") as data:
        series = {name: Series(name, m["group"], data[name], m["period_steps"], m["masked"])
                  for name, m in meta["series"].items()}
    return Dataset(spec, series, meta["digest"])


# ---------------------------------------------------------------- evaluate

def evaluate(work: Path, seed: int = 0, coverage: float = DEFAULT_COVERAGE, candidates: str = "default",
             progress: Callable[[str], None] = print) -> dict[str, Any]:
    if candidates not in CANDIDATE_SETS:
        raise PredictorError(f"candidates {candidates!r}: known sets are {', '.join(CANDIDATE_SETS)}")
    try:
        result = leave_one_trace_out(read_dataset(work), seed, coverage, make=CANDIDATE_SETS[candidates],
                                     progress=progress, conservative=CONSERVATIVE_SETS[candidates])
    except ValueError as exc:
        raise PredictorError(str(exc)) from None
    result["seed"], result["candidates"] = seed, candidates
    (work / "evaluation.json").write_text(json.dumps(result, indent=1))
    return {name: s["mae_vs_naive"] for name, s in result["summary"].items()}


# ---------------------------------------------------------------- register

def register_predictors(work: Path, tracking_uri: str, experiment: str = EXPERIMENT,
                        model_name: str = REGISTERED_MODEL) -> dict[str, str]:
    """Fit the best candidate on every window, log it and its conformal variant as MLflow models under one run with
    the dataset as its input, register both; tags carry the leave-one-trace-out scores and the dataset digest."""
    import mlflow
    import pandas as pd
    import sklearn
    from mlflow.models import infer_signature

    from jobs.recording.recorder import ensure_experiment

    dataset = read_dataset(work)
    result = json.loads((work / "evaluation.json").read_text())
    horizon = dataset.spec.horizon
    windows = group_windows(dataset)
    models = {**CANDIDATE_SETS[result["candidates"]](result["seed"]),
              **CONSERVATIVE_SETS[result["candidates"]](result["seed"], result["coverage"])}
    fitted = {name: fit_final(windows, name, result["seed"], lambda seed: models, dataset.spec.weighting)
              for name in {result["best"], result["conformal_base"]}}
    example = next(iter(windows.values())).X.head(5)
    mlflow.set_tracking_uri(tracking_uri)
    client = mlflow.MlflowClient(tracking_uri)
    exp_id = ensure_experiment(client, experiment, tracking_uri)
    table = pd.DataFrame([{"series": s.name, "group": s.group, "sub_intervals": int(np.isfinite(s.rates).sum()),
                           **{k.replace(" ", "_"): v for k, v in s.masked.items()}}
                          for s in dataset.series.values()])
    versions = {}
    with mlflow.start_run(experiment_id=exp_id, run_name="train-load-predictors",
                          tags={"kind": "predictor-training", "dataset": dataset.digest}) as run:
        mlflow.log_input(mlflow.data.from_pandas(table, source=dataset.spec.source, name="load-predictor-dataset",
                                                 digest=dataset.digest[:16]), context="training")
        mlflow.log_params({**horizon.metadata(), "dataset_digest": dataset.digest[:16], "best": result["best"],
                           "coverage": result["coverage"], "seed": result["seed"],
                           "groups": len(result["per_group"])})
        mlflow.log_dict(dataset.spec.canonical(), "dataset_spec.json")
        mlflow.log_dict(result, "evaluation.json")
        mlflow.log_text(evaluation_markdown(result), "evaluation.md")
        for name, s in result["summary"].items():
            key = name.replace("+", "_")
            mlflow.log_metrics({f"{key}.mae_vs_naive": s["mae_vs_naive"], f"{key}.under_rate": s["under_rate"]})
        conservative = (result["conformal"], result["conformal_base"], result["offset"],
                        result.get("conformal_local", False))
        for variant, base, offset, local in ((result["best"], result["best"], 0.0, False), conservative):
            s = result["summary"][variant]
            model = fitted[base]
            info = mlflow.sklearn.log_model(
                model, name=variant.replace("+", "-"), signature=infer_signature(example, model.predict(example)),
                input_example=example, registered_model_name=model_name, skops_trusted_types=TRUSTED_TYPES,
                pip_requirements=[f"scikit-learn=={sklearn.__version__}", f"mlflow=={mlflow.__version__}"],
                metadata={**horizon.metadata(), "features": feature_names(horizon.lags), "conformal_offset": offset,
                          "conformal_local": local, "dataset": dataset.digest})
            version = str(info.registered_model_version)
            for key, value in {"predictor": variant, "loto_mae_vs_naive": f"{s['mae_vs_naive']:.6f}",
                               "loto_mae_vs_paper": f"{s['mae_vs_paper']:.6f}",
                               "loto_under_rate": f"{s['under_rate']:.6f}", "dataset": dataset.digest,
                               "horizon": f"{horizon.steps}x{horizon.step_s:g}s", "training_run": run.info.run_id
                               }.items():
                client.set_model_version_tag(model_name, version, key, value)
            versions[variant] = version
        mlflow.set_tag("registered_versions", json.dumps(versions))
    (work / "registered.json").write_text(json.dumps({"run_id": run.info.run_id, "versions": versions,
                                                      "model_name": model_name}))
    return versions


# ---------------------------------------------------------------- champion

def current_champion(client: Any, model_name: str, alias: str = CHAMPION_ALIAS) -> Any | None:
    """The version under the alias; None only when there is none. Any other failure propagates: a champion must
    never move because its state could not be read."""
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(model_name)
    except MlflowException as exc:
        if exc.error_code == "RESOURCE_DOES_NOT_EXIST":
            return None
        raise
    try:
        return client.get_model_version_by_alias(model_name, alias)
    except MlflowException as exc:
        if exc.error_code in ("RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE") and "alias" in str(exc).lower():
            return None
        raise


def choose_champion(work: Path, tracking_uri: str, min_improvement: float = MIN_IMPROVEMENT) -> dict[str, Any]:
    import mlflow

    registered = json.loads((work / "registered.json").read_text())
    result = json.loads((work / "evaluation.json").read_text())
    digest = json.loads((work / "dataset.json").read_text())["digest"]
    model_name, versions = registered["model_name"], registered["versions"]
    best, conformal = result["best"], result["conformal"]
    s = result["summary"]
    score = s[best]["mae_vs_naive"]
    paper = s[best]["mae_vs_paper"]  # the challenger's MAE over the paper's, mean over held-out groups
    client = mlflow.MlflowClient(tracking_uri)
    incumbent = current_champion(client, model_name)
    inc_version = None if incumbent is None else str(incumbent.version)
    inc_score = None
    if incumbent is not None and incumbent.tags.get("dataset") == digest and "loto_mae_vs_naive" in incumbent.tags:
        inc_score = float(incumbent.tags["loto_mae_vs_naive"])
    margin = 1 - min_improvement
    if not (score < margin and paper < margin):
        moved = False
        verdict = (f"keep {'version ' + inc_version if inc_version else 'no champion'}: {best} (v{versions[best]}) "
                   f"does not beat both baselines on held-out traces (MAE {score:.3f}x naive, {paper:.3f}x the "
                   f"paper's OLS; needs < {margin:.2f}x each)")
    elif inc_score is not None and score >= inc_score * margin:
        moved = False
        verdict = (f"keep version {inc_version} ({inc_score:.3f}x naive on this dataset): {best} "
                   f"(v{versions[best]}, {score:.3f}x) is not {min_improvement:.0%} better")
    else:
        was = ("no champion" if inc_version is None else
               f"version {inc_version} ({inc_score:.3f}x naive)" if inc_score is not None else
               f"version {inc_version}, evaluated on another dataset (not comparable)")
        verdict = (f"champion -> version {versions[best]} ({best}: MAE {score:.3f}x naive, {paper:.3f}x the paper's "
                   f"OLS on held-out traces); conservative -> version {versions[conformal]} ({conformal}); was {was}")
        client.set_registered_model_alias(model_name, CHAMPION_ALIAS, versions[best])
        client.set_registered_model_alias(model_name, CONSERVATIVE_ALIAS, versions[conformal])
        moved = True
    decision = {"moved": moved, "verdict": verdict, "best": best, "best_version": versions[best],
                "score": score, "paper": paper, "incumbent": inc_version, "incumbent_score": inc_score}
    client.set_tag(registered["run_id"], "champion_decision", verdict)
    client.log_dict(registered["run_id"], decision, "champion.json")
    (work / "champion.json").write_text(json.dumps(decision, indent=1))
    return decision
