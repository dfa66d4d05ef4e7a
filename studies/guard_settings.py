"""What the runtime guard's settings cost or save offline: the selected load predictor's held-out forecasts replayed
through the guard with several (window, margin) pairs (docs/predictors-goals.md).

    python -m studies.guard_settings [--dataset analysis/predictors/dataset.yaml]     under a minute; no Spark

Leave one trace out as `python -m analysis.predictors train` does it (the median gradient-boosted model, the
dataset's weighting), then analysis.predictors.guard_replay with each setting; MAE ÷ the last value's per held-out
trace, mean and worst. The defaults (controllers/common_params.py: window 5, margin 0) are the first row. This is a
look at the replay, not a choice: a setting picked here is picked on the very traces it is scored on, and would
need confirming on traces it was not chosen on and on Spark.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from analysis.predictors.dataset import DEFAULT_SPEC, load_dataset, load_spec
from analysis.predictors.evaluation import fit_final, group_windows, scores
from analysis.predictors.guard_replay import guarded_predictions
from analysis.predictors.windows import Windows, as_deployed, baselines

MODEL = "gradient-boosting-median"
SETTINGS = ((5, 0.0), (10, 0.0), (10, 0.2), (20, 0.0), (20, 0.2), (20, 0.5))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.guard_settings", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, default=DEFAULT_SPEC)
    args = p.parse_args(argv)
    spec = load_spec(args.dataset)
    groups = group_windows(load_dataset(spec))
    held_out = {}
    for g, everything in groups.items():
        model = fit_final({h: w for h, w in groups.items() if h != g}, MODEL, weighting=spec.weighting)
        held_out[g] = as_deployed(model.predict(everything.X), everything)

    def ratio(pred: np.ndarray, w: Windows) -> float:
        busy = w.take(~w.idle)
        base = baselines(busy, spec.horizon, with_seasonal=False)
        return scores(pred[~w.idle], busy, base["last-value"], base["paper-ols-extrapolated"])["mae_vs_naive"]

    print(f"{MODEL}, held out, MAE ÷ naive per trace ({len(groups)} traces)\n")
    print("| guard | mean | worst | answered naively |\n|---|---|---|---|")
    alone = [ratio(held_out[g], w) for g, w in groups.items()]
    print(f"| none (the model alone) | {np.mean(alone):.3f} | {np.max(alone):.3f} | 0 % |")
    for window, margin in SETTINGS:
        ratios, shares = [], []
        for g, w in groups.items():
            replayed, share = guarded_predictions(held_out[g], w, spec.horizon, window=window, margin=margin)
            ratios.append(ratio(replayed, w))
            shares.append(share)
        print(f"| window {window}, margin {margin:g} | {np.mean(ratios):.3f} | {np.max(ratios):.3f} | "
              f"{np.mean(shares):.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
