"""Champion/challenger promotion in the MLflow Model Registry, for the runs of one suite (a parent run).

    python -m analysis.promote --parent-run-id <id>        # decide per workload class, promote, log the decisions

For each workload class (the project's choice: a class is a workload's catalogue name) the rule of
analysis.decision is applied against the current `champion` of the registered model `controller-for-<class>`.
A promotion registers a new model version holding the winning configuration (controller.json, and the same in the
version's tags, with the suite's evidence) and moves the alias to it. Every decision, promotion or not, is logged to
the parent run (promotion/decisions.json and a `promotion.<class>` tag).

Safety:
- a class whose suite has FAILED or missing runs of the challenger never promotes it (the rule's first condition);
- re-running on the same suite promotes nothing new: the winner is then the champion, which ranks first;
- two promotions at once: each decides and writes while holding a per-class lock, an MLflow registered model
  `<model>.promotion-lock` whose creation is atomic in the tracking store (SQLite, PostgreSQL, or a server). The
  second waits, then re-reads the champion and decides again against it. A lock left by a crashed promoter is
  broken after LOCK_STALE_S.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from analysis.decision import MIN_MARGIN, Incumbent, PromotionDecision, decide, slo_target_of
from analysis.runs import load_runs
from analysis.stats import ALPHA
from jobs.champion import CHAMPION_ALIAS, CONFIG_FILE, champion_command, model_name
from jobs.recording.recorder import default_tracking_uri

LOCK_SUFFIX = ".promotion-lock"
LOCK_STALE_S = 600.0
LOCK_WAIT_S = 300.0


class PromotionBusy(RuntimeError):
    """Another promotion held the class's lock for longer than we were willing to wait."""


@contextlib.contextmanager
def promotion_lock(client: MlflowClient, model: str, wait_s: float = LOCK_WAIT_S,
                   stale_s: float = LOCK_STALE_S) -> Iterator[None]:
    lock = model + LOCK_SUFFIX
    owner = f"{socket.gethostname()}:{os.getpid()}"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            client.create_registered_model(lock, description=f"promotion of {model} in progress by {owner}; "
                                           f"deleted when it ends, broken after {stale_s:g} s")
            break
        except MlflowException as exc:
            # contention: the lock exists, the store is locked, or the holder deleted the lock while the store was
            # creating ours (SQLite reports that as the lock "not found")
            if exc.error_code not in ("RESOURCE_ALREADY_EXISTS", "RESOURCE_DOES_NOT_EXIST") \
                    and "locked" not in str(exc):
                raise
        with contextlib.suppress(MlflowException):  # the holder may release it between our two calls
            held = client.get_registered_model(lock)
            if time.time() - held.creation_timestamp / 1000 > stale_s:
                client.delete_registered_model(lock)
                continue
        if time.monotonic() > deadline:
            raise PromotionBusy(f"{lock} is held by another promotion (waited {wait_s:g} s)")
        time.sleep(0.2)
    try:
        yield
    finally:
        with contextlib.suppress(MlflowException):
            client.delete_registered_model(lock)


def current_champion(client: MlflowClient, model: str) -> Incumbent | None:
    try:
        version = client.get_model_version_by_alias(model, CHAMPION_ALIAS)
    except MlflowException:
        return None
    return Incumbent(str(version.version), version.tags.get("config", "?"), version.tags.get("config_id", ""))


def _register(client: MlflowClient, decision: PromotionDecision, runs: pd.DataFrame,
              parent_run_id: str) -> str:
    """Log the challenger's configuration to the parent run and register it; returns the new version."""
    model = model_name(decision.workload_class)
    one_run = runs[(runs["config_id"] == decision.challenger_config_id) & (runs["status"] == "FINISHED")].iloc[0]
    found = one_run.get("spark_query")
    spark_query = found if isinstance(found, str) and found else None
    with contextlib.suppress(MlflowException):
        client.create_registered_model(model, description=(
            f"Controller configurations for workload class {decision.workload_class!r}. The alias "
            f"'{CHAMPION_ALIAS}' marks the one to use: {champion_command(decision.workload_class, spark_query)}. "
            "Promoted by analysis.promote (rule in analysis/decision.py)."))
    controller, params = one_run["controller"], _logged_params(client, one_run["run_id"])
    folder = f"promotion/{decision.workload_class}"
    client.log_dict(parent_run_id, {"controller": controller, "params": params}, f"{folder}/{CONFIG_FILE}")
    source = f"{client.get_run(parent_run_id).info.artifact_uri}/{folder}"
    evidence = {k: v for k, v in decision.evidence.items() if k in (
        "deciding_metric", "champion_mean", "challenger_mean", "relative_gain", "p_value", "slo_target")}
    # a configuration found by tuning says so: its study, trial and the calibration the study simulated with
    provenance = {k: v for k, v in client.get_run(one_run["run_id"]).data.tags.items() if k.startswith("tuning.")}
    tags = {**provenance,
            "config": decision.challenger, "config_id": decision.challenger_config_id, "controller": controller,
            "params": json.dumps(params, sort_keys=True), "suite_parent_run_id": parent_run_id,
            "replaces": decision.champion or "", **({"spark_query": spark_query} if spark_query else {}), **{f"evidence.{k}": str(v) for k, v in evidence.items()}}
    version = client.create_model_version(model, source, run_id=parent_run_id, tags=tags,
                                          description=decision.summary())
    client.set_registered_model_alias(model, CHAMPION_ALIAS, version.version)
    return str(version.version)


def _logged_params(client: MlflowClient, run_id: str) -> dict:
    """The run's full, validated controller parameters, as it logged them (config/controller.json)."""
    with tempfile.TemporaryDirectory() as tmp:
        return json.loads(Path(client.download_artifacts(run_id, "config/controller.json", tmp)).read_text())["params"]


def promote_suite(tracking_uri: str, parent_run_id: str, runs: pd.DataFrame | None = None,
                  slo_target: float | None = None, min_margin: float = MIN_MARGIN, alpha: float = ALPHA,
                  expected_seeds: set[int] | None = None) -> list[PromotionDecision]:
    """Decide and promote per workload class of the suite; log every decision to the parent run."""
    client = MlflowClient(tracking_uri)
    if runs is None:
        runs = load_runs(tracking_uri, parent_run_id=parent_run_id)
    decisions = []
    queried = runs["query"].notna() & (runs["query"] != "") if "query" in runs else None
    if queried is not None and queried.any():
        # a champion is started with `jobs.run --champion CLASS`, which runs the benchmark topology: a query's
        # runs are compared, never promoted
        for workload in sorted(set(runs.loc[queried, "workload"])):
            client.set_tag(parent_run_id, f"promotion.{workload}", "not offered: runs of a --query are compared, "
                           "not promoted (a champion runs the benchmark topology)")
        runs = runs[~queried]
    for workload, group in runs.groupby("workload", sort=True):
        target = slo_target_of(group, slo_target)
        model = model_name(workload)
        with promotion_lock(client, model):
            incumbent = current_champion(client, model)  # read under the lock: a concurrent winner is seen here
            decision = decide(workload, group, incumbent, target, expected_seeds, min_margin, alpha)
            if decision.promote:
                decision.new_version = _register(client, decision, group, parent_run_id)
        decisions.append(decision)
        client.set_tag(parent_run_id, f"promotion.{workload}", decision.summary()[:5000])
    client.log_dict(parent_run_id, [d.to_dict() for d in decisions], "promotion/decisions.json")
    return decisions


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.promote", description=__doc__.split("\n\n")[0])
    p.add_argument("--parent-run-id", required=True, help="the suite: the child runs of this MLflow run")
    p.add_argument("--tracking-uri", default=None, help="MLflow store (default: $MLFLOW_TRACKING_URI or .local)")
    p.add_argument("--slo-target", type=float, help="override the runs' recorded SLO target")
    p.add_argument("--min-margin", type=float, default=MIN_MARGIN,
                   help=f"relative improvement a challenger needs over the champion (default {MIN_MARGIN})")
    p.add_argument("--alpha", type=float, default=ALPHA, help=f"significance level (default {ALPHA})")
    args = p.parse_args(argv)
    try:
        decisions = promote_suite(args.tracking_uri or default_tracking_uri(), args.parent_run_id,
                                  slo_target=args.slo_target, min_margin=args.min_margin, alpha=args.alpha)
    except (MlflowException, PromotionBusy) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for d in decisions:
        print(d.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
