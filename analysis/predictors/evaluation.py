"""Leave-one-trace-out evaluation: every candidate is scored on a trace (or a family of recorded runs) it was not
trained on, next to the baselines, and chosen by that score, never by a random split.

For each group G: fit every candidate on the windows of all other groups, predict G's windows, score. The scores
(all in events per second of the held-out series, on its non-idle windows):
- MAE, and MAE ÷ the naive last value's MAE and ÷ the paper's OLS's (extrapolated reading) on the same windows;
- under-prediction rate: the share of windows where the forecast was below what came (it congests an operator).
Selection score: the mean over held-out groups of MAE ÷ naive (each trace counts once, whatever its length).

The conservative variant is split-conformal on these held-out residuals (Vovk et al.; Lei et al., JASA 2018): the
best model plus an offset, the `coverage` quantile of its scale-free residuals y - ŷ (`+conformal80`), or the
`coverage` quantile of the residuals divided by each window's local spread, times that spread (`+conformal80-local`:
locally weighted, Lei et al. sec. 5.2; controllers.forecast.local_spread): a calm window then gets a small margin and
a bursty one a large one. Evaluated honestly too: on
group G the offset comes from the other groups' residuals only, so its under-prediction rate on G is what an unseen
trace would see. (Those residuals come from fits that saw G; a nested leave-one-out would remove that too at n²
fits; the project's choice, noted in docs/predictors.md.) Residual groups are weighted equally.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from analysis.predictors.dataset import Dataset
from analysis.predictors.guard_replay import guarded_predictions
from analysis.predictors.windows import Windows, as_deployed, baselines, make_windows
from controllers.forecast import Horizon, local_spread

DEFAULT_COVERAGE = 0.8  # the conservative variant's target: under-predict at most 20 % of windows


def candidates(seed: int = 0) -> dict[str, Any]:
    """Regularised linear, a mean-seeking and a median-seeking (MAE-optimal) gradient-boosted model."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    common = {"max_iter": 200, "learning_rate": 0.05, "random_state": seed}
    return {
        "ridge": make_pipeline(StandardScaler(), Ridge(alpha=1.0)),
        "gradient-boosting": HistGradientBoostingRegressor(**common),
        "gradient-boosting-median": HistGradientBoostingRegressor(loss="absolute_error", **common),
    }


def quantile_bases(seed: int = 0, coverage: float = DEFAULT_COVERAGE, quick: bool = False) -> dict[str, Any]:
    """Bases for the conservative variant besides the selected point model: a gradient-boosted model of the
    `coverage` quantile, whose conformal correction is then small where the load is calm and large where it is
    not (conformalized quantile regression, Romano et al., NeurIPS 2019), instead of one offset everywhere."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    return {f"gradient-boosting-q{round(coverage * 100)}": HistGradientBoostingRegressor(
        loss="quantile", quantile=coverage, max_iter=40 if quick else 200, learning_rate=0.1 if quick else 0.05,
        random_state=seed)}


def quick_candidates(seed: int = 0) -> dict[str, Any]:
    """A small, fast set (a linear model and a short gradient-boosted one): a first look, and the tests."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import Ridge

    return {"ridge": Ridge(alpha=1.0),
            "gradient-boosting-median": HistGradientBoostingRegressor(loss="absolute_error", max_iter=40,
                                                                      random_state=seed)}


CANDIDATE_SETS: dict[str, Callable[[int], dict[str, Any]]] = {"default": candidates, "quick": quick_candidates}
CONSERVATIVE_SETS: dict[str, Callable[[int, float], dict[str, Any]]] = {
    "default": lambda seed, coverage: quantile_bases(seed, coverage),
    "quick": lambda seed, coverage: quantile_bases(seed, coverage, quick=True)}


def fit_weighted(model: Any, w: "Windows", weights: np.ndarray) -> Any:
    """Fit with per-row weights (a pipeline passes them to its last step)."""
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        return model.fit(w.X, w.y, **{f"{model.steps[-1][0]}__sample_weight": weights})
    return model.fit(w.X, w.y, sample_weight=weights)


def group_weights(parts: list["Windows"], weighting: str = "events") -> np.ndarray:
    """Training weights, mean 1; each part is one leave-one-out group (a trace or a run family).

    'events' (the project's choice): a window weighs its level within its trace (its scale ÷ the trace's mean
    scale). Targets are scale-free, so with equal weights a quiet window's error counts as much as a busy one's; the
    score counts errors in events per second, where a window at twice its trace's usual level errs twice as much.
    With this weight the loss counts each error in units of its trace's mean level: events per second up to one
    factor per trace, closer to the score than equal weights (for the median model's absolute loss exactly the sum
    over traces of windows × MAE ÷ mean level; the other candidates' squared or pinball losses weighted alike).
    'windows': every window the same (long traces weigh more); 'traces': every group the same whatever its length,
    so 20,000 windows of one trace cannot drown 800 of another. The dataset spec chooses; the project's spec
    (analysis/predictors/dataset.yaml) records how the three compared when it chose."""
    if weighting == "windows":
        return np.ones(sum(len(p) for p in parts))
    if weighting == "events":
        w = np.concatenate([p.scale / p.scale.mean() for p in parts])
    else:
        w = np.concatenate([np.full(len(p), 1.0 / len(p)) for p in parts])
    return w * len(w) / w.sum()


def group_windows(dataset: Dataset) -> dict[str, Windows]:
    """Windows per leave-one-out group (a trace, or all recorded runs of one workload)."""
    by_group: dict[str, list[Windows]] = {}
    for s in dataset.series.values():
        w = make_windows(s, dataset.spec.horizon)
        if len(w):
            by_group.setdefault(s.group, []).append(w)
    return {g: Windows.concat(parts) for g, parts in by_group.items()}


def scores(pred_ratio: np.ndarray, w: Windows, naive_ratio: np.ndarray, paper_ratio: np.ndarray) -> dict[str, float]:
    actual = w.y * w.scale
    err = pred_ratio * w.scale - actual
    mae = float(np.abs(err).mean())
    naive = float(np.abs(naive_ratio * w.scale - actual).mean())
    paper = float(np.abs(paper_ratio * w.scale - actual).mean())
    return {"mae": mae, "mae_vs_naive": mae / naive if naive > 0 else float("nan"),
            "mae_vs_paper": mae / paper if paper > 0 else float("nan"), "under_rate": float((err < 0).mean()),
            "windows": float(len(w))}


def weighted_quantile(values: list[np.ndarray], q: float) -> float:
    """The q-quantile of the pooled values, each array weighted to count as much as every other."""
    v = np.concatenate(values)
    wts = np.concatenate([np.full(len(a), 1.0 / len(a)) for a in values])
    order = np.argsort(v)
    cum = np.cumsum(wts[order]) / wts.sum()
    return float(v[order][min(np.searchsorted(cum, q), len(v) - 1)])


def leave_one_trace_out(dataset: Dataset, seed: int = 0, coverage: float = DEFAULT_COVERAGE,
                        make: Callable[[int], dict[str, Any]] = candidates, progress: Callable[[str], None] = print,
                        conservative: Callable[[int, float], dict[str, Any]] | None = None) -> dict[str, Any]:
    """{"per_group": {group: {predictor: scores}}, "summary": {predictor: aggregate}, "best": name,
    "offset": conformal offset of the best model, ...}; predictors are the candidates, the baselines,
    `<best>+guard` (the best as a controller runs it, analysis.predictors.guard_replay) and
    `<base>+conformal<coverage>`."""
    horizon: Horizon = dataset.spec.horizon
    groups = group_windows(dataset)
    if len(groups) < 2:
        raise ValueError(f"leave-one-trace-out needs at least 2 groups (traces or run families), got "
                         f"{sorted(groups)}")
    active = {g: w.take(~w.idle) for g, w in groups.items()}
    empty = [g for g, w in active.items() if len(w) == 0]
    if empty:
        raise ValueError(f"no non-idle window in {', '.join(empty)}: every window holds fewer than "
                         f"{horizon.idle_events:g} events; widen the window or drop the trace")
    model_names = list(make(seed))
    quantile_names = list(conservative(seed, coverage)) if conservative else []
    per_group: dict[str, dict[str, dict[str, float]]] = {}
    residuals: dict[str, dict[str, np.ndarray]] = {}
    predictions: dict[str, dict[str, np.ndarray]] = {}
    full_predictions: dict[str, dict[str, np.ndarray]] = {}
    for g, test in active.items():
        progress(f"held out {g}: training on {len(active) - 1} other group(s)")
        parts = [w for h, w in active.items() if h != g]
        train, weights = Windows.concat(parts), group_weights(parts, dataset.spec.weighting)
        base = baselines(test, horizon, with_seasonal=bool(np.isfinite(test.seasonal).any()))
        naive, paper = base["last-value"], base["paper-ols-extrapolated"]
        per_group[g] = {name: scores(p, test, naive, paper) for name, p in base.items()}
        predictions[g], residuals[g] = {}, {}
        models = {**make(seed), **(conservative(seed, coverage) if conservative else {})}
        everything = groups[g]  # idle windows too: the guard replay walks the series as a controller would
        for name, model in models.items():
            fit_weighted(model, train, weights)
            full = np.asarray(model.predict(everything.X), dtype=float)
            full_predictions.setdefault(g, {})[name] = as_deployed(full, everything)
            p = full[~everything.idle]
            predictions[g][name] = p
            residuals[g][name] = test.y - p
            per_group[g][name] = scores(p, test, naive, paper)
    summary = summarise(per_group)
    best = min(model_names, key=lambda n: summary[n]["mae_vs_naive"])
    guarded = f"{best}+guard"
    for g, test in active.items():
        everything = groups[g]
        replayed, naive_share = guarded_predictions(full_predictions[g][best], everything, horizon)
        base = baselines(test, horizon, with_seasonal=False)
        per_group[g][guarded] = scores(replayed[~everything.idle], test, base["last-value"],
                                       base["paper-ols-extrapolated"])
        per_group[g][guarded]["naive_share"] = naive_share
    bases = [best] + quantile_names
    spreads = {g: spread_of(test) for g, test in active.items()}
    variants = {}
    for base_name in bases:
        for local in (False, True):
            conformal = f"{base_name}+conformal{round(coverage * 100)}" + ("-local" if local else "")
            unit = {g: spreads[g] if local else np.ones(len(test)) for g, test in active.items()}
            for g, test in active.items():
                others = [residuals[h][base_name] / unit[h] for h in active if h != g]
                offset_g = weighted_quantile(others, coverage)
                base = baselines(test, horizon, with_seasonal=False)
                per_group[g][conformal] = scores(predictions[g][base_name] + offset_g * unit[g], test,
                                                 base["last-value"], base["paper-ols-extrapolated"])
                per_group[g][conformal]["offset"] = offset_g
            variants[conformal] = (base_name, local, weighted_quantile(
                [residuals[g][base_name] / unit[g] for g in active], coverage))
    summary = summarise(per_group)
    # the conservative variant registered: the calibrated one that costs least accuracy
    conformal = min(variants, key=lambda n: summary[n]["mae_vs_naive"])
    conformal_base, local, offset = variants[conformal]
    return {"per_group": per_group, "summary": summary, "best": best, "conformal": conformal, "offset": offset,
            "conformal_base": conformal_base, "conformal_local": local, "coverage": coverage, "models": model_names,
            "windows": {g: {"all": len(groups[g]), "idle": int(groups[g].idle.sum())} for g in groups}}


def spread_of(w: Windows) -> np.ndarray:
    """Each window's local spread (controllers.forecast.local_spread, the one the controller computes)."""
    return np.array([local_spread(row) for row in w.X.to_dict("records")], dtype=float)


def summarise(per_group: dict[str, dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    names = {n for per in per_group.values() for n in per}
    out = {}
    for n in sorted(names):
        rows = [per[n] for per in per_group.values() if n in per]
        out[n] = {"mae_vs_naive": float(np.mean([r["mae_vs_naive"] for r in rows])),
                  "worst_vs_naive": float(np.max([r["mae_vs_naive"] for r in rows])),
                  "mae_vs_paper": float(np.mean([r["mae_vs_paper"] for r in rows])),
                  "under_rate": float(np.mean([r["under_rate"] for r in rows])),
                  "groups": float(len(rows))}
    return out


def fit_final(dataset_windows: dict[str, Windows], name: str, seed: int = 0,
              make: Callable[[int], dict[str, Any]] = candidates, weighting: str = "events") -> Any:
    """The chosen candidate fitted on every group's non-idle windows: what gets registered."""
    parts = [w.take(~w.idle) for w in dataset_windows.values()]
    return fit_weighted(make(seed)[name], Windows.concat(parts), group_weights(parts, weighting))
