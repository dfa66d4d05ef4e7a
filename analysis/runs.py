"""Experiment runs out of MLflow as one table: a row per run, with its configuration, workload, seed, status and
summary metrics. The same reader serves the command line, the DAGs and a notebook: give it a parent run (a DAG run
or a demo), or an experiment and an MLflow filter string.
"""
from __future__ import annotations

import pandas as pd
from mlflow.tracking import MlflowClient

from jobs.recording.liveness import reap_dead_runs

# The summary metrics every comparison reads, with what each means (definitions: jobs/recording/summary.py); the
# documentation's metric reference is generated from this mapping.
SUMMARY_METRICS: dict[str, str] = {
    "slo_attainment": "fraction of all scheduled events whose latency (output committed − scheduled arrival) is within "
                      "the bound; events never processed count as misses",
    "cost_slot_seconds": "Σ over batches of the operators' degrees × the time that vector was in force (a native "
                         "query: its partitions)",
    "cost_executor_core_seconds": "executor cores provisioned × the time they were in force",
    "latency_p50_s": "median event latency, s", "latency_p95_s": "95th percentile event latency, s",
    "latency_p99_s": "99th percentile event latency, s", "latency_max_s": "largest event latency, s",
    "scaling_actions": "decisions that changed the vector (a native query: its restarts)",
    "oscillations": "reversals: an operator scaled one way and back within 5 batches (a burst sizing and its return "
                    "are one planned excursion)",
    "backlog_integral_event_s": "Σ over batches of the events waiting × the time they waited, event-s",
    "batch_start_actions": "of the scaling actions, those taken as a batch started, for the events it was about to "
                           "read (burst sizing)",
    "records_in": "events the source read", "records_out": "events the sink committed",
    "records_lost": "scheduled events missing from the sink (exactly-once check)",
    "records_duplicated": "events the sink holds more than once (exactly-once check)",
    "keyed_max_task_s_mean": "the keyed operator's slowest task per batch, mean, s (what key skew costs)",
    "keyed_max_task_s_p95": "the keyed operator's slowest task per batch, 95th percentile, s",
    "keyed_balanced_task_s_mean": "what a placement balanced in hindsight would have made that slowest task, mean, s",
    "placement_moves": "key groups moved between partitions",
    "restarts": "a native query's rescales, each a restart",
    "restart_downtime_s": "Σ of the restarts' downtime (the source held, the stop, the state repartition, the start, "
                          "until the first batch after it committed), s",
    "restart_downtime_expected_s": "Σ of the downtime the restart calibration expected for them, s",
    "reconfiguration_delay_batches_mean": "batches from a decision to the first batch that ran with it (1: the next)",
    "infeasible_decisions": "decisions of a controller that knew it could not meet the SLO at the largest vector "
                            "(the oracle says so)",
    "executors_mean": "executors Spark had, mean over batches",
    "ledger_actions": "actions in the decision ledger (ledger.csv)",
    "ledger_predicted_actions": "of them, those whose controller said what it predicted",
    "ledger_arrival_error_median_abs": "median |predicted ÷ realised − 1| of the arrival rate after an action",
    "ledger_capacity_error_median_abs": "median |predicted ÷ realised − 1| of the capacity after an action",
    "ledger_fell_behind_share": "share of the judged actions whose new vector did not keep up",
    "producer_lag_p99_ms": "a run on Kafka: how late the producer handed events to the client after their scheduled "
                           "arrival, 99th percentile, ms (a slow producer, told from a slow query)",
}
ORACLE = "oracle"
PRUNED = "PRUNED"  # the status column of a pruned run (jobs.run --stop-when-slo-unreachable)
DONE = ("FINISHED", PRUNED)  # a case that ran as intended: a suite of these is complete


def load_runs(tracking_uri: str, parent_run_id: str | None = None, experiment: str | None = None,
              filter_string: str = "") -> pd.DataFrame:
    """Runs of `parent_run_id` (its children), or of `experiment` matching `filter_string`; FAILED runs included
    (status column) so that incomplete suites are visible, never silently dropped; a pruned run's status is PRUNED.
    A RUNNING run whose process died (its heartbeat stopped, jobs/recording/liveness.py) is marked KILLED first, with
    the reason: whoever reads the runs next settles them, so a dead run is never mistaken for one still going."""
    client = MlflowClient(tracking_uri)
    if parent_run_id:
        parent = client.get_run(parent_run_id)
        experiment_ids = [parent.info.experiment_id]
        clause = f"tags.mlflow.parentRunId = '{parent_run_id}'"
        filter_string = f"{clause} and {filter_string}" if filter_string else clause
    else:
        if not experiment:
            raise ValueError("give a parent run id or an experiment name")
        found = client.get_experiment_by_name(experiment)
        if found is None:
            raise ValueError(f"no MLflow experiment named {experiment!r} at {tracking_uri}")
        experiment_ids = [found.experiment_id]
    reap_dead_runs(client, experiment_ids, filter_string=filter_string)
    rows, token = [], None
    while True:
        page = client.search_runs(experiment_ids, filter_string=filter_string, max_results=1000, page_token=token)
        for run in page:
            tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
            rows.append({
                "run_id": run.info.run_id, "run_name": tags.get("mlflow.runName", ""),
                # a run stopped early because its SLO target was out of reach ends KILLED in MLflow with tag
                # `pruned`: a partial result, excluded from comparisons like a failed run, but expected, not a fault
                "status": PRUNED if tags.get("pruned") else run.info.status,
                "config": tags.get("config") or tags.get("controller", "?"),
                "config_id": tags.get("config_id") or tags.get("config") or "",
                "controller": tags.get("controller", "?"), "variant": tags.get("variant", ""),
                "workload": tags.get("workload", "?"),
                "seed": int(tags["seed"]) if tags.get("seed", "").isdigit() else None,
                "slo_target": float(params["slo.target"]) if "slo.target" in params else None,
                "slo_latency_s": float(params["slo.latency_s"]) if "slo.latency_s" in params else None,
                "failure_reason": tags.get("failure_reason") or tags.get("pruned"),
                "case": tags.get("airflow.case"), "predictor": tags.get("predictor"), "query": tags.get("query"),
                "spark_query": tags.get("spark_query"), "start_time": run.info.start_time,
                "revision": tags.get("mlflow.source.git.commit", ""),
                # where the run's batches fell against its workload (jobs.trigger_grid): seeded since 2026-12-03
                "trigger_phase_s": float(params["trigger_phase_s"]) if "trigger_phase_s" in params else None,
                **{m: metrics.get(m) for m in SUMMARY_METRICS},
            })
        token = page.token
        if not token:
            break
    columns = ["run_id", "run_name", "status", "config", "config_id", "controller", "variant", "workload", "seed",
               "slo_target", "slo_latency_s", "failure_reason", "case", "predictor", "query", "spark_query",
               "start_time", "revision", "trigger_phase_s", *SUMMARY_METRICS]
    table = oracle_labelled(latest_attempts(pd.DataFrame(rows, columns=columns)))
    table = table.sort_values(["workload", "config", "seed"], na_position="last", ignore_index=True)
    return with_cost_to_oracle(table)


def oracle_labelled(runs: pd.DataFrame) -> pd.DataFrame:
    """The oracle's configuration shown as `oracle`: its configuration string carries the whole calibration (a few
    hundred characters), which the run keeps in its params; where runs of several calibrations are compared, each
    is `oracle <first 8 of its config_id>`."""
    oracle = runs["controller"] == "oracle"
    if not oracle.any():
        return runs
    runs = runs.copy()
    several = runs.loc[oracle, "config"].nunique() > 1
    runs.loc[oracle, "config"] = [f"oracle {cid[:8]}" if several else "oracle" for cid in runs.loc[oracle, "config_id"]]
    return runs


def latest_attempts(runs: pd.DataFrame) -> pd.DataFrame:
    """One run per case of a DAG run: when Airflow retried a case after an infrastructure failure, the earlier
    attempt's (FAILED) run is superseded by the latest one, so a retried-and-finished case counts as complete."""
    cased = runs[runs["case"].notna()].sort_values("start_time").drop_duplicates("case", keep="last")
    return pd.concat([runs[runs["case"].isna()], cased], ignore_index=True)


# the columns with_cost_to_oracle adds
ORACLE_COLUMNS = ("cost_to_oracle", "cost_to_oracle_reached", "regret_to_oracle", "attainment_gap_to_oracle",
                  "oracle_infeasible")


def with_cost_to_oracle(runs: pd.DataFrame) -> pd.DataFrame:
    """Add `cost_to_oracle`: a run's cost / the cost of the finished oracle run on the same workload and seed (the
    lower bound), NaN where no such oracle run exists — or where the oracle found the workload infeasible at the
    run's maximum degree (then `oracle_infeasible` is True: there is no bound to compare with).

    And the comparisons that hold also where the oracle is infeasible, against what it reached (the feasible
    bound): `cost_to_oracle_reached`, the cost / that oracle run's cost; `regret_to_oracle`, the cost per unit of
    SLO attainment above the oracle's, as a fraction of the oracle's ((cost / attainment) / (oracle cost / oracle
    attainment) - 1: 0 is as good as the oracle, 0.5 pays half as much again for each point of attainment), and
    `attainment_gap_to_oracle`, the oracle's attainment less the run's (points as a fraction; negative: the run met
    more events on time, by paying more)."""
    oracle = runs[(runs["controller"] == ORACLE) & (runs["status"] == "FINISHED")].copy()
    oracle["_infeasible"] = oracle["infeasible_decisions"].fillna(0) > 0
    infeasible = oracle.groupby(["workload", "seed"])["_infeasible"].any().rename("oracle_infeasible")
    bound = oracle[~oracle["_infeasible"]].groupby(["workload", "seed"])["cost_slot_seconds"].min()
    # the cheapest oracle run per workload and seed, feasible or not, for the per-SLO comparisons
    best = oracle.sort_values("cost_slot_seconds").drop_duplicates(["workload", "seed"]).set_index(["workload", "seed"])
    out = runs.join(bound.rename("_oracle_cost"), on=["workload", "seed"]).join(infeasible, on=["workload", "seed"])
    out = out.join(best.reindex(columns=["cost_slot_seconds", "slo_attainment"]).rename(
        columns={"cost_slot_seconds": "_o_cost", "slo_attainment": "_o_att"}), on=["workload", "seed"])
    out["cost_to_oracle"] = out["cost_slot_seconds"] / out["_oracle_cost"]
    out["cost_to_oracle_reached"] = out["cost_slot_seconds"] / out["_o_cost"]
    attainment = out["slo_attainment"] if "slo_attainment" in out else pd.Series(float("nan"), index=out.index)
    per_slo = _per_attainment(out["cost_slot_seconds"], attainment)
    out["regret_to_oracle"] = per_slo / _per_attainment(out["_o_cost"], out["_o_att"]) - 1.0
    out["attainment_gap_to_oracle"] = out["_o_att"] - attainment
    out["oracle_infeasible"] = out["oracle_infeasible"].astype("boolean").fillna(False).astype(bool)
    return out.drop(columns=["_oracle_cost", "_o_cost", "_o_att"])


def _per_attainment(cost: pd.Series, attainment: pd.Series) -> pd.Series:
    """Cost per unit of SLO attainment; NaN where nothing was on time (no finite price per unit)."""
    att = pd.to_numeric(attainment, errors="coerce")
    return pd.to_numeric(cost, errors="coerce") / att.where(att > 0)
