"""Whether a challenger replaces the champion of a workload class: the promotion rule, as a pure function of the
suite's runs, so it is tested on fabricated tables and explained in the report in the same words it is applied.

PROMOTION RULE. Per workload class, on the runs of one suite:
0. The oracle is a lower bound, never a candidate: it knows the future schedule, which no live job does.
1. Only complete configurations are candidates: every seed of the suite FINISHED, none FAILED or missing.
2. Candidates are ordered by the ranking rule (analysis.stats), ties keeping the champion.
3. The first candidate must meet the SLO target; if it is the champion, nothing changes.
4. With no champion yet, the first candidate becomes champion.
5. Otherwise it replaces the champion only if it beats the champion run in the same suite on the deciding metric —
   cost when the champion meets the SLO target, SLO attainment when it does not — by at least `min_margin`
   (relative) AND significantly (permutation test over seeds, p < alpha). A champion not run in the suite cannot be
   compared, so nothing changes.
Either way the decision carries its reasons, and the numbers behind them, so it can be logged.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from analysis.runs import ORACLE
from analysis.stats import ALPHA, permutation_test, rank
from params.run import RUN_SETTINGS

MIN_MARGIN = 0.05  # project's choice: a 5 % better cost (or attainment) is worth a change of configuration


@dataclass(frozen=True)
class Incumbent:
    """The current champion of a workload class as the registry holds it."""
    version: str
    config: str
    config_id: str


@dataclass
class PromotionDecision:
    """Whether a workload class's champion changes, and why (not a controller's scaling decision,
    controllers.types.Decision)."""

    workload_class: str
    promote: bool
    challenger: str | None
    champion: str | None
    reasons: list[str]
    evidence: dict[str, Any] = field(default_factory=dict)
    challenger_config_id: str | None = None
    new_version: str | None = None  # set by the registry step once it has registered the challenger

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if self.promote:
            head = f"{self.workload_class}: PROMOTE {self.challenger}" + (
                f" over {self.champion}" if self.champion else " (first champion)")
            if self.new_version:
                head += f" as version {self.new_version}"
        else:
            head = f"{self.workload_class}: keep " + (self.champion or "no champion")
        return head + " — " + "; ".join(self.reasons)


def slo_target_of(runs: pd.DataFrame, given: float | None = None) -> float:
    """The SLO target the runs are judged against: `given`, else the one they recorded (the highest, if they differ),
    else the declared default (params.run)."""
    if given is not None:
        return given
    recorded = runs["slo_target"].dropna() if "slo_target" in runs else pd.Series(dtype=float)
    recorded = recorded[recorded > 0]
    return float(recorded.max()) if len(recorded) else RUN_SETTINGS["slo_target"].default


def _runs_of(runs: pd.DataFrame, config_id: str) -> pd.DataFrame:
    return runs[runs["config_id"] == config_id]


def completeness(runs: pd.DataFrame, expected_seeds: set[int]) -> dict[str, str]:
    """config -> why it is not complete (FAILED runs, missing seeds); complete configurations are absent."""
    problems = {}
    for config, group in runs.groupby("config", sort=True):
        bad = group[group["status"] != "FINISHED"]
        finished_seeds = set(group.loc[group["status"] == "FINISHED", "seed"].dropna().astype(int))
        missing = sorted(expected_seeds - finished_seeds - set(bad["seed"].dropna().astype(int)))
        parts = []
        if len(bad):
            parts.append(f"{len(bad)} run(s) {'/'.join(sorted(set(bad['status'])))} (seeds "
                         f"{', '.join(str(s) for s in bad['seed'].tolist())})")
        if missing:
            parts.append(f"seeds {', '.join(map(str, missing))} not run")
        if parts:
            problems[config] = "; ".join(parts)
    return problems


def decide(workload_class: str, runs: pd.DataFrame, incumbent: Incumbent | None, slo_target: float,
           expected_seeds: set[int] | None = None, min_margin: float = MIN_MARGIN,
           alpha: float = ALPHA) -> PromotionDecision:
    """Apply the promotion rule (module docstring) to the runs of one suite on one workload class."""
    champion_label = incumbent.config if incumbent else None
    if "controller" in runs:
        runs = runs[runs["controller"] != ORACLE]  # rule 0
    if expected_seeds is None:
        expected_seeds = set(runs["seed"].dropna().astype(int))
    incomplete = completeness(runs, expected_seeds)
    reasons = [f"not a candidate: {c} ({why})" for c, why in incomplete.items()]
    evidence: dict[str, Any] = {"slo_target": slo_target, "expected_seeds": sorted(expected_seeds),
                                "min_margin": min_margin, "alpha": alpha, "incomplete": incomplete}

    def keep(*why: str) -> PromotionDecision:
        return PromotionDecision(workload_class, False, None, champion_label, [*why, *reasons], evidence)

    complete = runs[~runs["config"].isin(incomplete) & (runs["status"] == "FINISHED")]
    if complete.empty:
        return keep("no configuration completed every seed of the suite")
    if incumbent is not None:
        # the champion may run under another label in this suite; its identity is the config id
        in_suite = runs.loc[runs["config_id"] == incumbent.config_id, "config"]
        if len(in_suite):
            champion_label = in_suite.iloc[0]
    ranked = rank(complete, slo_target, incumbent=champion_label)
    evidence["ranking"] = ranked[["rank", "config", "runs", "slo_attainment", "cost_slot_seconds",
                                  "meets_slo"]].to_dict("records")
    first = ranked.iloc[0]
    if not first["meets_slo"]:
        return keep(f"no complete configuration meets the SLO target {slo_target:.0%} (best: {first['config']} "
                    f"at {first['slo_attainment']:.1%})")
    if first["config"] == champion_label:
        return keep(f"the champion {champion_label} ranks first")
    challenger_id = complete.loc[complete["config"] == first["config"], "config_id"].iloc[0]
    if incumbent is None:
        return PromotionDecision(
            workload_class, True, first["config"], None,
            [f"no champion yet; {first['config']} ranks first among complete configurations and meets the SLO target "
             f"({first['slo_attainment']:.1%}, cost {first['cost_slot_seconds']:.0f} slot-s)", *reasons], evidence,
            challenger_config_id=challenger_id)
    champion_runs = _runs_of(runs, incumbent.config_id)
    champion_finished = champion_runs[champion_runs["status"] == "FINISHED"]
    if champion_runs.empty:
        return keep(f"the champion {champion_label} was not run in this suite, so {first['config']} cannot be "
                    "compared with it on the same suite")
    if champion_finished.empty:
        return PromotionDecision(
            workload_class, True, first["config"], champion_label,
            [f"the champion {champion_label} failed every run of this suite; {first['config']} completed them and "
             "meets the SLO target", *reasons], evidence, challenger_config_id=challenger_id)
    challenger_runs = _runs_of(complete, challenger_id)
    champion_meets = champion_finished["slo_attainment"].mean() >= slo_target
    metric = "cost_slot_seconds" if champion_meets else "slo_attainment"
    old, new = champion_finished[metric].to_numpy(float), challenger_runs[metric].to_numpy(float)
    gain = (old.mean() - new.mean()) if metric == "cost_slot_seconds" else (new.mean() - old.mean())
    relative = gain / max(abs(old.mean()), 1e-12)
    p = permutation_test(old, new)
    evidence.update({"deciding_metric": metric, "champion_mean": float(old.mean()),
                     "challenger_mean": float(new.mean()), "relative_gain": float(relative), "p_value": float(p)})
    what = "cost" if metric == "cost_slot_seconds" else "SLO attainment"
    numbers = (f"{what} {old.mean():.4g} -> {new.mean():.4g} ({relative:+.1%}, p = {p:.3f}, "
               f"{len(old)} vs {len(new)} seeds)")
    if relative < min_margin:
        return keep(f"{first['config']} beats the champion {champion_label} by less than the margin "
                    f"{min_margin:.0%}: {numbers}")
    if p >= alpha:
        return keep(f"{first['config']} is better than the champion {champion_label} but not significantly "
                    f"(p >= {alpha}): {numbers}")
    return PromotionDecision(workload_class, True, first["config"], champion_label,
                             [f"{first['config']} beats the champion {champion_label} on {what} by at least "
                              f"{min_margin:.0%} and significantly: {numbers}", *reasons], evidence,
                             challenger_config_id=challenger_id)
