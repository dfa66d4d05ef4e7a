"""What the tuning DAG's tasks do, as plain functions (the DAG file stays thin; these are tested without Airflow).

    validate -> screen (one study per controller x workload, in the calibrated plant, recorded in MLflow)
             -> open_confirmation (plan the Spark cases within the budget, open the suite's parent run)
             -> run_case (mapped Spark jobs, pruned when their SLO target is out of reach; each starts only
                          if the Spark minutes spent so far leave room for it: analysis.budget)
             -> analyse -> promote -> close   (as for any suite: analysis.orchestration)
"""
from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from analysis.suite import SuiteError, SuiteRequest
from analysis.tuning.calibrations import load_calibration
from analysis.tuning.confirmation import Candidate, plan
from analysis.tuning.screening import (NOISE_DRAWS, RECHECK_DRAWS, RELIABLE_QUANTILE, SAMPLERS, SCREEN_HEADROOM,
                                       headroom_problem, noise_problems)
from analysis.tuning.space import SpaceError, build_space
from analysis.tuning.study import StudyRequest, durations, run_study, study_name
from jobs.topology import load_topology
from simulator.calibration import CalibrationError


# the project's choice: a calibration older than a day is named in a warning (the same machine's batch overhead
# measured 0.42-0.75 s on different days); not an error, since re-measuring is the user's call
STALE_CALIBRATION_H = 24.0


class TuningError(ValueError):
    """Every problem of a tuning request, one per line, each naming the parameter."""


def latest_calibration(tracking_uri: str) -> str | None:
    """The run id of the most recent calibration in the store (tag kind=calibration), if any."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    found = client.search_runs(experiments, filter_string="tags.kind = 'calibration' and attributes.status = "
                               "'FINISHED'", order_by=["attributes.start_time DESC"], max_results=1) if experiments \
        else []
    return found[0].info.run_id if found else None


def validate(params: dict[str, Any], tracking_uri: str) -> dict[str, Any]:
    """The request, checked in full before any trial or Spark job (all problems together); the calibration is
    resolved to the reference the studies will name (an empty one means the store's latest calibration), must have
    been measured on the master the confirmation runs use (`params.master`, when known), and is named in a warning
    when older than STALE_CALIBRATION_H (the returned request's `warnings`)."""
    problems, warnings = [], []
    controllers = params.get("controllers") or []
    for i, controller in enumerate(controllers):
        try:
            build_space(controller)
        except SpaceError as exc:
            problems.append(f"params.controllers[{i}]: {exc}")
    for key in ("trials", "k"):
        value = params.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            problems.append(f"params.{key}: must be an integer >= 1, got {value!r}")
    minutes = params.get("spark_minutes")
    if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or minutes <= 0:
        problems.append(f"params.spark_minutes: must be a number > 0 (the Spark minutes confirmation may use), "
                        f"got {minutes!r}")
    if headroom_problem(params.get("screen_headroom", SCREEN_HEADROOM)):
        problems.append(f"params.screen_headroom: {headroom_problem(params['screen_headroom'])}")
    problems += [f"params.noise_{problem}" for problem in noise_problems(
        params.get("noise_draws", NOISE_DRAWS), params.get("noise_quantile", RELIABLE_QUANTILE))]
    recheck_draws = params.get("recheck_draws", RECHECK_DRAWS)
    if isinstance(recheck_draws, bool) or not isinstance(recheck_draws, int) or recheck_draws < 0:
        problems.append(f"params.recheck_draws: must be an integer >= 0 (noisy runs per seed of the best "
                        f"configurations before they are named; 0: no recheck), got {recheck_draws!r}")
    if params.get("sampler") not in SAMPLERS:
        problems.append(f"params.sampler: expected one of {', '.join(SAMPLERS)}, got {params.get('sampler')!r}")
    try:  # workloads, seeds, SLO and duration as any suite checks them
        SuiteRequest.from_mapping({"controllers": list(controllers) or ["static"],
                                   **{k: params[k] for k in ("workloads", "seeds", "duration_s", "slo_latency_s",
                                                             "slo_target") if k in params}})
    except SuiteError as exc:
        problems.extend(line for line in str(exc).splitlines() if "controllers[" not in line)
    reference = (params.get("calibration") or "").strip() or latest_calibration(tracking_uri)
    if not reference:
        problems.append("params.calibration: none given and the MLflow store has no calibration run: run "
                        "python -m jobs.calibrate (once per machine and topology) or give a calibration file")
    else:
        try:
            calibration = load_calibration(reference, tracking_uri)
            calibration.check_operators(load_topology("default").names)
            calibration.check_master(params.get("master"))
            age = calibration.age_hours()
            if age is not None and age > STALE_CALIBRATION_H:
                warnings.append(f"params.calibration: {calibration.source} was measured {age / 24:.1f} days ago; "
                                f"the machine's costs drift (python -m jobs.calibrate measures them again)")
        except CalibrationError as exc:
            problems.append(f"params.calibration: {exc}")
    if problems:
        raise TuningError("invalid tuning request:\n" + "\n".join(problems))
    return {**params, "calibration": reference, "warnings": warnings}


def screen_all(request: dict[str, Any], *, prefix: str, storage: str, tracking_uri: str, experiment: str
               ) -> dict[str, Any]:
    """One study per controller x workload; returns the candidates (as dicts) and the studies' run ids."""
    calibration = load_calibration(request["calibration"], tracking_uri)
    candidates, studies = [], {}
    for workload in request["workloads"]:
        for controller in request["controllers"]:
            study = StudyRequest(controller, workload, request["calibration"], seeds=tuple(request["seeds"]),
                                 trials=request["trials"], k=request["k"], duration_s=request.get("duration_s"),
                                 slo_latency_s=request["slo_latency_s"], slo_target=request["slo_target"],
                                 sampler=request["sampler"],
                                 headroom=request.get("screen_headroom", SCREEN_HEADROOM),
                                 draws=request.get("noise_draws", NOISE_DRAWS),
                                 quantile=request.get("noise_quantile", RELIABLE_QUANTILE),
                                 recheck_draws=request.get("recheck_draws", RECHECK_DRAWS))
            name = study_name(prefix, controller, workload)
            found, run_id = run_study(study, name=name, storage=storage, tracking_uri=tracking_uri,
                                      experiment=experiment, calibration=calibration)
            candidates += [asdict(c) for c in found]
            studies[name] = run_id
    return {"candidates": candidates, "studies": studies}


def open_confirmation(request: dict[str, Any], screened: dict[str, Any], *, tracking_uri: str, experiment: str,
                      dag_id: str, run_id: str, include_champions: bool = True, with_oracle: bool = False
                      ) -> dict[str, Any]:
    """Plan the confirmation within the budget and open its suite (the parent run records the plan and what the
    budget left out); returns what the Spark tasks need, as analysis.orchestration.prepare does. `with_oracle` adds
    the oracle with the study's calibrated costs on every workload, so the report gives each cost ÷ the oracle's."""
    from mlflow.tracking import MlflowClient

    from analysis.orchestration import champion_variants, prepare

    candidates = [Candidate(**c) for c in screened["candidates"]]
    if include_champions:
        candidates += [Candidate(label, workload, "champion")
                       for workload, label in champion_variants(tracking_uri, tuple(request["workloads"])).items()]
    if with_oracle:
        from jobs.calibrate import variant

        oracle = variant(load_calibration(request["calibration"], tracking_uri).oracle_params())
        candidates += [Candidate(oracle, workload, "oracle") for workload in request["workloads"]]
    seeds = list(request["seeds"])
    planned = plan(candidates, seeds, durations(request["workloads"], request.get("duration_s")),
                   float(request["spark_minutes"]))
    labels = list(dict.fromkeys(c.variant for c in planned.cases))
    suite = SuiteRequest.from_mapping({"controllers": labels, "workloads": sorted({c.workload for c in planned.cases}),
                                       "seeds": seeds, "duration_s": request.get("duration_s"),
                                       "slo_latency_s": request["slo_latency_s"], "slo_target": request["slo_target"]})
    suite = replace(suite, stop_when_slo_unreachable=True)
    opened = prepare({}, tracking_uri=tracking_uri, experiment=experiment, kind="tuning", dag_id=dag_id,
                     run_id=run_id, include_champions=False, request=suite, cases=planned.cases,
                     case_tags=planned.case_tags)
    client = MlflowClient(tracking_uri)
    parent = opened["parent_run_id"]
    client.log_dict(parent, {**planned.to_dict(), "studies": screened["studies"],
                             "candidates": screened["candidates"]}, "tuning/plan.json")
    client.set_tag(parent, "tuning.studies", ",".join(screened["studies"].values())[:5000])
    client.set_tag(parent, "tuning.calibration", request["calibration"])
    client.log_param(parent, "spark_minutes.budget", request["spark_minutes"])
    client.log_param(parent, "spark_minutes.planned", round(planned.minutes, 2))
    if planned.left_out:
        client.set_tag(parent, "tuning.left_out", "; ".join(planned.left_out)[:5000])
    return {**opened, "left_out": planned.left_out, "planned_minutes": planned.minutes,
            "case_minutes": planned.case_minutes, "budget_minutes": float(request["spark_minutes"])}
