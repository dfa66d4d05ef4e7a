"""A study in MLflow: one run per study, every trial a nested run under it, and the figures a user looks at to
judge the search (optimisation history, parameter importances, the cost/SLO Pareto front) on the study's run.

Studies live in their own MLflow experiment (`<experiment>-tuning`), not among the Spark runs: an analysis of
Spark runs reads a suite's children or an experiment's runs, and simulated trials must never be mistaken for
measured runs there.

Recording is idempotent: a trial already recorded (tag tuning.trial) is not recorded again, so a resumed study
(a retried Airflow task) adds only its new trials to the same study run.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from analysis.tuning.screening import Screened, judged_attainment, ranked
from analysis.tuning.space import SearchSpace

STUDY_KIND = "tuning-study"
TRIAL_KIND = "tuning-trial"
TRIAL_METRICS = ("slo_attainment", "slo_attainment_low", "latency_p95_s", "scaling_actions")


def tuning_experiment(experiment: str) -> str:
    return f"{experiment}-tuning"


def _experiment_id(client: MlflowClient, name: str, tracking_uri: str) -> str:
    from jobs.recording.recorder import ensure_experiment

    return ensure_experiment(client, name, tracking_uri)


def study_run(client: MlflowClient, experiment_id: str, study_name: str, params: dict[str, Any],
              tags: dict[str, str]) -> str:
    """The study's run: the one recorded before under this study name (a resumed study), else a new one."""
    found = client.search_runs([experiment_id], max_results=1,
                               filter_string=f"tags.kind = '{STUDY_KIND}' and tags.`tuning.study` = '{study_name}'")
    if found:
        return found[0].info.run_id
    run = client.create_run(experiment_id, run_name=f"study {study_name}",
                            tags={"kind": STUDY_KIND, "tuning.study": study_name, **tags})
    client.log_batch(run.info.run_id, params=[Param(k, str(v)[:6000]) for k, v in params.items()])
    return run.info.run_id


def record_trials(client: MlflowClient, experiment_id: str, parent_id: str, study: optuna.Study,
                  tags: dict[str, str]) -> int:
    """A nested run per finished trial not yet recorded; returns how many were added."""
    done = {r.data.tags.get("tuning.trial") for r in client.search_runs(
        [experiment_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}'", max_results=50000)}
    added = 0
    now = int(time.time() * 1000)
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,
                                                          optuna.trial.TrialState.PRUNED)):
        if str(trial.number) in done:
            continue
        attrs = trial.user_attrs
        params = attrs.get("params", trial.params)
        run_tags = {"mlflow.parentRunId": parent_id, "kind": TRIAL_KIND, "tuning.trial": str(trial.number),
                    "tuning.study": study.study_name, "config": attrs.get("label", ""),
                    "trial.state": trial.state.name, **tags}
        if "invalid" in attrs:
            run_tags["invalid"] = attrs["invalid"][:5000]
        run = client.create_run(experiment_id, run_name=f"trial {trial.number}: {attrs.get('label', 'invalid')}",
                                tags=run_tags)
        metrics = []
        if trial.state == optuna.trial.TrialState.COMPLETE:
            metrics.append(Metric("cost_slot_seconds", float(trial.value), now, 0))
            metrics += [Metric(k, float(attrs[k]), now, 0) for k in TRIAL_METRICS if attrs.get(k) is not None]
            constraints = trial.constraints  # Optuna's: feasible when every value is <= 0
            metrics += [Metric(f"constraint_{k}", float(v), now, 0) for k, v in constraints.items()]
            if constraints:
                metrics.append(Metric("feasible", float(all(v <= 0 for v in constraints.values())), now, 0))
        client.log_batch(run.info.run_id, metrics=metrics,
                         params=[Param(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
                                 for k, v in params.items()])
        client.set_terminated(run.info.run_id, "FINISHED" if trial.state == optuna.trial.TrialState.COMPLETE
                              else "KILLED")
        added += 1
    return added


def figures(study: optuna.Study, slo_target: float, folder: Path) -> list[Path]:
    """history.png, importances.png, pareto.png of the study (those that can be drawn: importances need at least
    two completed trials that differ)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    if not trials:
        return []
    feasible = [judged_attainment(t) >= slo_target for t in trials]
    costs = [float(t.value) for t in trials]
    out = []

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter([t.number for t, f in zip(trials, feasible) if f], [c for c, f in zip(costs, feasible) if f],
               s=14, label="feasible (meets the SLO target)")
    ax.scatter([t.number for t, f in zip(trials, feasible) if not f], [c for c, f in zip(costs, feasible) if not f],
               s=14, marker="x", color="grey", label="misses the SLO target")
    best, xs, ys = None, [], []
    for t, c, f in zip(trials, costs, feasible):
        if f and (best is None or c < best):
            best = c
        if best is not None:
            xs.append(t.number)
            ys.append(best)
    if xs:
        ax.step(xs, ys, where="post", color="C3", label="least feasible cost so far")
    ax.set(xlabel="trial", ylabel="cost (slot-seconds, simulated)", title=f"optimisation history: {study.study_name}")
    ax.legend(fontsize=8)
    out.append(_save(fig, folder / "history.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    slo = [100 * judged_attainment(t) for t in trials]
    ax.scatter(costs, slo, s=14, color="grey", label="trials")
    front = pareto_front(list(zip(costs, slo)))
    ax.plot([costs[i] for i in front], [slo[i] for i in front], "o-", color="C0", label="Pareto front")
    ax.axhline(100 * slo_target, color="C3", linestyle="--", label=f"SLO target {100 * slo_target:g} %")
    ax.set(xlabel="cost (slot-seconds, simulated)", ylabel="SLO attainment as judged (%)",
           title="cost vs SLO attainment (noisy plant: the runs' lower quantile)")
    ax.legend(fontsize=8)
    out.append(_save(fig, folder / "pareto.png"))

    importances = parameter_importances(study)
    if importances:
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.4 * len(importances)))
        names = list(importances)[::-1]
        ax.barh(names, [importances[n] for n in names])
        ax.set(xlabel="importance for the cost (fANOVA)", title="parameter importances")
        out.append(_save(fig, folder / "importances.png"))
    return out


def parameter_importances(study: optuna.Study) -> dict[str, float]:
    """Optuna's fANOVA importances of the searched parameters for the cost; {} when they cannot be estimated
    (fewer than two completed trials, or nothing varied)."""
    try:
        return {k: float(v) for k, v in optuna.importance.get_param_importances(study).items()}
    except (RuntimeError, ValueError):
        return {}


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both cost (lower) and SLO attainment (higher), by cost."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best_slo = [], float("-inf")
    for i in order:
        if points[i][1] > best_slo:
            front.append(i)
            best_slo = points[i][1]
    return front


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def record_study(study: optuna.Study, space: SearchSpace, *, tracking_uri: str, experiment: str,
                 slo_target: float, params: dict[str, Any], tags: dict[str, str]) -> str:
    """Record the study (its run, its trials as nested runs, figures, ranking); returns the study's run id."""
    client = MlflowClient(tracking_uri)
    experiment_id = _experiment_id(client, tuning_experiment(experiment), tracking_uri)
    run_id = study_run(client, experiment_id, study.study_name, params, tags)
    added = record_trials(client, experiment_id, run_id, study, {k: v for k, v in tags.items()
                                                                  if k in ("controller", "workload")})
    best: list[Screened] = ranked(study, space, slo_target)
    now = int(time.time() * 1000)
    summary = [Metric("trials", float(len(study.trials)), now, 0)]
    feasible = [s for s in best if s.feasible(slo_target)]
    summary.append(Metric("feasible_trials", float(len(feasible)), now, 0))
    if feasible:
        summary.append(Metric("best_cost_slot_seconds", feasible[0].cost_slot_seconds, now, 0))
        summary.append(Metric("best_slo_attainment", feasible[0].slo_attainment, now, 0))
        summary.append(Metric("best_slo_attainment_judged", feasible[0].judged_attainment, now, 0))
    client.log_batch(run_id, metrics=summary,
                     tags=[RunTag("tuning.best", feasible[0].label if feasible else "none feasible"),
                           RunTag("tuning.best_trial", str(feasible[0].trial) if feasible else "")])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for path in figures(study, slo_target, folder):
            client.log_artifact(run_id, str(path), "figures")
        (folder / "ranking.json").write_text(json.dumps([s.__dict__ for s in best], indent=2, default=str))
        (folder / "space.txt").write_text("\n".join(space.describe()) + "\n")
        importances = parameter_importances(study)
        (folder / "importances.json").write_text(json.dumps(importances, indent=2))
        for name in ("ranking.json", "space.txt", "importances.json"):
            client.log_artifact(run_id, str(folder / name))
    client.set_tag(run_id, "tuning.trials_recorded", str(added + int(client.get_run(run_id).data.tags.get(
        "tuning.trials_recorded", "0"))))
    client.set_terminated(run_id, "FINISHED")
    return run_id
