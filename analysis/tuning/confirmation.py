"""From screened candidates to the Spark runs that confirm them, within a budget of Spark minutes.

The plant model ranks configurations cheaply; only Spark says what they really cost. A confirmation runs, per
workload, the controller defaults and the top-k screened configurations of every studied controller over the
seeds, as one suite (the champion/challenger rule then decides on it). Each case carries its provenance as tags
(study, trial, calibration), so whatever is promoted says where it came from.

Budget: Spark minutes are the scarce resource on a small cluster. Cases are planned in priority order — per
workload, each controller's defaults and its best screened configuration first (the comparison the user asked
for), then the current champion (so the rule can compare with it), then the next-ranked candidates — and a
configuration is confirmed over all its seeds or not at all: a configuration that does not fit is left out and
named, never half-run. An estimate of a case's minutes is its workload length plus a fixed start-up cost per run.
While the cases run, analysis.budget checks what was really spent before each one starts.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from analysis.suite import Case

# the project's choice: Spark start-up, warm-up and the record at the end cost about 20 s per run on the 2-core
# machine (docs/benchmarks.md); 30 s leaves room for a busier machine. Configurable per call.
RUN_OVERHEAD_S = 30.0


class BudgetError(ValueError):
    """The budget cannot confirm anything (0 minutes or trials, or less than the smallest useful confirmation)."""


@dataclass(frozen=True)
class Candidate:
    """A configuration to confirm on Spark, and where it came from."""

    label: str  # the suite variant: controller[:param=value,...]
    workload: str
    role: str  # "defaults", "top-1", "top-2", ..., "champion", or "oracle" (the lower bound, for cost ÷ oracle)
    controller: str = ""
    study: str = ""
    trial: int | None = None
    calibration: str = ""
    study_run_id: str = ""
    simulated_cost: float | None = None
    simulated_slo: float | None = None

    def tags(self) -> dict[str, str]:
        """The MLflow tags the confirmation run carries (and a promoted model version copies)."""
        if self.role in ("champion", "oracle"):
            return {"tuning.role": self.role}
        tags = {"tuning.role": self.role, "tuning.study": self.study, "tuning.calibration": self.calibration,
                "tuning.study_run_id": self.study_run_id}
        if self.trial is not None:
            tags["tuning.trial"] = str(self.trial)
        return {k: v for k, v in tags.items() if v}


@dataclass
class Plan:
    """The confirmation suite: its cases with their tags, and what the budget left out."""

    cases: list[Case] = field(default_factory=list)
    case_tags: list[dict[str, str]] = field(default_factory=list)
    case_minutes: list[float] = field(default_factory=list)  # each case's estimate: what the budget gate expects
    left_out: list[str] = field(default_factory=list)
    minutes: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"cases": [asdict(c) for c in self.cases], "case_tags": self.case_tags,
                "case_minutes": self.case_minutes, "left_out": self.left_out, "minutes": self.minutes}


def _priority(candidate: Candidate) -> tuple[int, int]:
    if candidate.role in ("defaults", "top-1"):
        return (0, 0)
    if candidate.role in ("champion", "oracle"):
        return (1, 0)
    return (2, int(candidate.role.removeprefix("top-")))


def case_minutes(duration_s: float, overhead_s: float = RUN_OVERHEAD_S) -> float:
    return (duration_s + overhead_s) / 60.0


def plan(candidates: list[Candidate], seeds: list[int], durations: dict[str, float], budget_minutes: float,
         overhead_s: float = RUN_OVERHEAD_S) -> Plan:
    """The cases to run, in priority order within the budget (module docstring). A label met twice on a workload
    (a top configuration that is the defaults, say) runs once, under its first role."""
    if budget_minutes <= 0:
        raise BudgetError(f"spark_minutes must be > 0, got {budget_minutes:g}: no Spark run could confirm anything")
    if not seeds:
        raise BudgetError("seeds: at least one seed is needed to confirm on Spark")
    out, seen = Plan(), set()
    ordered = sorted(enumerate(candidates), key=lambda ic: (_priority(ic[1]), ic[0]))
    for _, candidate in ordered:
        key = (candidate.label, candidate.workload)
        if key in seen:
            continue
        seen.add(key)
        cost = len(seeds) * case_minutes(durations[candidate.workload], overhead_s)
        if out.minutes + cost > budget_minutes + 1e-9:
            out.left_out.append(f"{candidate.label} on {candidate.workload} ({candidate.role}, {cost:.1f} Spark "
                                f"minutes): over the budget of {budget_minutes:g}")
            continue
        out.minutes += cost
        for seed in seeds:
            out.cases.append(Case(candidate.label, candidate.workload, seed))
            out.case_tags.append(candidate.tags())
            out.case_minutes.append(cost / len(seeds))
    if not out.cases:
        smallest = len(seeds) * case_minutes(min(durations.values()), overhead_s)
        raise BudgetError(f"spark_minutes {budget_minutes:g} cannot confirm a single configuration over "
                          f"{len(seeds)} seed(s): that takes about {smallest:.1f} minutes")
    return out
