"""How far the load predictors could go on the shared traces with this horizon and these features, to tell a model
that does not generalise from a task that does not allow more (docs/predictors.md).

    python -m studies.predictor_headroom [--dataset analysis/predictors/dataset.yaml]     about 30 s; no Spark

Every trace is cut in time: its first half for training, its second half for scoring. The selected candidate
(analysis.predictors.evaluation: the median-seeking gradient-boosted model, trained with the dataset's weighting) is
scored on each trace's second half three ways:
- held out: trained on the other traces' first halves only (what leave-one-trace-out measures, on the same windows);
- pooled: trained on every trace's first half, this one's included (a model that has seen this trace's kind of load);
- own: trained on this trace's first half alone (a model made for this trace).
All as MAE ÷ the naive last value's on the same windows. If even `pooled` and `own` stay above a goal, the goal is
out of reach for this horizon and these features, not only for a model that must generalise.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from analysis.predictors.dataset import DEFAULT_SPEC, load_dataset, load_spec
from analysis.predictors.evaluation import fit_final, group_windows, scores
from analysis.predictors.windows import Windows, baselines
from controllers.forecast import Horizon

MODEL = "gradient-boosting-median"


def halves(w: Windows) -> tuple[Windows, Windows]:
    first = np.zeros(len(w), dtype=bool)
    first[: len(w) // 2] = True
    return w.take(first), w.take(~first)


def mae_vs_naive(model, test: Windows, horizon: Horizon) -> float:
    base = baselines(test, horizon, with_seasonal=False)
    return scores(np.asarray(model.predict(test.X)), test, base["last-value"],
                  base["paper-ols-extrapolated"])["mae_vs_naive"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m studies.predictor_headroom", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", type=Path, default=DEFAULT_SPEC)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    spec = load_spec(args.dataset)
    groups = {g: halves(w.take(~w.idle)) for g, w in group_windows(load_dataset(spec)).items()}

    def fit(firsts: dict[str, Windows]):
        return fit_final(firsts, MODEL, args.seed, weighting=spec.weighting)

    pooled = fit({g: first for g, (first, _) in groups.items()})
    rows = []
    for g, (first, second) in groups.items():
        held_out = fit({h: f for h, (f, _) in groups.items() if h != g})
        own = fit({g: first})
        rows.append((g, len(second), *(mae_vs_naive(m, second, spec.horizon) for m in (held_out, pooled, own))))
    print(f"{MODEL} on each trace's second half, MAE ÷ naive (dataset {args.dataset}, weighting {spec.weighting})\n")
    print("| trace | windows scored | held out | pooled | own |\n|---|---|---|---|---|")
    for g, n, *r in rows:
        print(f"| {g} | {n} | " + " | ".join(f"{v:.3f}" for v in r) + " |")
    means = np.mean([r[2:] for r in rows], axis=0)
    worst = np.max([r[2:] for r in rows], axis=0)
    print("| **mean** | | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    print("| **worst** | | " + " | ".join(f"{v:.3f}" for v in worst) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
