"""
### Load predictors for AUTOSCALE: collect, train, evaluate, register, choose the champion

Manual or weekly (Sunday 03:00 UTC). Fits regression predictors of the next AUTOSCALE iteration's arrivals on the
real traces (`../shared/traces`, or `$ELASTIC_TRACES_DIR`) and on the per-batch arrivals of the experiment runs
recorded in MLflow, then evaluates them on **held-back windows** (each series split by time, no leakage from the
future) against the paper's own predictor (OLS on the last iteration) and a naive last-value one: MAE, MAPE and
under-prediction rate per series.

Every fitted predictor is logged as an MLflow model (signature, input example) and registered under
`load-predictor`; the **`champion` alias** moves to the best one only if it beats the paper's predictor and the
current champion, re-evaluated on the same held-back windows, by `min_improvement`. AUTOSCALE runs use it with
`predictor=registry` (`models:/load-predictor@champion`). The "MLflow run" link on `register` and
`choose_champion` opens the training run (evaluation table, decision).

Training shares the streaming pool: on a small machine it would otherwise spoil a running experiment's timings.
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import (LINK_XCOM_KEY, OWNER, SPARK_POOL, experiment_name, run_setting_param, run_url,
                               tracking_uri, work_dir)


@dag(
    dag_id="elastic_predictor_training",
    schedule="0 3 * * 0",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    doc_md=__doc__,
    tags=["elastic-streaming", "predictors", "autoscale"],
    default_args={"owner": OWNER, "retries": 1, "retry_delay": timedelta(minutes=2)},
    params={
        "traces": Param([], type="array", items={"type": "string"},
                        description="trace names under the traces directory (empty: every trace found)"),
        "learn_from_runs": Param(True, type="boolean",
                                 description="also learn from the arrivals recorded by the experiment runs"),
        "horizon": Param(5, type="integer", minimum=2, description="sub-intervals per AUTOSCALE iteration"),
        "step_s": run_setting_param("trigger_s", description="sub-interval length (s): one micro-batch of the runs"),
        "train_fraction": Param(0.7, type="number", exclusiveMinimum=0, exclusiveMaximum=1),
        "max_points": Param(20000, type="integer", minimum=100, description="most recent sub-intervals per series"),
        "under_weight": Param(2.0, type="number", minimum=1, description="weight of under-predictions in the score"),
        "min_improvement": Param(0.01, type="number", minimum=0, exclusiveMaximum=1,
                                 description="relative margin a challenger needs to take the champion alias"),
    },
)
def elastic_predictor_training():
    def folder(dag_run) -> str:
        return str(work_dir(dag_run.dag_id, dag_run.run_id))

    @task
    def collect(params=None, dag_run=None) -> dict:
        from pathlib import Path

        from analysis.load_predictors import PredictorError
        from analysis.load_predictors import collect as collect_series

        try:
            return collect_series(Path(folder(dag_run)), params["traces"] or None, tracking_uri(),
                                  experiment_name() if params["learn_from_runs"] else None, params["step_s"],
                                  params["max_points"])
        except PredictorError as exc:
            raise AirflowFailException(str(exc)) from None

    @task(pool=SPARK_POOL)
    def train(params=None, dag_run=None) -> dict:
        from pathlib import Path

        from analysis.load_predictors import PredictorError
        from analysis.load_predictors import train as train_candidates

        try:
            return train_candidates(Path(folder(dag_run)), params["horizon"], params["train_fraction"])
        except PredictorError as exc:
            raise AirflowFailException(str(exc)) from None

    @task
    def evaluate(params=None, dag_run=None) -> dict:
        from pathlib import Path

        from analysis.load_predictors import evaluate as evaluate_candidates

        return evaluate_candidates(Path(folder(dag_run)), params["under_weight"], params["step_s"])

    @task
    def register(ti=None, dag_run=None) -> dict:
        import json
        from pathlib import Path

        from mlflow.tracking import MlflowClient

        from analysis.load_predictors import register_predictors

        work = Path(folder(dag_run))
        versions = register_predictors(work, tracking_uri())
        parent = json.loads((work / "registered.json").read_text())["parent_run_id"]
        run = MlflowClient(tracking_uri()).get_run(parent)
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(run.info.experiment_id, parent))
        return versions

    @task
    def choose_champion(ti=None, params=None, dag_run=None) -> str:
        from pathlib import Path

        from analysis.load_predictors import choose_champion as choose

        ti.xcom_push(key=LINK_XCOM_KEY, value=ti.xcom_pull(task_ids="register", key=LINK_XCOM_KEY))
        decision = choose(Path(folder(dag_run)), tracking_uri(), params["min_improvement"], params["under_weight"],
                          params["step_s"])
        return decision["verdict"]

    collect() >> train() >> evaluate() >> register() >> choose_champion()


elastic_predictor_training()
