"""Which local spread should scale the conservative predictor's conformal margin? Leave one trace out, no Spark.

    python -m studies.conformal_spread        # about 1 min: the models of the held-out fits, then the table

The conservative variant (its goal, docs/predictors-goals.md: under-predict at most 20 % of windows on a trace it
never saw, at most 1.5x the champion's error) is a model plus a split-conformal margin. One margin everywhere is too
much on calm windows and too little on bursty ones; locally weighted conformal (Lei et al., JASA 2018, sec. 5.2)
divides the residuals by a per-window spread, takes the quantile of those, and multiplies back. This study compares
spreads computed from the history the controller has, on the project's dataset and its leave-one-trace-out split (each
trace's margin from the other traces' held-out residuals, as analysis.predictors.evaluation does): none (one offset),
the mean absolute change of the last 11 scale-free rates (the project's choice, controllers.forecast.local_spread),
the standard deviation of the last 10 or 30, the mean absolute change of the last 6, and counting noise (1/sqrt of the
events expected in the next period: not scale-free, so a Spark operator at thousands of records/s would get almost no
margin; shown for comparison only). Bases: the champion's candidate (median gradient boosting) and the 80th-quantile
one. Skipped, with the reason, when the traces are absent.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

import numpy as np

from analysis.predictors.dataset import DatasetError, load_dataset, load_spec
from analysis.predictors.evaluation import (DEFAULT_COVERAGE, candidates, fit_weighted, group_weights, group_windows,
                                            quantile_bases, spread_of, weighted_quantile)
from analysis.predictors.windows import Windows
from controllers.forecast import SPREAD_FLOOR


def _scale_free(w: Windows) -> np.ndarray:
    return w.history / w.scale[:, None]


SPREADS: dict[str, Callable[[Windows, float], np.ndarray]] = {
    "none (one offset)": lambda w, period: np.ones(len(w)),
    "mean abs. change, last 11 (the project's)": lambda w, period: spread_of(w),
    "std, last 10": lambda w, period: np.maximum(_scale_free(w)[:, -10:].std(axis=1), SPREAD_FLOOR),
    "std, last 30": lambda w, period: np.maximum(_scale_free(w).std(axis=1), SPREAD_FLOOR),
    "mean abs. change, last 6": lambda w, period: np.maximum(
        np.abs(np.diff(_scale_free(w)[:, -6:], axis=1)).mean(axis=1), SPREAD_FLOOR),
    "counting noise (not scale-free)": lambda w, period: 1.0 / np.sqrt(np.maximum(w.scale * period, 1.0)),
}


def table(coverage: float = DEFAULT_COVERAGE) -> str:
    spec = load_spec()
    groups = {g: w.take(~w.idle) for g, w in group_windows(load_dataset(spec)).items()}
    bases = {"gradient-boosting-median": lambda: candidates(0)["gradient-boosting-median"],
             **{name: (lambda m=model: m) for name, model in quantile_bases(0, coverage).items()}}
    predictions: dict[str, dict[str, np.ndarray]] = {}
    for g, test in groups.items():
        parts = [w for h, w in groups.items() if h != g]
        train, weights = Windows.concat(parts), group_weights(parts, spec.weighting)
        predictions[g] = {}
        for name, make in bases.items():
            model = make()
            fit_weighted(model, train, weights)
            predictions[g][name] = np.asarray(model.predict(test.X), dtype=float)

    def error_vs_naive(g: str, ratio: np.ndarray) -> float:
        w = groups[g]
        naive = np.abs(w.history[:, -1] - w.y * w.scale).mean()
        return float(np.abs((ratio - w.y) * w.scale).mean() / naive)

    champion = np.mean([error_vs_naive(g, predictions[g]["gradient-boosting-median"]) for g in groups])
    period = spec.horizon.period_s
    lines = [f"Champion's candidate alone: mean MAE ÷ naive {champion:.3f}. Margins at the {coverage:.0%} quantile.",
             "", "| base | spread | mean MAE ÷ naive | ÷ champion's | mean under-prediction | worst trace's |",
             "|---|---|---|---|---|---|"]
    for base in bases:
        for label, spread in SPREADS.items():
            unit = {g: spread(w, period) for g, w in groups.items()}
            ratios, unders = [], []
            for g, w in groups.items():
                offset = weighted_quantile([(groups[h].y - predictions[h][base]) / unit[h] for h in groups if h != g],
                                           coverage)
                forecast = predictions[g][base] + offset * unit[g]
                ratios.append(error_vs_naive(g, forecast))
                unders.append(float((forecast < w.y).mean()))
            lines.append(f"| {base} | {label} | {np.mean(ratios):.3f} | {np.mean(ratios) / champion:.3f} | "
                         f"{100 * np.mean(unders):.1f} % | {100 * max(unders):.1f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    try:
        print(table())
    except DatasetError as exc:
        print(f"skipped: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
