"""Statistics for comparing controller configurations across a few seeds: intervals, tests, ranking, Pareto front.

Experiments here have few samples per configuration (3-10 seeds), so the methods are chosen for that:
- the mean's 95 % interval is a percentile bootstrap with a fixed seed (reproducible reports);
- the pairwise test is an exact permutation test on the difference of means (no normality assumption, exact for
  small samples; with n + m <= 16 every split is enumerated, beyond that 20,000 seeded random splits). Its
  smallest possible p-value is 2 / C(n+m, n): with 3 seeds against 3 that is 0.1, so nothing is ever significant at
  0.05; suites that must detect differences need at least 4 seeds per configuration (4 vs 4: p >= 0.029);
- the ranking rule, stated once here and used by the report, the promotion and the nightly regression check:

  RANKING RULE. Among configurations whose mean SLO attainment meets the target, the lowest mean cost wins.
  Configurations that miss the target rank after all that meet it, by SLO attainment (higher first). Two
  configurations whose cost intervals overlap and whose difference is not significant (p >= alpha) are tied; a
  tie keeps the incumbent (the champion) or, with none, the alphabetical order of names, so the order is stable.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

BOOTSTRAP_RESAMPLES = 10_000
PERMUTATIONS = 20_000
ALPHA = 0.05


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high

    def text(self, scale: float = 1.0, digits: int = 1) -> str:
        """'mean [low, high]', each times `scale` with `digits` decimals; '—' with no value."""
        if self.n == 0 or math.isnan(self.mean):
            return "—"
        return f"{scale * self.mean:.{digits}f} [{scale * self.low:.{digits}f}, {scale * self.high:.{digits}f}]"


def bootstrap_mean(values: Sequence[float], confidence: float = 0.95, seed: int = 0,
                   resamples: int = BOOTSTRAP_RESAMPLES) -> Interval:
    """Percentile bootstrap interval of the mean. One value gives a zero-width interval (nothing to resample)."""
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    if len(x) == 1:
        return Interval(float(x[0]), float(x[0]), float(x[0]), 1)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(float(x.mean()), float(low), float(high), len(x))


def permutation_test(a: Sequence[float], b: Sequence[float], seed: int = 0,
                     permutations: int = PERMUTATIONS) -> float:
    """Two-sided p-value of the difference of means of a and b under exchangeability."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return 1.0
    pooled = np.concatenate([a, b])
    observed = abs(a.mean() - b.mean())
    n = len(a)
    if len(pooled) <= 16:
        total = extreme = 0
        for idx in itertools.combinations(range(len(pooled)), n):
            mask = np.zeros(len(pooled), dtype=bool)
            mask[list(idx)] = True
            diff = abs(pooled[mask].mean() - pooled[~mask].mean())
            extreme += diff >= observed - 1e-12
            total += 1
        return extreme / total
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((permutations, len(pooled))), axis=1)
    shuffled = pooled[perms]
    diffs = np.abs(shuffled[:, :n].mean(axis=1) - shuffled[:, n:].mean(axis=1))
    return float((np.count_nonzero(diffs >= observed - 1e-12) + 1) / (permutations + 1))


def summarise_configs(runs: pd.DataFrame, by: str = "config", metrics: Iterable[str] = ("slo_attainment",
                      "cost_slot_seconds", "latency_p99_s")) -> pd.DataFrame:
    """One row per configuration: mean and 95 % bootstrap interval of each metric over its runs (seeds)."""
    rows = []
    for name, group in runs.groupby(by, sort=True):
        row = {by: name, "runs": len(group)}
        for m in metrics:
            iv = bootstrap_mean(group[m].tolist())
            row.update({m: iv.mean, f"{m}_low": iv.low, f"{m}_high": iv.high})
        rows.append(row)
    return pd.DataFrame(rows)


def rank(runs: pd.DataFrame, slo_target: float, by: str = "config", incumbent: str | None = None,
         alpha: float = ALPHA) -> pd.DataFrame:
    """Configurations in ranking-rule order (see the module docstring), with `meets_slo`, `rank` and `tied_with`."""
    table = summarise_configs(runs, by)
    table["meets_slo"] = table["slo_attainment"] >= slo_target
    # a stable pre-order: meeting the SLO first, then cost (or attainment for those missing), incumbent first, name
    table["_incumbent"] = table[by] != incumbent
    meets = table[table["meets_slo"]].sort_values(["cost_slot_seconds", "_incumbent", by])
    misses = table[~table["meets_slo"]].sort_values(["slo_attainment", "_incumbent", by],
                                                    ascending=[False, True, True])
    ordered = pd.concat([meets, misses]).reset_index(drop=True)
    # ties: a configuration tied with the one ranked just before it joins its group
    group, groups = 0, []
    for i, row in ordered.iterrows():
        if i > 0 and row["meets_slo"] and ordered.loc[i - 1, "meets_slo"]:
            prev = ordered.loc[i - 1]
            a = runs.loc[runs[by] == prev[by], "cost_slot_seconds"]
            b = runs.loc[runs[by] == row[by], "cost_slot_seconds"]
            overlap = _interval(prev).overlaps(_interval(row))
            if not (overlap and permutation_test(a, b) >= alpha):
                group += 1
        elif i > 0:
            group += 1
        groups.append(group)
    ordered["_group"] = groups
    # inside a tie: the incumbent first, then names in alphabetical order
    ordered = ordered.sort_values(["_group", "_incumbent", by], kind="stable").reset_index(drop=True)
    first_of_group = ordered.groupby("_group")[by].transform("first")
    ordered["rank"] = ordered.groupby("_group").ngroup().map(
        dict(enumerate(ordered.drop_duplicates("_group").index + 1)))
    ordered["tied_with"] = np.where(first_of_group != ordered[by], first_of_group, None)
    return ordered.drop(columns=["_incumbent", "_group"])


def _interval(row) -> Interval:
    return Interval(row["cost_slot_seconds"], row["cost_slot_seconds_low"], row["cost_slot_seconds_high"], 0)


def pareto_front(table: pd.DataFrame, cost: str = "cost_slot_seconds", violations: str = "slo_violation",
                 by: str = "config") -> list[str]:
    """Configurations not dominated on (cost, SLO violations): no other is at least as good on both and better on
    one. `violations` defaults to 1 - slo_attainment when the column is absent."""
    t = table.copy()
    if violations not in t:
        t[violations] = 1 - t["slo_attainment"]
    front = []
    for _, row in t.iterrows():
        dominated = ((t[cost] <= row[cost]) & (t[violations] <= row[violations])
                     & ((t[cost] < row[cost]) | (t[violations] < row[violations]))).any()
        if not dominated:
            front.append(row[by])
    return sorted(front, key=lambda name: float(t.loc[t[by] == name, cost].iloc[0]))


@dataclass(frozen=True)
class Regression:
    config: str
    workload: str
    metric: str
    before: float
    after: float
    p_value: float

    def __str__(self) -> str:
        return (f"{self.config} on {self.workload}: {self.metric} {self.before:.4g} -> {self.after:.4g} "
                f"(p = {self.p_value:.3f})")


# direction of "worse" for each metric compared by the regression check
HIGHER_IS_BETTER = {"slo_attainment": True, "cost_slot_seconds": False, "latency_p99_s": False,
                    "latency_p95_s": False, "latency_p50_s": False, "records_lost": False,
                    "records_duplicated": False}


def regressions(before: pd.DataFrame, after: pd.DataFrame, tolerance: dict[str, float],
                alpha: float = ALPHA) -> list[Regression]:
    """(config, workload, metric) that got worse by more than `tolerance[metric]` (relative, e.g. 0.05 = 5 %) AND
    significantly (permutation test over the seeds, p < alpha): noise alone, which the seeds' spread measures, does
    not count. Runs are rows with columns config, workload and the metrics."""
    found = []
    for (config, workload), new in after.groupby(["config", "workload"], sort=True):
        old = before[(before["config"] == config) & (before["workload"] == workload)]
        if old.empty:
            continue
        for metric, tol in tolerance.items():
            a, b = old[metric].dropna().to_numpy(float), new[metric].dropna().to_numpy(float)
            if len(a) == 0 or len(b) == 0:
                continue
            higher_better = HIGHER_IS_BETTER.get(metric, False)
            change = (b.mean() - a.mean()) * (-1 if higher_better else 1)  # > 0: worse
            scale = max(abs(a.mean()), 1e-12)
            if change / scale > tol:
                p = permutation_test(a, b)
                if p < alpha:
                    found.append(Regression(config, workload, metric, float(a.mean()), float(b.mean()), p))
    return found
