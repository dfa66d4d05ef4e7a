"""The Airflow side of the project: an "MLflow run" link on tasks, and the small helpers the DAG files share.

Link: every task that pushes an MLflow run URL to XCom (key `mlflow_run_url`) shows an "MLflow run" button in the
Airflow UI — the experiment tasks link to their own run, the analysis task to the parent run with the report. The
MLflow UI's address comes from configuration, never from code:

    [elastic_streaming]                 # airflow.cfg, or AIRFLOW__ELASTIC_STREAMING__MLFLOW_UI_URL=...
    mlflow_ui_url = http://127.0.0.1:5000
    mlflow_tracking_uri = sqlite:////path/to/mlflow.db     # where tasks record (default: $MLFLOW_TRACKING_URI)
    optuna_storage = postgresql+psycopg2://.../optuna      # tuning studies (default: SQLite in work_dir)

Nothing heavy is imported here at module level: the scheduler imports this with every DAG file it parses.
"""
from __future__ import annotations

import os
import re
import sys
from datetime import timedelta
from pathlib import Path

from airflow.plugins_manager import AirflowPlugin
from airflow.sdk import BaseOperatorLink, Param, RetryDecision, RetryPolicy, TriggerRule, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

PROJECT_ROOT = Path(__file__).resolve().parent.parent
if str(PROJECT_ROOT) not in sys.path:  # tasks import analysis/ and jobs/ from the project
    sys.path.insert(0, str(PROJECT_ROOT))

JOB_ENTRY_POINT = str(PROJECT_ROOT / "jobs" / "run.py")
SECTION = "elastic_streaming"
LINK_XCOM_KEY = "mlflow_run_url"
SPARK_POOL = "elastic_streaming_runs"  # caps concurrent streaming runs at what the cluster holds (1 locally)
OWNER = "elastic-streaming"


def _conf(key: str, fallback: str | None) -> str | None:
    from airflow.configuration import conf

    return conf.get(SECTION, key, fallback=fallback)


def mlflow_ui_url() -> str:
    return (_conf("mlflow_ui_url", None) or "http://127.0.0.1:5000").rstrip("/")


def tracking_uri() -> str:
    configured = _conf("mlflow_tracking_uri", None)
    if configured:
        return configured
    from jobs.recording.recorder import default_tracking_uri

    return default_tracking_uri()


def experiment_name() -> str:
    return _conf("mlflow_experiment", None) or "elastic-streaming"


def work_dir(dag_id: str, run_id: str) -> Path:
    """A DAG run's scratch folder for files its tasks hand to each other (on a shared volume when workers differ)."""
    base = Path(_conf("work_dir", None) or PROJECT_ROOT / ".local" / "airflow-work")
    return base / dag_id / "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)


def optuna_storage() -> str:
    """Where tuning studies are stored, so a retried screening task resumes its study: [elastic_streaming]
    optuna_storage (PostgreSQL on the cluster, as docker-compose.yaml sets it), else a SQLite file in the work
    folder."""
    configured = _conf("optuna_storage", None)
    if configured:
        return configured
    base = Path(_conf("work_dir", None) or PROJECT_ROOT / ".local" / "airflow-work")
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{base / 'optuna.db'}"


def run_setting_param(name: str, **overrides) -> Param:
    """The Airflow Param of a run setting declared in params.run (SLO, trigger, ...): its default, bounds and meaning
    as declared once, so the trigger form checks what the command line checks. `overrides`: JSON Schema keywords
    that differ (a description saying what the setting means to this DAG)."""
    from params.run import RUN_SETTINGS  # pure Python, cheap: fine at parse time

    spec = RUN_SETTINGS[name]
    return Param(spec.default, **{**spec.json_schema(), **overrides})


def run_url(experiment_id: str, run_id: str) -> str:
    return f"{mlflow_ui_url()}/#/experiments/{experiment_id}/runs/{run_id}"


def spark_submit_binary() -> str:
    """spark-submit of the interpreter running Airflow (the pyspark install), unless PATH has another first."""
    beside = Path(sys.executable).parent / "spark-submit"
    return str(beside) if beside.exists() else "spark-submit"


def spark_env() -> dict[str, str]:
    """The Spark driver and workers must run the interpreter that has the project's dependencies."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")) if p)}


def spark_master(conn_id: str) -> str:
    """The master URL spark-submit will get from the connection, as the provider's hook builds it (so a check of
    the master sees what the Spark jobs will use)."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    return SparkSubmitHook(conn_id=conn_id)._resolve_connection()["master"]


def push_case_run_link(context, result=None) -> None:
    """After a case's Spark job (success or failure): find its MLflow run and put the link on the task."""
    from analysis.orchestration import case_run

    ti = context["ti"]
    suite = ti.xcom_pull(task_ids="open_suite")
    if not suite:
        return
    run = case_run(tracking_uri(), suite["parent_run_id"], ti.map_index)
    if run is not None:
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(run.info.experiment_id, run.info.run_id))


def budget_gate(context) -> None:
    """Before a case's Spark job: skip it when the suite's Spark-minutes budget (a tuning confirmation's) has no
    room left for it (analysis.budget); suites without a budget always run."""
    ti = context["ti"]
    suite = ti.xcom_pull(task_ids="open_suite")
    if not suite or suite.get("budget_minutes") is None:
        return
    from analysis.budget import gate

    reason = gate(tracking_uri(), suite["parent_run_id"], ti.map_index, suite["case_minutes"][ti.map_index],
                  suite["budget_minutes"])
    if reason:
        raise AirflowSkipException(reason)


def submit_cases(suite, *, name: str, timeout: timedelta):
    """One mapped spark-submit of jobs/run.py per case of `suite` (the open_suite task's output), on the Spark
    connection of the run's params, in the shared pool, with the MLflow link and retries for infrastructure
    failures only — the same for every DAG that runs suites."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    @task
    def cases(suite: dict, params=None) -> list[dict]:
        """One entry per case, in map-index order: the arguments of its Spark job, the Spark connection, and Spark's
        Kafka connector for a case that reads Kafka (spark-submit's --jars: on the driver's class path from its
        start)."""
        from analysis.suite import submit_jars

        return [{"application_args": args, "conn_id": params["spark_conn_id"], "jars": submit_jars(args)}
                for args in suite["cases"]]

    return SparkSubmitOperator.partial(
        task_id="run_case",
        application=JOB_ENTRY_POINT,
        name=name,
        spark_binary=spark_submit_binary(),
        env_vars=spark_env(),
        pool=SPARK_POOL,
        retries=2,
        retry_delay=timedelta(seconds=30),
        retry_policy=SparkInfrastructureRetry(),
        execution_timeout=timeout,
        pre_execute=budget_gate,
        post_execute=push_case_run_link,
        on_failure_callback=push_case_run_link,
    ).expand_kwargs(cases(suite))


def analyse_promote_close(runs, *, not_opened: str, nothing_run: str, incomplete: str) -> None:
    """The tasks after a suite's Spark runs, the same in every DAG that runs suites: `analyse` (the report on the
    parent run; its button opens it), `promote` (only when no case failed — one the budget skipped did not fail
    — and params.promote), `close` (parent FINISHED, or the task fails). The messages say what this DAG had to
    open: `not_opened` (analyse skipped), `nothing_run` (close failed), `incomplete` (its prefix when the suite
    did not complete)."""
    @task(trigger_rule=TriggerRule.ALL_DONE)
    def analyse(ti=None) -> str:
        from mlflow.tracking import MlflowClient

        from analysis.orchestration import analyse as analyse_suite

        suite = ti.xcom_pull(task_ids="open_suite")
        if not suite:
            raise AirflowSkipException(not_opened)
        parent = MlflowClient(tracking_uri()).get_run(suite["parent_run_id"])
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(parent.info.experiment_id, parent.info.run_id))
        return analyse_suite(tracking_uri(), suite["parent_run_id"], suite["case_count"])

    @task(trigger_rule=TriggerRule.NONE_FAILED)  # a case skipped by the budget is not a failure
    def promote(ti=None, params=None) -> list[str]:
        from analysis.orchestration import promote as promote_suite

        if not params["promote"]:
            raise AirflowSkipException("promotion switched off for this run (params.promote)")
        return promote_suite(tracking_uri(), ti.xcom_pull(task_ids="open_suite")["parent_run_id"])

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def close(ti=None) -> str:
        from analysis.orchestration import close as close_suite

        suite = ti.xcom_pull(task_ids="open_suite")
        if not suite:
            raise AirflowFailException(nothing_run)
        status = close_suite(tracking_uri(), suite["parent_run_id"], suite["case_count"])
        if status != "FINISHED":
            raise AirflowFailException(f"{incomplete}: parent MLflow run {suite['parent_run_id']} is {status} "
                                       "(see the failed run_case tasks); nothing was promoted")
        return status

    report = analyse()
    promotion = promote()
    runs >> report >> promotion >> close()
    runs >> promotion  # promote only when no case failed (none_failed over the mapped runs too)


class SparkInfrastructureRetry(RetryPolicy):
    """Retry a case only when the infrastructure failed, never because of what the controller did.

    jobs/run.py exits 0 when the run finished (an SLO miss is a result), 2 on bad input, 1 when the run failed
    (the job or the controller broke: a result to look at, not to hide by retrying) and 3 when Spark itself could
    not run it (JVM, master, executors lost). spark-submit dying without an exit code (killed, not found) is
    infrastructure too."""

    def evaluate(self, exception, try_number, max_tries, context=None) -> RetryDecision:
        match = re.search(r"Error code is: (-?\d+)", str(exception))
        code = int(match.group(1)) if match else None
        if code in (1, 2):
            return RetryDecision.fail(reason=f"the run itself failed (exit {code}): not an infrastructure problem")
        return RetryDecision.retry(delay=timedelta(seconds=30), reason=f"infrastructure failure (exit {code})")


def _read_xcom(ti_key, key: str):
    """XCom as the API server reads it (plugin links are evaluated there, without the task's SDK channel)."""
    import json

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        row = session.execute(XComModel.get_many(key=key, run_id=ti_key.run_id, dag_ids=ti_key.dag_id,
                                                 task_ids=ti_key.task_id, map_indexes=ti_key.map_index)
                              .with_only_columns(XComModel.value)).first()
    if row is None:
        return None
    try:
        return json.loads(row.value)
    except (TypeError, ValueError):
        return row.value


class MlflowRunLink(BaseOperatorLink):
    name = "MLflow run"

    def get_link(self, operator, *, ti_key) -> str:
        return _read_xcom(ti_key, LINK_XCOM_KEY) or ""  # "" shows the button disabled


class ElasticStreamingPlugin(AirflowPlugin):
    name = "elastic_streaming"
    global_operator_extra_links = [MlflowRunLink()]
