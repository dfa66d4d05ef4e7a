"""What the DAGs' tasks do, as plain functions: the DAG files stay thin (the scheduler parses them often) and these
steps are tested without Airflow.

An experiment is: validate the request -> open a parent MLflow run -> one Spark job per case (submitted by the
DAG) -> analyse (report on the parent run) -> promote -> close the parent run with the suite's status.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from analysis.budget import skipped_cases
from analysis.promote import promote_suite
from analysis.regression import DEFAULT_TOLERANCE, compare_suites, listing
from analysis.report import report_for_parent
from analysis.runs import DONE, load_runs
from analysis.suite import REQUEST_FIELDS, Case, SuiteError, SuiteRequest, open_parent
from jobs.champion import CHAMPION_ALIAS, model_name
from jobs.recording.attempts import CASE_TAG
from jobs.recording.recorder import REPO_ROOT

JOB_ENTRY_POINT = str(REPO_ROOT / "jobs" / "run.py")


def champions(tracking_uri: str, workloads) -> dict[str, Any]:
    """workload -> its champion's model version, for the workloads that have one."""
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri)
    found = {}
    for workload in workloads:
        try:
            found[workload] = client.get_model_version_by_alias(model_name(workload), CHAMPION_ALIAS)
        except MlflowException:
            continue
    return found


def champion_variants(tracking_uri: str, workloads: tuple[str, ...]) -> dict[str, str]:
    """workload -> the champion's configuration as a variant string, for workloads that have one."""
    import controllers

    return {workload: controllers.config_label(version.tags["controller"],
                                               json.loads(version.tags.get("params", "{}")))
            for workload, version in champions(tracking_uri, workloads).items()}


def prepare(params: dict[str, Any], *, tracking_uri: str, experiment: str, kind: str, dag_id: str, run_id: str,
            include_champions: bool = True, request: SuiteRequest | None = None, cases: list[Case] | None = None,
            case_tags: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Validate (raises SuiteError before anything is created), add the champions, open the parent run, and return
    what the Spark tasks need: one jobs/run.py argument list per case, in map-index order. `cases` (with their own
    `case_tags`) replaces the request's variants x workloads x seeds when each workload has its own variants (a
    tuning confirmation)."""
    request = request or SuiteRequest.from_mapping({k: v for k, v in params.items() if k in REQUEST_FIELDS})
    request = with_oracle(request, tracking_uri)
    # a champion is promoted for the benchmark topology's operators; a suite of other queries runs its own variants
    champions = (champion_variants(tracking_uri, request.workloads)
                 if include_champions and not request.queries and not request.spark_queries else {})
    extra = tuple(v for v in dict.fromkeys(champions.values()) if v not in request.variants)
    if extra:
        request = replace(request, variants=request.variants + extra)
    tags = {"kind": kind, "airflow.dag_id": dag_id, "airflow.run_id": run_id}
    parent = open_parent(tracking_uri, experiment, f"{dag_id} {run_id}", tags,
                         {"controllers": " | ".join(request.variants), "workloads": " | ".join(request.workloads),
                          **({"queries": " | ".join(request.queries)} if request.queries else {}),
                          **({"spark_queries": " | ".join(request.spark_queries)} if request.spark_queries else {}),
                          "seeds": ",".join(map(str, request.seeds)), "duration_s": request.duration_s,
                          "slo.latency_s": request.slo_latency_s, "slo.target": request.slo_target})
    client = MlflowClient(tracking_uri)
    client.log_dict(parent, {**asdict(request), "champions": champions}, "suite.json")
    planned = request.cases() if cases is None else cases
    arguments = []
    for i, case in enumerate(planned):
        args = case.run_args(request, experiment=experiment, tracking_uri=tracking_uri, parent_run_id=parent,
                             tags={**(case_tags[i] if case_tags else {}), "airflow.dag_id": dag_id,
                                   "airflow.run_id": run_id, CASE_TAG: str(i)})
        arguments.append(args)
    return {"parent_run_id": parent, "cases": arguments, "champions": champions, "case_count": len(arguments),
            "tolerance": request.tolerance}


def with_oracle(request: SuiteRequest, tracking_uri: str) -> SuiteRequest:
    """The request with the oracle added when it asks for it (`include_oracle`): the oracle with the costs of the
    store's latest calibration (`python -m jobs.calibrate`), measured on this machine, so that every run of the
    suite gets its cost and regret against the oracle. SuiteError when the store has no calibration."""
    if not request.include_oracle:
        return request
    from analysis.tuning.calibrations import load_calibration
    from analysis.tuning.pipeline import latest_calibration
    from jobs.calibrate import variant

    found = latest_calibration(tracking_uri)
    if found is None:
        raise SuiteError(f"include_oracle: no calibration in {tracking_uri} to give the oracle its costs; run "
                         "`python -m jobs.calibrate` (about a minute) on the master the suite runs on")
    # as `jobs.run --controller-config .local/calibration/oracle.yaml` runs it: the oracle's own headroom on Spark,
    # not the plant's exact-costs setting (headroom 1) that oracle_params gives the simulator
    params = {k: v for k, v in load_calibration(found, tracking_uri).oracle_params().items() if k != "headroom"}
    oracle = variant(params)
    return replace(request, variants=request.variants + (oracle,), include_oracle=False)


def case_run(tracking_uri: str, parent_run_id: str, case_index: int):
    """The MLflow run of one case (None if its job never got as far as creating it)."""
    client = MlflowClient(tracking_uri)
    parent = client.get_run(parent_run_id)
    found = client.search_runs([parent.info.experiment_id], max_results=1,
                               filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}' and "
                                             f"tags.`{CASE_TAG}` = '{case_index}'")
    return found[0] if found else None


def analyse(tracking_uri: str, parent_run_id: str, case_count: int) -> str:
    """The report on the parent run; runs the suite expected but that never started are named (those the
    Spark-minutes budget skipped apart)."""
    runs = load_runs(tracking_uri, parent_run_id=parent_run_id)
    path = report_for_parent(tracking_uri, parent_run_id)
    skipped = skipped_cases(MlflowClient(tracking_uri), parent_run_id)
    missing = case_count - len(skipped) - len(runs)
    text = f"report: {path}; {len(runs)} of {case_count} runs recorded, {(runs['status'] == 'FINISHED').sum()} finished"
    if skipped:
        text += f"; {len(skipped)} case(s) skipped by the Spark-minutes budget"
    if missing > 0:
        MlflowClient(tracking_uri).set_tag(parent_run_id, "missing_runs", str(missing))
        text += f"; {missing} case(s) never started a run"
    return text


def promote(tracking_uri: str, parent_run_id: str) -> list[str]:
    decisions = promote_suite(tracking_uri, parent_run_id)
    report_for_parent(tracking_uri, parent_run_id, decisions=decisions)  # the report shows the decision too
    return [d.summary() for d in decisions]


def close(tracking_uri: str, parent_run_id: str, case_count: int) -> str:
    """FINISHED only if every case finished (or was pruned on purpose: its SLO target was out of reach, or skipped
    on purpose: the Spark-minutes budget was spent, analysis.budget); anything else leaves the parent FAILED
    (and so never promoted)."""
    client = MlflowClient(tracking_uri)
    runs = load_runs(tracking_uri, parent_run_id=parent_run_id)
    skipped = skipped_cases(client, parent_run_id)
    ok = len(runs) + len(skipped) == case_count and runs["status"].isin(DONE).all()
    if skipped:
        client.set_tag(parent_run_id, "budget.stopped", f"{len(skipped)} of {case_count} case(s) skipped: the "
                       "Spark-minutes budget was spent; the report and the promotion use the complete configurations")
    status = "FINISHED" if ok else "FAILED"
    client.set_terminated(parent_run_id, status)
    return status


def previous_nightly(tracking_uri: str, experiment: str, dag_id: str, before_run: str) -> str | None:
    """The latest finished nightly parent run other than `before_run` (the reference for tonight)."""
    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    for run in client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=20,
                                  filter_string=f"tags.kind = 'nightly' and tags.`airflow.dag_id` = '{dag_id}' "
                                                "and attributes.status = 'FINISHED'"):
        if run.info.run_id != before_run:
            return run.info.run_id
    return None


def nightly_verdict(tracking_uri: str, parent_run_id: str, baselines: dict[str, str | None],
                    tolerance: dict[str, float] | None) -> tuple[bool, str]:
    """(passed, message) comparing tonight's suite with each baseline (name -> parent run id)."""
    lines, passed = [], True
    for name, baseline in baselines.items():
        if not baseline:
            lines.append(f"{name}: no baseline yet")
            continue
        found, problems = compare_suites(tracking_uri, baseline, parent_run_id, tolerance or DEFAULT_TOLERANCE)
        passed &= not found and not problems
        lines.append(f"against {name} ({baseline}):\n" + "\n".join("  " + x for x in listing(found, problems)
                                                                    .splitlines()))
    message = "\n".join(lines)
    MlflowClient(tracking_uri).log_text(parent_run_id, message + "\n", "nightly/verdict.txt")
    MlflowClient(tracking_uri).set_tag(parent_run_id, "nightly.verdict", "pass" if passed else "REGRESSION")
    return passed, message


SUITE_DIRS_ENV = "ELASTIC_SUITE_DIRS"  # folders (os.pathsep-separated) an operator allows suites from


def allowed_suite_dirs() -> list[Path]:
    """The project's suites/ folder, or the folders the deployment names in $ELASTIC_SUITE_DIRS."""
    configured = [Path(p) for p in os.environ.get(SUITE_DIRS_ENV, "").split(os.pathsep) if p.strip()]
    return [p.resolve() for p in configured] or [(REPO_ROOT / "suites").resolve()]


def suite_file(path: str) -> SuiteRequest:
    """A suite file given relative to the project (as the nightly DAG's param is) or absolute, and inside an allowed
    folder: whoever may trigger a DAG run must not make it read any file the workers can read (symbolic links and
    '..' are resolved before the check)."""
    candidate = Path(path)
    resolved = (candidate if candidate.is_absolute() else REPO_ROOT / candidate).resolve()
    allowed = allowed_suite_dirs()
    if not any(resolved.is_relative_to(folder) for folder in allowed):
        raise SuiteError(f"suite file {path!r} is outside the folders suites may come from "
                         f"({', '.join(str(f) for f in allowed)}); a deployment can allow others with "
                         f"{SUITE_DIRS_ENV}")
    return SuiteRequest.from_file(resolved)


def allowed_query_refs(refs, field_name: str = "queries") -> None:
    """A DAG run's `queries` may name modules installed on the workers (nexmark:q5, mypackage.queries:build), or
    .py files inside the folders suites may come from: whoever may trigger a DAG run must not make the workers import
    any file they can read."""
    allowed = allowed_suite_dirs()
    for ref in refs or []:
        module = str(ref).rpartition(":")[0]
        if module.endswith(".py") or "/" in module:
            candidate = Path(module)
            resolved = (candidate if candidate.is_absolute() else REPO_ROOT / candidate).resolve()
            if not any(resolved.is_relative_to(folder) for folder in allowed):
                raise SuiteError(f"params.{field_name}: {ref!r} is a file outside the folders suites and queries may "
                                 f"come from ({', '.join(str(f) for f in allowed)}); a deployment can allow others "
                                 f"with {SUITE_DIRS_ENV}")


def champion_suites(tracking_uri: str, parent_run_id: str) -> dict[str, str]:
    """'champion of W' -> the parent run of the suite that promoted W's champion, for the workloads of this suite:
    the champions' recorded results a nightly is compared with."""
    workloads = sorted(set(load_runs(tracking_uri, parent_run_id=parent_run_id)["workload"]))
    return {f"champion of {workload} (version {version.version})": version.run_id
            for workload, version in champions(tracking_uri, workloads).items()
            if version.run_id and version.run_id != parent_run_id}

