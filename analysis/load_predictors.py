"""Load predictors for AUTOSCALE: collect arrival series, fit regression models, evaluate them against the paper's
predictor and a naive one on held-back windows, register them, and move the registry's `champion` alias.

    python -m analysis.load_predictors                      # all five steps, traces + recorded runs
    python -m analysis.load_predictors --report docs/predictors.md --traces azure_llm_2023_code nasa_http_1995

The five steps are separate functions over one work directory so the training DAG runs each as a task:
collect (series.npz) -> train (candidates/*.pkl) -> evaluate (evaluation.json) -> register_predictors
(registered.json) -> choose_champion (champion.json). Every series is split by time: the first `train_fraction` of
its windows train, the rest (after a gap of one window, so no target overlaps a training input) are held back for
evaluation and for the champion decision. Nothing from the future of a held-back window is ever seen in training.

The task (the project's choices, recorded with every model): from the last FEATURE_LAGS sub-intervals' rates,
predict the mean rate of the next `horizon` sub-intervals (one AUTOSCALE iteration: Δ = horizon × step), as a
multiple of the window's mean rate (scale-free, see controllers.forecast). Errors are reported in events per second
of each series; the champion score is the mean over series of the relative absolute error with under-predictions
weighted `under_weight` (2) times: under-prediction congests an operator, over-prediction only costs slots.
"""
from __future__ import annotations

import argparse
import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from controllers.forecast import FEATURE_LAGS, PaperPredictor, feature_names, features
from params.run import RUN_SETTINGS

REGISTERED_MODEL = "load-predictor"
# skops (MLflow's default sklearn format) refuses types it cannot bound-check; these are our own fitted trees
TRUSTED_TYPES = ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]
CHAMPION_ALIAS = "champion"
EXPERIMENT = "load-predictors"
# a sub-interval is one micro-batch: the runs' trigger interval
DEFAULTS = {"step_s": RUN_SETTINGS["trigger_s"].default, "horizon": 5, "train_fraction": 0.7, "max_points": 20000,
            "under_weight": 2.0, "min_improvement": 0.01}


class PredictorError(ValueError):
    """A training request or a registered model that cannot be used; the message names the culprit."""


# ---------------------------------------------------------------- collect

def trace_series(names: Iterable[str] | None, step_s: float, max_points: int) -> dict[str, np.ndarray]:
    """Rates (events/s) per sub-interval of each real trace, at `step_s` where the trace is finer, else its own
    bucket; the most recent `max_points` sub-intervals."""
    from workloads.traces import available_traces, load_trace

    series = {}
    for name in (list(names) if names is not None else available_traces()):
        trace = load_trace(name)
        k = max(1, int(round(step_s / trace.bucket_s)))
        counts = trace.counts[: len(trace.counts) // k * k].reshape(-1, k).sum(axis=1)
        series[f"trace:{name}"] = (counts / (k * trace.bucket_s))[-max_points:].astype(float)
    return series


def recorded_series(tracking_uri: str, experiment: str, max_runs: int = 50, min_points: int = 30
                    ) -> dict[str, np.ndarray]:
    """Offered rates per micro-batch (batch.arrivals / batch.interval_s) of the latest finished experiment runs."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return {}
    series = {}
    for run in client.search_runs([found.experiment_id], "attributes.status = 'FINISHED' and tags.workload != ''",
                                  order_by=["attributes.start_time DESC"], max_results=max_runs):
        arrivals = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "batch.arrivals")}
        intervals = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "batch.interval_s")}
        steps = sorted(s for s in arrivals if intervals.get(s, 0) > 0)
        if len(steps) >= min_points:
            series[f"run:{run.info.run_id[:8]}:{run.data.tags.get('workload', '?')}"] = np.array(
                [arrivals[s] / intervals[s] for s in steps])
    return series


def collect(work: Path, traces: Iterable[str] | None = None, tracking_uri: str | None = None,
            experiment: str | None = None, step_s: float = DEFAULTS["step_s"],
            max_points: int = DEFAULTS["max_points"]) -> dict[str, int]:
    series = trace_series(traces, step_s, max_points)
    if tracking_uri and experiment:
        series.update(recorded_series(tracking_uri, experiment))
    if not series:
        raise PredictorError("no arrival series: no trace found (looked in the traces directory) and no recorded "
                             "runs; pass --traces or run some experiments first")
    work.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(work / "series.npz", **series)
    return {name: len(s) for name, s in series.items()}


def load_series(work: Path) -> dict[str, np.ndarray]:
    with np.load(work / "series.npz") as data:
        return {name: data[name] for name in data.files}


# ---------------------------------------------------------------- windows

@dataclass
class Windows:
    """Time-ordered supervised windows of one series: inputs X (scale-free), target ratio y, and the scale."""
    X: pd.DataFrame
    y: np.ndarray
    scale: np.ndarray
    history: np.ndarray  # the raw rates of each window (for baselines), shape (n, FEATURE_LAGS)

    def __len__(self) -> int:
        return len(self.y)


def windows(rates: np.ndarray, horizon: int) -> Windows:
    rows, ys, scales, hist = [], [], [], []
    for t in range(FEATURE_LAGS, len(rates) - horizon + 1):
        row, scale = features(rates[t - FEATURE_LAGS:t])
        rows.append(row)
        ys.append(rates[t:t + horizon].mean() / scale)
        scales.append(scale)
        hist.append(rates[t - FEATURE_LAGS:t])
    X = pd.DataFrame(rows, columns=feature_names())
    return Windows(X, np.array(ys), np.array(scales), np.array(hist).reshape(-1, FEATURE_LAGS))


def split(w: Windows, train_fraction: float, horizon: int) -> tuple[Windows, Windows]:
    """Train on the first windows, hold back the last ones; skip a gap so no training target overlaps a test input."""
    cut = int(len(w) * train_fraction)
    gap = FEATURE_LAGS + horizon
    take = lambda sl: Windows(w.X.iloc[sl].reset_index(drop=True), w.y[sl], w.scale[sl], w.history[sl])  # noqa: E731
    return take(slice(0, cut)), take(slice(cut + gap, len(w)))


def datasets(series: dict[str, np.ndarray], horizon: int, train_fraction: float
             ) -> dict[str, tuple[Windows, Windows | None]]:
    """Train and held-back windows per series; a series too short to hold any back (a recorded run of a minute or
    two) only trains (its held-back part is None)."""
    out: dict[str, tuple[Windows, Windows | None]] = {}
    for name, rates in series.items():
        w = windows(rates, horizon)
        train, test = split(w, train_fraction, horizon)
        if len(test) >= 5:
            out[name] = (train, test)
        elif len(w) >= 10:  # nothing to hold back: every window trains
            out[name] = (w, None)
    if not any(test is not None for _, test in out.values()):
        raise PredictorError(f"no series long enough: each needs more than {2 * (FEATURE_LAGS + horizon) + 15} "
                             f"sub-intervals")
    return out


# ---------------------------------------------------------------- models

def candidates(seed: int = 0) -> dict[str, Any]:
    """The fitted candidates: regularised linear, non-linear, and a conservative (80th percentile) variant."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return {
        "ridge": make_pipeline(StandardScaler(), Ridge(alpha=1.0)),
        "gradient-boosting": HistGradientBoostingRegressor(max_iter=200, learning_rate=0.05, random_state=seed),
        "gradient-boosting-q80": HistGradientBoostingRegressor(loss="quantile", quantile=0.8, max_iter=200,
                                                               learning_rate=0.05, random_state=seed),
    }


def paper_ratio(w: Windows, horizon: int, step_s: float) -> np.ndarray:
    """AUTOSCALE's own predictor on each window: OLS on the last `horizon` sub-intervals, extrapolated one period."""
    paper = PaperPredictor("extrapolated")
    times = [step_s * (k + 1) for k in range(horizon)]
    out = []
    for rates, scale in zip(w.history, w.scale):
        counts = list(rates[-horizon:] * step_s)
        fc = paper.forecast(times, counts, [step_s] * horizon, horizon * step_s, horizon)
        out.append(fc.arrivals / (horizon * step_s) / scale)
    return np.array(out)


def last_value_ratio(w: Windows) -> np.ndarray:
    return w.history[:, -1] / w.scale


def train(work: Path, horizon: int = DEFAULTS["horizon"], train_fraction: float = DEFAULTS["train_fraction"],
          seed: int = 0) -> dict[str, int]:
    data = datasets(load_series(work), horizon, train_fraction)
    X = pd.concat([tr.X for tr, _ in data.values()], ignore_index=True)
    y = np.concatenate([tr.y for tr, _ in data.values()])
    (work / "candidates").mkdir(exist_ok=True)
    for name, model in candidates(seed).items():
        model.fit(X, y)
        (work / "candidates" / f"{name}.pkl").write_bytes(pickle.dumps(model))
    (work / "training.json").write_text(json.dumps({"horizon": horizon, "train_fraction": train_fraction,
                                                    "seed": seed, "rows": len(y), "series": sorted(data),
                                                    "training_only": sorted(n for n, (_, t) in data.items()
                                                                            if t is None)}))
    return {"rows": len(y), "series": len(data)}


def fitted(work: Path) -> dict[str, Any]:
    return {p.stem: pickle.loads(p.read_bytes()) for p in sorted((work / "candidates").glob("*.pkl"))}


# ---------------------------------------------------------------- evaluate

def errors(predicted_ratio: np.ndarray, w: Windows, under_weight: float) -> dict[str, float]:
    pred, actual = predicted_ratio * w.scale, w.y * w.scale
    err = pred - actual
    nonzero = actual > 0
    weighted = np.where(err < 0, under_weight * -err, err)
    mean_actual = max(actual.mean(), 1e-9)
    return {"mae": float(np.abs(err).mean()),
            "mape": float(np.abs(err[nonzero] / actual[nonzero]).mean()) if nonzero.any() else float("nan"),
            "under_rate": float((err < 0).mean()),
            "under_mean": float((-err[err < 0]).mean()) if (err < 0).any() else 0.0,
            "over_mean": float(err[err > 0].mean()) if (err > 0).any() else 0.0,
            "score": float(weighted.mean() / mean_actual)}


def evaluate_models(models: dict[str, Any], work: Path, under_weight: float, step_s: float
                    ) -> dict[str, dict[str, dict[str, float]]]:
    """{predictor: {series: errors}} on the held-back windows, baselines included, plus a 'mean' row per predictor."""
    meta = json.loads((work / "training.json").read_text())
    horizon = meta["horizon"]
    data = datasets(load_series(work), horizon, meta["train_fraction"])
    results: dict[str, dict[str, dict[str, float]]] = {}
    predictors = {"paper-ols": lambda w: paper_ratio(w, horizon, step_s), "last-value": last_value_ratio}
    predictors.update({name: (lambda w, m=m: np.asarray(m.predict(w.X), dtype=float)) for name, m in models.items()})
    for name, predict in predictors.items():
        per = {series: errors(predict(test), test, under_weight) for series, (_, test) in data.items()
               if test is not None}
        per["mean"] = {k: float(np.nanmean([e[k] for e in per.values()])) for k in next(iter(per.values()))}
        results[name] = per
    return results


def evaluate(work: Path, under_weight: float = DEFAULTS["under_weight"], step_s: float = DEFAULTS["step_s"]
             ) -> dict[str, float]:
    results = evaluate_models(fitted(work), work, under_weight, step_s)
    (work / "evaluation.json").write_text(json.dumps(results, indent=1))
    return {name: per["mean"]["score"] for name, per in results.items()}


# ---------------------------------------------------------------- register and champion

def register_predictors(work: Path, tracking_uri: str, experiment: str = EXPERIMENT,
                        model_name: str = REGISTERED_MODEL) -> dict[str, str]:
    """Log every candidate as an MLflow model (signature, input example) under one parent run; register each."""
    import mlflow
    import sklearn
    from mlflow.models import infer_signature

    from jobs.recording.recorder import ensure_experiment

    mlflow.set_tracking_uri(tracking_uri)
    client = mlflow.MlflowClient(tracking_uri)
    exp_id = ensure_experiment(client, experiment, tracking_uri)
    results = json.loads((work / "evaluation.json").read_text())
    meta = json.loads((work / "training.json").read_text())
    series = load_series(work)
    example = windows(next(iter(series.values())), meta["horizon"]).X.head(5)
    versions = {}
    with mlflow.start_run(experiment_id=exp_id, run_name="train-load-predictors",
                          tags={"kind": "predictor-training"}) as parent:
        mlflow.log_params({"horizon": meta["horizon"], "train_fraction": meta["train_fraction"],
                           "feature_lags": FEATURE_LAGS, "rows": meta["rows"], "series": len(meta["series"])})
        mlflow.log_dict(results, "evaluation.json")
        mlflow.log_text(evaluation_markdown(results), "evaluation.md")
        for base in ("paper-ols", "last-value"):
            mlflow.log_metric(f"{base}.score", results[base]["mean"]["score"])
        for name, model in fitted(work).items():
            with mlflow.start_run(experiment_id=exp_id, run_name=name, nested=True,
                                  tags={"kind": "predictor", "predictor": name}) as child:
                mlflow.log_params({"model": name, "horizon": meta["horizon"], "feature_lags": FEATURE_LAGS,
                                   "seed": meta["seed"]})
                for series_name, e in results[name].items():
                    key = series_name.replace(":", ".")
                    mlflow.log_metrics({f"{m}.{key}": v for m, v in e.items() if np.isfinite(v)})
                info = mlflow.sklearn.log_model(
                    model, name="model", signature=infer_signature(example, model.predict(example)),
                    input_example=example, registered_model_name=model_name, skops_trusted_types=TRUSTED_TYPES,
                    pip_requirements=[f"scikit-learn=={sklearn.__version__}", f"mlflow=={mlflow.__version__}"],
                    metadata={"horizon": meta["horizon"], "feature_lags": FEATURE_LAGS,
                              "features": feature_names()})
                version = str(info.registered_model_version)
                for key, value in {"predictor": name, "score": f"{results[name]['mean']['score']:.6f}",
                                   "horizon": str(meta["horizon"]), "training_run": child.info.run_id}.items():
                    client.set_model_version_tag(model_name, version, key, value)
                versions[name] = version
        mlflow.set_tag("registered_versions", json.dumps(versions))
    (work / "registered.json").write_text(json.dumps({"parent_run_id": parent.info.run_id, "versions": versions,
                                                      "model_name": model_name}))
    return versions


def choose_champion(work: Path, tracking_uri: str, min_improvement: float = DEFAULTS["min_improvement"],
                    under_weight: float = DEFAULTS["under_weight"], step_s: float = DEFAULTS["step_s"]
                    ) -> dict[str, Any]:
    """Move `champion` to the best new version only if, on these held-back windows, it beats the paper's predictor
    and the current champion (re-evaluated on the same windows) by `min_improvement` (relative)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    registered = json.loads((work / "registered.json").read_text())
    model_name, versions = registered["model_name"], registered["versions"]
    results = json.loads((work / "evaluation.json").read_text())
    client = mlflow.MlflowClient(tracking_uri)
    best = min(versions, key=lambda n: results[n]["mean"]["score"])
    best_score = results[best]["mean"]["score"]
    paper = results["paper-ols"]["mean"]["score"]
    incumbent, incumbent_score = None, None
    try:
        current = client.get_model_version_by_alias(model_name, CHAMPION_ALIAS)
        incumbent = str(current.version)
        mlflow.set_tracking_uri(tracking_uri)
        model = mlflow.pyfunc.load_model(f"models:/{model_name}/{incumbent}")
        incumbent_score = evaluate_models({"champion": model}, work, under_weight, step_s)["champion"]["mean"]["score"]
    except MlflowException:
        pass  # no champion yet
    if best_score > paper * (1 - min_improvement):
        verdict = (f"keep {'version ' + incumbent if incumbent else 'no champion'}: the best candidate {best} "
                   f"(v{versions[best]}, score {best_score:.4f}) does not beat the paper's predictor ({paper:.4f})")
        moved = False
    elif incumbent_score is not None and best_score > incumbent_score * (1 - min_improvement):
        verdict = (f"keep version {incumbent} (score {incumbent_score:.4f} on these windows): {best} "
                   f"(v{versions[best]}, {best_score:.4f}) is not {min_improvement:.0%} better")
        moved = False
    else:
        client.set_registered_model_alias(model_name, CHAMPION_ALIAS, versions[best])
        was = f"version {incumbent} ({incumbent_score:.4f})" if incumbent else "no champion"
        verdict = (f"champion -> version {versions[best]} ({best}, score {best_score:.4f}; paper {paper:.4f}; "
                   f"was {was})")
        moved = True
    decision = {"moved": moved, "verdict": verdict, "best": best, "best_version": versions[best],
                "best_score": best_score, "paper_score": paper, "incumbent": incumbent,
                "incumbent_score": incumbent_score}
    client.set_tag(registered["parent_run_id"], "champion_decision", verdict)
    client.log_dict(registered["parent_run_id"], decision, "champion.json")
    (work / "champion.json").write_text(json.dumps(decision, indent=1))
    return decision


# ---------------------------------------------------------------- report

def evaluation_markdown(results: dict[str, dict[str, dict[str, float]]]) -> str:
    series = [s for s in next(iter(results.values())) if s != "mean"] + ["mean"]
    lines = ["| series | predictor | MAE (ev/s) | MAPE | under-prediction rate | mean under (ev/s) | mean over (ev/s) "
             "| score |", "|---|---|---|---|---|---|---|---|"]
    for s in series:
        for name, per in results.items():
            e = per[s]
            lines.append(f"| {s} | {name} | {e['mae']:.1f} | {e['mape']:.1%} | {e['under_rate']:.1%} | "
                         f"{e['under_mean']:.1f} | {e['over_mean']:.1f} | {e['score']:.4f} |")
    return "\n".join(lines) + "\n"


def run_all(work: Path, tracking_uri: str, traces: list[str] | None, runs_experiment: str | None,
            **options: Any) -> dict[str, Any]:
    o = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    sizes = collect(work, traces, tracking_uri if runs_experiment else None, runs_experiment, o["step_s"],
                    o["max_points"])
    train(work, o["horizon"], o["train_fraction"])
    scores = evaluate(work, o["under_weight"], o["step_s"])
    versions = register_predictors(work, tracking_uri)
    decision = choose_champion(work, tracking_uri, o["min_improvement"], o["under_weight"], o["step_s"])
    return {"series": sizes, "scores": scores, "versions": versions, "decision": decision, "options": o}


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from jobs.recording.recorder import DEFAULT_EXPERIMENT, default_tracking_uri

    p = argparse.ArgumentParser(prog="python -m analysis.load_predictors", description=__doc__.split("\n\n")[0])
    p.add_argument("--traces", nargs="*", default=None, help="trace names (default: every trace found)")
    p.add_argument("--runs-experiment", default=DEFAULT_EXPERIMENT,
                   help="also learn from the per-batch arrivals of this experiment's runs ('' for none)")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--work-dir", type=Path, default=None)
    p.add_argument("--report", type=Path, default=None, help="also write the evaluation table here (markdown)")
    for key, value in DEFAULTS.items():
        p.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=None, help=f"default {value}")
    args = p.parse_args(argv)
    uri = args.tracking_uri or default_tracking_uri()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="load-predictors-"))
    try:
        out = run_all(work, uri, args.traces, args.runs_experiment or None,
                      **{k: getattr(args, k) for k in DEFAULTS})
    except PredictorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    results = json.loads((work / "evaluation.json").read_text())
    print(evaluation_markdown(results))
    print(f"registered {REGISTERED_MODEL} versions {out['versions']}")
    print(out["decision"]["verdict"])
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(report_page(out, results))
        print(f"written to {args.report}")
    return 0


def report_page(out: dict[str, Any], results: dict[str, dict[str, dict[str, float]]]) -> str:
    o = out["options"]
    traces = {name: n for name, n in out["series"].items() if name.startswith("trace:")}
    recorded = {name: n for name, n in out["series"].items() if not name.startswith("trace:")}
    sizes = ", ".join(f"{name} ({n} sub-intervals)" for name, n in traces.items())
    if recorded:
        sizes += (f"; and {len(recorded)} recorded runs ({min(recorded.values())}-{max(recorded.values())} batches "
                  "each; those too short to hold windows back only train)")
    return ("# Load predictors for AUTOSCALE: held-back evaluation\n\n"
            "Generated by `python -m analysis.load_predictors --report docs/predictors.md`; do not edit by hand.\n"
            f"Series: {sizes}. Each series is split by time (first {o['train_fraction']:.0%} of its windows "
            f"train, the rest are held back); sub-intervals of {o['step_s']:g} s (or the trace's own bucket when "
            f"coarser); the task is the mean rate of the next {o['horizon']} sub-intervals from the last "
            f"{FEATURE_LAGS}. Score: relative absolute error, under-predictions weighted {o['under_weight']:g}x "
            "(lower is better).\n\n"
            f"Champion decision: {out['decision']['verdict']}\n\n" + evaluation_markdown(results))


if __name__ == "__main__":
    sys.exit(main())
