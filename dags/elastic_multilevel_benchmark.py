"""
### Multi-level automatic benchmark: the capacity table the `multilevel` controller reads

Manual trigger. Phase B of the multi-level seed (IEEE TPDS 2019): one streaming run on the Spark standalone cluster of
`spark_conn_id` that starts un-parallelised on one executor while a staircase workload raises the rate step by
step, and adds the cheapest level that still helps whenever a period's health (processed ÷ received, and the worst
p95 latency within the SLO) falls below `health_threshold`: partitions within the registered task slots, then one
more executor (and a worker, when `cluster_state` names the cluster's state folder so the host level can add one).
The table — per configuration judged healthy, the highest rate it held, the level that made it and that level's
measured provisioning delay — is logged as a run of experiment `characterisation`; the task's "MLflow run" link
opens it; it is registered as a new version of `multilevel-table.<query>` with the alias `current` moved to it. Run
`multilevel` with `table=@current`, `table=<that run id>` or `table=latest` (the experiment DAG's `controllers`).

The benchmark shares the streaming pool: two streaming runs at once spoil each other's numbers.
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import LINK_XCOM_KEY, OWNER, SPARK_POOL, run_url, spark_master, tracking_uri


@dag(
    dag_id="elastic_multilevel_benchmark",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=1),
    doc_md=__doc__,
    tags=["elastic-streaming", "multilevel", "cluster"],
    default_args={"owner": OWNER, "retries": 0},
    params={
        "spark_conn_id": Param("spark_default", type="string", minLength=1,
                               description="Airflow connection of the Spark standalone master (spark://host:port)"),
        "cluster_state": Param("", type="string",
                               description="the cluster's state folder (deploy.spark_cluster), so the host level "
                                           "can add workers; empty: no host level"),
        "start": Param(1000, type="number", exclusiveMinimum=0, description="first rate level, ev/s"),
        "end": Param(9000, type="number", exclusiveMinimum=0, description="last rate level, ev/s"),
        "step": Param(1000, type="number", exclusiveMinimum=0, description="rate added per level, ev/s"),
        "step_s": Param(20, type="number", exclusiveMinimum=0, description="seconds per level"),
        "period_s": Param(10, type="number", exclusiveMinimum=0, description="T: seconds over which health is judged"),
        "health_threshold": Param(0.95, type="number", exclusiveMinimum=0, maximum=1,
                                  description="processed ÷ received below which capacity is added"),
        "max_executors": Param(4, type="integer", minimum=1, description="executors: never more"),
        "query": Param("", type="string", description="MODULE:FUNCTION or nexmark:qN; empty: the benchmark topology"),
    },
)
def elastic_multilevel_benchmark():
    @task(pool=SPARK_POOL)
    def benchmark(ti=None, params=None) -> list[dict]:
        from pathlib import Path

        from mlflow.tracking import MlflowClient

        from analysis.multilevel_table import build_table

        master = spark_master(params["spark_conn_id"])
        if not master.startswith("spark://"):
            raise AirflowFailException(f"connection {params['spark_conn_id']!r} is {master}: the multi-level "
                                       "benchmark needs a standalone master (spark://host:port), whose executors it "
                                       "adds")
        try:
            run_id, table = build_table(
                master=master, cluster_state=Path(params["cluster_state"]) if params["cluster_state"] else None,
                start=params["start"], end=params["end"], step=params["step"], step_s=params["step_s"],
                period_s=params["period_s"], health_threshold=params["health_threshold"],
                max_executors=params["max_executors"], query=params["query"] or None, seed=1,
                tracking_uri=tracking_uri())
        except (ValueError, RuntimeError) as exc:
            raise AirflowFailException(str(exc)) from None
        run = MlflowClient(tracking_uri()).get_run(run_id)
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(run.info.experiment_id, run_id))
        return [row.to_dict() for row in table.rows]

    benchmark()


elastic_multilevel_benchmark()
