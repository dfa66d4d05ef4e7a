"""
### Load predictors for AUTOSCALE: collect, evaluate (leave one trace out), register, choose the champion

Manual or weekly (Sunday 03:00 UTC). Builds the load predictor of AUTOSCALE's preventive mode from a **declared
dataset** (`analysis/predictors/dataset.yaml` by default, or the `dataset` you give: which real traces, windows,
resolution, masked outages, and recorded runs by explicit id), so the same spec gives the same model on any machine;
its digest is the training run's MLflow input.

Every candidate is scored on each trace **it was not trained on** (leave-one-trace-out), next to the naive last value,
the seasonal naive and the paper's OLS (both readings of its eq. 2). The best one, fitted on everything, is
registered under `load-predictor` with its split-conformal variant; the aliases `champion` and `conservative` move
only if it beats the paper's predictor and the naive one on held-out traces, and the current champion on the same
dataset. AUTOSCALE runs use them with `predictor=registry` (`predictor_alias=conservative` for the calibrated one).
The "MLflow run" link on `register` and `choose_champion` opens the training run (table, decision).

Training shares the streaming pool: on a small machine it would otherwise spoil a running experiment's timings.
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import LINK_XCOM_KEY, OWNER, SPARK_POOL, run_url, tracking_uri, work_dir


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
        "dataset": Param("", type="string",
                         description="dataset spec (YAML path); empty: the project's analysis/predictors/dataset.yaml"),
        "seed": Param(0, type="integer", minimum=0, description="the candidates' random seed"),
        "candidates": Param("default", type="string", enum=["default", "quick"],
                            description="candidate models (quick: a linear and a short boosted one, a first look)"),
        "coverage": Param(0.8, type="number", exclusiveMinimum=0, exclusiveMaximum=1,
                          description="the conservative variant's target share of windows not under-predicted"),
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

        from analysis.predictors.dataset import DEFAULT_SPEC, DatasetError, load_spec
        from analysis.predictors.pipeline import collect as collect_dataset

        try:
            spec = load_spec(params["dataset"] or DEFAULT_SPEC)
            return collect_dataset(Path(folder(dag_run)), spec, tracking_uri())
        except DatasetError as exc:
            raise AirflowFailException(str(exc)) from None

    @task(pool=SPARK_POOL)
    def evaluate(params=None, dag_run=None) -> dict:
        from pathlib import Path

        from analysis.predictors.pipeline import PredictorError
        from analysis.predictors.pipeline import evaluate as leave_one_trace_out

        try:
            return leave_one_trace_out(Path(folder(dag_run)), params["seed"], params["coverage"],
                                       params["candidates"])
        except PredictorError as exc:
            raise AirflowFailException(str(exc)) from None

    @task(pool=SPARK_POOL)
    def register(ti=None, dag_run=None) -> dict:
        import json
        from pathlib import Path

        from mlflow.tracking import MlflowClient

        from analysis.predictors.pipeline import register_predictors

        work = Path(folder(dag_run))
        versions = register_predictors(work, tracking_uri())
        run_id = json.loads((work / "registered.json").read_text())["run_id"]
        run = MlflowClient(tracking_uri()).get_run(run_id)
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(run.info.experiment_id, run_id))
        return versions

    @task
    def choose_champion(ti=None, params=None, dag_run=None) -> str:
        from pathlib import Path

        from analysis.predictors.pipeline import choose_champion as choose

        ti.xcom_push(key=LINK_XCOM_KEY, value=ti.xcom_pull(task_ids="register", key=LINK_XCOM_KEY))
        return choose(Path(folder(dag_run)), tracking_uri(), params["min_improvement"])["verdict"]

    collect() >> evaluate() >> register() >> choose_champion()


elastic_predictor_training()
