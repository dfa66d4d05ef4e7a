"""One study end to end, as the tuning DAG's screening task runs it: build the space, simulate the trials in the
calibrated plant (resuming a stored study), record it in MLflow, and name the candidates to confirm on Spark.

Kept apart from the command (analysis.tuning.__main__, which prints comparisons for a person) so the DAG's task
is one call with plain arguments, tested without Airflow.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from analysis.tuning.calibrations import load_calibration
from analysis.tuning.confirmation import Candidate
from analysis.tuning.records import record_study
from analysis.tuning.screening import (NOISE_DRAWS, RECHECK_DRAWS, RECHECK_TOP, RELIABLE_QUANTILE, SCREEN_HEADROOM,
                                       evaluate, ranked, recheck, screen)
from analysis.tuning.space import build_space
from jobs.topology import load_topology
from params.run import RUN_SETTINGS
from simulator.calibration import Calibration
from workloads import Schedule, load_workload


@dataclass(frozen=True)
class StudyRequest:
    controller: str
    workload: str
    calibration: str  # a calibration YAML or the MLflow run id of one
    seeds: tuple[int, ...] = (1, 2, 3)
    trials: int = 60
    k: int = 3
    duration_s: float | None = None
    slo_latency_s: float = RUN_SETTINGS["slo_latency_s"].default
    slo_target: float = RUN_SETTINGS["slo_target"].default
    trigger_s: float = RUN_SETTINGS["trigger_s"].default
    max_degree: int = RUN_SETTINGS["max_degree"].default
    topology: str = "default"
    sampler: str = "tpe"
    sampler_seed: int = 1
    ranges: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    headroom: float = SCREEN_HEADROOM  # events judged on time in the plant within headroom x the SLO latency
    draws: int = NOISE_DRAWS  # noisy runs per seed and trial (when the calibration measured noise)
    quantile: float = RELIABLE_QUANTILE  # feasibility judged on this lower quantile of the runs' attainment
    recheck_draws: int = RECHECK_DRAWS  # noisy runs per seed of the best configurations before naming candidates


def study_name(prefix: str, controller: str, workload: str) -> str:
    """A stable name per (DAG run, controller, workload): a retried task finds and resumes its own study."""
    return re.sub(r"[^A-Za-z0-9_.:+-]", "_", f"{prefix}.{controller}.{workload}")


def run_study(request: StudyRequest, *, name: str, storage: str | None, tracking_uri: str, experiment: str,
              calibration: Calibration | None = None) -> tuple[list[Candidate], str]:
    """Screen, record; returns (the defaults and the top-k candidates, the study's MLflow run id)."""
    space = build_space(request.controller, request.ranges, request.fixed)
    calibration = calibration or load_calibration(request.calibration, tracking_uri)
    topology = load_topology(request.topology)
    plant = calibration.plant(topology.names, request.trigger_s, request.max_degree)
    spec = load_workload(request.workload)
    schedules = [Schedule(spec.with_overrides(duration_s=request.duration_s, seed=s)) for s in request.seeds]
    settings = dict(slo_latency_s=request.slo_latency_s, slo_target=request.slo_target, headroom=request.headroom,
                    draws=request.draws, quantile=request.quantile,
                    # a placement controller ('threshold+sousa') moves this operator's key groups in the plant
                    keyed_operator=next(op.name for op in topology.operators if op.keyed))
    study = screen(space, schedules, plant, trials=request.trials, sampler=request.sampler,
                   seed=request.sampler_seed, storage=storage, study_name=name, **settings)
    calibration_ref = calibration.run_id or calibration.source
    params = {"controller": request.controller, "workload": request.workload,
              "seeds": ",".join(map(str, request.seeds)), "duration_s": request.duration_s or spec.duration_s,
              "sampler": request.sampler, "sampler_seed": request.sampler_seed, "slo.latency_s": request.slo_latency_s,
              "slo.target": request.slo_target, "screen.headroom": request.headroom,
              "calibration": calibration_ref, "topology": request.topology,
              "calibration.master": calibration.master or "unknown",
              "calibration.age_h": "unknown" if calibration.age_hours() is None else f"{calibration.age_hours():.1f}",
              "plant.slots": plant.slots, "plant.batch_overhead_s": plant.batch_overhead_s,
              "plant.stage_overhead_s": plant.stage_overhead_s,
              "plant.batch_overhead_sigma": plant.batch_overhead_sigma,
              "plant.service_sigma": ",".join(f"{k}={v:.3g}" for k, v in plant.service_sigma.items()) or "none",
              "screen.noise_draws": request.draws if plant.noisy else 0, "screen.noise_quantile": request.quantile,
              "screen.recheck_draws": request.recheck_draws if plant.noisy else 0,
              "trigger_s": request.trigger_s, "max_degree": request.max_degree}
    tags = {"controller": request.controller, "workload": request.workload, "tuning.calibration": calibration_ref}
    run_id = record_study(study, space, tracking_uri=tracking_uri, experiment=experiment,
                          slo_target=request.slo_target, params=params, tags=tags)
    # candidates are named, and the defaults figured, on the recheck's draws (screening's when there is none)
    judged = {**settings, "draws": request.recheck_draws or request.draws}
    defaults = evaluate(request.controller, dict(space.fixed), schedules, plant, **judged)
    best = recheck(request.controller, ranked(study, space, request.slo_target)[:RECHECK_TOP], schedules, plant,
                   **{**judged, "draws": request.recheck_draws})
    if best and best[0].trial is not None and plant.noisy and request.recheck_draws > 0:
        from mlflow.tracking import MlflowClient

        MlflowClient(tracking_uri).log_dict(run_id, [{"trial": s.trial, "label": s.label, **{
            k: getattr(s, k) for k in ("cost_slot_seconds", "slo_attainment", "slo_attainment_low")}} for s in best],
            "recheck.json")
    common = dict(workload=request.workload, controller=request.controller, study=name,
                  calibration=calibration_ref, study_run_id=run_id)
    tried = {t.user_attrs.get("label"): t.number for t in reversed(study.trials)}  # the first trial of each
    candidates = [Candidate(defaults.label, role="defaults", trial=tried.get(defaults.label),
                            simulated_cost=defaults.cost_slot_seconds, simulated_slo=defaults.slo_attainment,
                            **common)]
    for i, found in enumerate(best[:request.k], start=1):
        candidates.append(Candidate(found.label, role=f"top-{i}", trial=found.trial,
                                    simulated_cost=found.cost_slot_seconds, simulated_slo=found.slo_attainment,
                                    **common))
    return candidates, run_id


def durations(workloads: Sequence[str], duration_s: float | None) -> dict[str, float]:
    return {w: duration_s if duration_s is not None else load_workload(w).duration_s for w in workloads}
