"""
### Tuning: which settings of which controller, per workload — screened in the simulator, confirmed on Spark

Trigger with the controllers to tune, the workloads, and a budget. For every controller x workload, `screen` runs an
Optuna study (TPE, seeded; or random search) in the plant model calibrated by `python -m jobs.calibrate`: each
trial simulates the configuration on every seed, objective = cost subject to SLO attainment >= the target. Each
study is an MLflow run in the `<experiment>-tuning` experiment with its trials as nested runs and its figures
(optimisation history, parameter importances, cost/SLO Pareto front); the study itself is stored (SQLite by
default, `[elastic_streaming] optuna_storage` on a cluster), so a retried task resumes it.

`open_confirmation` then plans the Spark runs within `spark_minutes`: per workload, each controller's defaults and
its best screened configuration first, the current champion next, then the other top-k. Every configuration runs on
every seed or not at all; what did not fit is named on the parent run (tag `tuning.left_out`). `run_case` submits
them one at a time (pool `elastic_streaming_runs`); a run that can no longer meet the SLO target stops early (MLflow
status KILLED, tag `pruned`, never compared as complete). Before each case starts, the Spark minutes spent so far
(the suite's runs' wall time) plus the case's estimate must fit `spark_minutes`; a case that does not fit is skipped
(tag `budget.skipped.<case>` on the parent run) and the suite ends cleanly with what is known. `analyse`, `promote`
(the champion/challenger rule; a promoted version carries `tuning.study`, `tuning.trial`, `tuning.calibration`) and
`close` are those of every suite.
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import (LINK_XCOM_KEY, OWNER, analyse_promote_close, experiment_name, optuna_storage,
                               run_setting_param, run_url, spark_master, submit_cases, tracking_uri)


@dag(
    dag_id="elastic_tuning",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=2,
    doc_md=__doc__,
    tags=["elastic-streaming", "tuning"],
    default_args={"owner": OWNER, "retries": 0},
    params={
        "controllers": Param(["ds2", "threshold"], type="array", items={"type": "string", "minLength": 1},
                             minItems=1, description="controllers to tune (python -m analysis.tuning space NAME "
                                                     "shows what is searched)"),
        "workloads": Param(["step"], type="array", items={"type": "string", "minLength": 1}, minItems=1,
                           description="catalogue names (or YAML spec paths on the workers)"),
        "calibration": Param("", type="string",
                             description="a calibration YAML or MLflow run id (python -m jobs.calibrate); empty: "
                                         "the store's latest calibration"),
        "trials": Param(60, type="integer", minimum=1, description="simulated trials per controller x workload"),
        "k": Param(3, type="integer", minimum=1, description="screened configurations to confirm on Spark"),
        "seeds": Param([1, 2, 3], type="array", items={"type": "integer", "minimum": 0}, minItems=1,
                       description="workload seeds: every trial simulates each; every confirmation runs each"),
        "spark_minutes": Param(60, type="number", exclusiveMinimum=0,
                               description="Spark minutes the confirmation may use; what does not fit is left out "
                                           "and named"),
        "duration_s": Param(None, type=["null", "number"], exclusiveMinimum=0,
                            description="seconds of workload per run (empty: the workload's own length)"),
        "slo_latency_s": run_setting_param("slo_latency_s"),
        "slo_target": run_setting_param("slo_target"),
        "sampler": Param("tpe", type="string", enum=["tpe", "random"], description="Optuna's TPE or random search"),
        "screen_headroom": Param(1.0, type="number", exclusiveMinimum=0, maximum=1,
                                 description="in the simulator, events count as on time within this fraction of the "
                                             "SLO latency: a margin for what it does not model (1 = none)"),
        "noise_draws": Param(3, type="integer", minimum=1,
                             description="noisy simulated runs per seed and trial (when the calibration measured "
                                         "Spark's spread)"),
        "noise_quantile": Param(0.2, type="number", minimum=0, maximum=0.5,
                                description="a trial is feasible when this lower quantile of its runs' SLO "
                                            "attainment meets the target (0.5: the median)"),
        "recheck_draws": Param(10, type="integer", minimum=0,
                               description="noisy runs per seed of the 10 best configurations before the candidates "
                                           "are named (the best of many noisy trials is partly the luckiest; 0: none)"),
        "spark_conn_id": Param("spark_default", type="string", minLength=1,
                               description="Airflow connection of the Spark master (local[N] or spark://host:port)"),
        "include_champions": Param(True, type="boolean", description="confirm against each workload's champion"),
        "include_oracle": Param(False, type="boolean",
                                description="also run the calibrated oracle (the cost lower bound, never promoted)"),
        "promote": Param(True, type="boolean", description="apply the champion/challenger rule afterwards"),
    },
)
def elastic_tuning():
    @task
    def validate(params=None) -> dict:
        from airflow.sdk import Connection

        from analysis.tuning.pipeline import TuningError, validate as validate_request

        try:
            Connection.get(params["spark_conn_id"])
        except Exception:
            raise AirflowFailException(f"params.spark_conn_id: no Airflow connection {params['spark_conn_id']!r}")
        try:
            request = validate_request({**params, "master": spark_master(params["spark_conn_id"])}, tracking_uri())
        except TuningError as exc:
            raise AirflowFailException(str(exc)) from None
        for warning in request["warnings"]:
            print(f"warning: {warning}")
        return request

    @task(retries=2, retry_delay=timedelta(seconds=10))  # a retry resumes the stored studies
    def screen(request: dict, dag_run=None, ti=None) -> dict:
        from analysis.tuning.pipeline import screen_all

        screened = screen_all(request, prefix=dag_run.run_id, storage=optuna_storage(), tracking_uri=tracking_uri(),
                              experiment=experiment_name())
        from mlflow.tracking import MlflowClient

        first = MlflowClient(tracking_uri()).get_run(next(iter(screened["studies"].values())))
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(first.info.experiment_id, first.info.run_id))
        return screened

    @task
    def open_suite(request: dict, screened: dict, dag_run=None) -> dict:
        from analysis.tuning.confirmation import BudgetError
        from analysis.tuning.pipeline import open_confirmation

        try:
            return open_confirmation(request, screened, tracking_uri=tracking_uri(), experiment=experiment_name(),
                                     dag_id=dag_run.dag_id, run_id=dag_run.run_id,
                                     include_champions=request["include_champions"],
                                     with_oracle=request["include_oracle"])
        except BudgetError as exc:
            raise AirflowFailException(str(exc)) from None

    request = validate()
    suite = open_suite(request, screen(request))
    runs = submit_cases(suite, name="tuning-{{ dag_run.run_id }}-{{ ti.map_index }}", timeout=timedelta(hours=2))

    analyse_promote_close(runs, not_opened="no confirmation suite was opened (see validate, screen, open_suite)",
                          nothing_run="nothing was confirmed on Spark (see validate, screen, open_suite)",
                          incomplete="the confirmation did not complete")

elastic_tuning()
