"""
### Elasticity experiment: which controller configuration wins on which workload

Trigger with the controller configurations, workloads and seeds to compare. Every (configuration x workload x seed)
runs as one Spark Structured Streaming job (`jobs/run.py`, submitted with `spark-submit`), all replaying the same
workload, **one after another** (pool `elastic_streaming_runs`: concurrent streaming runs would spoil each other's
timings). The current champion of each workload is added to the comparison.

Tasks: `validate` (bad params fail here, before any Spark job) -> `open_suite` (parent MLflow run) -> `run_case`
(one mapped task per case; its **MLflow run** button opens the case's run) -> `analyse` (the report on the parent
run; its button opens the parent) -> `promote` (champion/challenger rule in the MLflow registry; skipped if any
case failed) -> `close` (parent run FINISHED, or FAILED if any case did not finish).

A controller that misses the SLO is a result, not a failure; only infrastructure failures (Spark could not run the
job) are retried. Configurations are written `controller[:param=value,...]`, e.g. `threshold:cooldown_s=6` or
`static:degree=1,degrees={enrich: 3}`; workloads are catalogue names (the documentation's workload reference lists
them). Or give a versioned suite file in Param `suite` (e.g. `suites/bursty.yaml`, the bursty real-trace suite), which replaces those fields.
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import (OWNER, analyse_promote_close, experiment_name, run_setting_param, submit_cases,
                               tracking_uri)


@dag(
    dag_id="elastic_experiment",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=4,  # runs queue in the pool; their Spark jobs never overlap
    doc_md=__doc__,
    tags=["elastic-streaming", "experiment"],
    default_args={"owner": OWNER, "retries": 0},
    params={
        "controllers": Param(["static:degree=1", "static:degree=1,degrees={enrich: 3}", "threshold"], type="array",
                             items={"type": "string", "minLength": 1}, minItems=1,
                             description="controller configurations, controller[:param=value,...]"),
        "workloads": Param(["step"], type="array", items={"type": "string", "minLength": 1}, minItems=1,
                           description="catalogue names (or YAML spec paths on the workers)"),
        "seeds": Param([1, 2, 3, 4], type="array", items={"type": "integer", "minimum": 0}, minItems=1,
                       description="one run per seed; >= 4 seeds are needed for a significant difference"),
        "duration_s": Param(60, type="number", exclusiveMinimum=0, description="seconds of workload per run"),
        "slo_latency_s": run_setting_param("slo_latency_s"),  # declared once, in params/run.py
        "slo_target": run_setting_param("slo_target"),
        "max_events_per_batch": run_setting_param("max_events_per_batch"),
        "source": run_setting_param("source"),
        "kafka_bootstrap": run_setting_param("kafka_bootstrap"),
        "topology": Param("default", type="string", minLength=1,
                          description="the benchmark topology's operator costs: default, zero-cost, seep-mu5, "
                                      "seep-mu10, keyed-heavy, or a YAML file on the workers"),
        "queries": Param([], type="array", items={"type": "string", "minLength": 1},
                         description="queries to run instead of the benchmark topology, each MODULE:FUNCTION on the "
                                     "workers (nexmark:q0 ... nexmark:q8, or your own: docs/guides/queries.md); "
                                     "every case runs once per query"),
        "spark_queries": Param([], type="array", items={"type": "string", "minLength": 1},
                               description="your own Structured Streaming queries, each MODULE:FUNCTION on the "
                                           "workers (native:windowed_count, native:q5, or your own: "
                                           "docs/guides/native-queries.md); their partitions are rescaled by restart, and every case "
                                           "runs once per query"),
        "spark_conn_id": Param("spark_default", type="string", minLength=1,
                               description="Airflow connection of the Spark master (local[N] or spark://host:port)"),
        "include_champions": Param(True, type="boolean", description="add each workload's champion to the runs"),
        "include_oracle": Param(False, type="boolean",
                                description="add the oracle with the costs of the store's latest calibration "
                                            "(python -m jobs.calibrate): every run gets its cost and regret against "
                                            "the oracle"),
        "suite": Param("", type="string",
                       description="a suite file (e.g. suites/bursty.yaml): its configurations, workloads, seeds, "
                                   "duration, SLO, admission cap, topology, queries, spark_queries and include_oracle "
                                   "replace the "
                                   "fields above"),
        "promote": Param(True, type="boolean", description="apply the champion/challenger rule afterwards"),
    },
)
def elastic_experiment():
    @task
    def validate(params=None) -> dict:
        from airflow.sdk import Connection

        from analysis.orchestration import allowed_query_refs, suite_file, with_oracle
        from analysis.suite import REQUEST_FIELDS, SuiteError, SuiteRequest

        problems, request = [], dict(params)
        try:
            if params["suite"]:
                suite = suite_file(params["suite"])
                request.update({"controllers": list(suite.variants), "workloads": list(suite.workloads),
                                "seeds": list(suite.seeds), "duration_s": suite.duration_s,
                                "slo_latency_s": suite.slo_latency_s, "slo_target": suite.slo_target,
                                "max_events_per_batch": suite.max_events_per_batch, "source": suite.source,
                                "kafka_bootstrap": suite.kafka_bootstrap, "topology": suite.topology,
                                "queries": list(suite.queries), "spark_queries": list(suite.spark_queries),
                                "include_oracle": suite.include_oracle})
            else:
                allowed_query_refs(params.get("queries"))
                allowed_query_refs(params.get("spark_queries"), "spark_queries")
                suite = SuiteRequest.from_mapping({k: params[k] for k in REQUEST_FIELDS if k in params})
            with_oracle(suite, tracking_uri())  # a calibration for the oracle must exist before anything runs
        except SuiteError as exc:
            problems.append(str(exc))
        try:
            Connection.get(params["spark_conn_id"])
        except Exception:  # the Spark hook would silently fall back to yarn: say it here instead
            problems.append(f"params.spark_conn_id: no Airflow connection {params['spark_conn_id']!r} (create it, "
                            "e.g. AIRFLOW_CONN_SPARK_DEFAULT='{\"conn_type\": \"spark\", \"host\": \"local[2]\"}')")
        if problems:
            raise AirflowFailException("invalid request:\n" + "\n".join(problems))
        return request

    @task
    def open_suite(request: dict, dag_run=None) -> dict:
        from analysis.orchestration import prepare

        return prepare(request, tracking_uri=tracking_uri(), experiment=experiment_name(), kind="experiment",
                       dag_id=dag_run.dag_id, run_id=dag_run.run_id, include_champions=request["include_champions"])

    suite = open_suite(validate())
    runs = submit_cases(suite, name="elastic-{{ dag_run.run_id }}-{{ ti.map_index }}",
                        timeout=timedelta(hours=2))

    analyse_promote_close(runs, not_opened="no suite was opened (the request was invalid)",
                          nothing_run="the request was invalid: nothing was run (see the validate task)",
                          incomplete="the suite did not complete")

elastic_experiment()
