"""
### Nightly regression suite: fails loudly when a controller got worse

Every night at 02:00 (UTC) this runs the versioned regression suite (`suites/nightly.yaml`: configurations x
workloads x seeds, with tolerances) plus each workload's current champion, then compares the results with **the
previous nightly** and with **the champions' recorded results** (the suite that promoted them).

The run **fails** with a listing — configuration, workload, metric, before -> after, p-value — when a metric got
worse beyond the suite's tolerance *and* significantly over the seeds (so noise alone never fails it), or when a
case did not finish. The verdict is also on the parent MLflow run (`nightly/verdict.txt`, tag `nightly.verdict`).

Params: another suite file, or a specific baseline parent run. `suite_run_id` re-checks an existing nightly suite
against a baseline without running Spark again (e.g. after investigating a regression).
"""
from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import Param, TriggerRule, dag, task
from airflow.sdk.exceptions import AirflowFailException
from elastic_streaming import LINK_XCOM_KEY, OWNER, experiment_name, run_url, submit_cases, tracking_uri


@dag(
    dag_id="elastic_nightly_regression",
    schedule="0 2 * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=6),
    doc_md=__doc__,
    tags=["elastic-streaming", "nightly", "regression"],
    default_args={"owner": OWNER, "retries": 0},
    params={
        "suite": Param("suites/nightly.yaml", type="string", minLength=1,
                       description="suite file in the project's suites/ folder (relative to the project or "
                                   "absolute; ELASTIC_SUITE_DIRS on the workers allows other folders)"),
        "baseline_run_id": Param("", type="string",
                                 description="parent run to compare with (default: the previous nightly)"),
        "suite_run_id": Param("", type="string",
                              description="re-check this existing nightly suite instead of running a new one"),
        "include_champions": Param(True, type="boolean"),
        "spark_conn_id": Param("spark_default", type="string", minLength=1),
    },
)
def elastic_nightly_regression():
    @task
    def open_suite(params=None, dag_run=None) -> dict:
        from analysis.orchestration import prepare, suite_file
        from analysis.suite import SuiteError

        if params["suite_run_id"]:
            return {"parent_run_id": params["suite_run_id"], "cases": [], "case_count": None,
                    "tolerance": None, "recheck": True}
        try:
            request = suite_file(params["suite"])
        except SuiteError as exc:
            raise AirflowFailException(f"invalid suite: {exc}") from None
        return prepare({}, tracking_uri=tracking_uri(), experiment=experiment_name(), kind="nightly",
                       dag_id=dag_run.dag_id, run_id=dag_run.run_id,
                       include_champions=params["include_champions"], request=request)

    suite = open_suite()
    runs = submit_cases(suite, name="elastic-nightly-{{ dag_run.run_id }}-{{ ti.map_index }}",
                        timeout=timedelta(hours=1))

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def compare(ti=None, params=None, dag_run=None) -> str:
        from mlflow.tracking import MlflowClient

        from analysis.orchestration import analyse, champion_suites, close, nightly_verdict, previous_nightly

        suite = ti.xcom_pull(task_ids="open_suite")
        if not suite:
            raise AirflowFailException("no suite was run (see open_suite)")
        uri, parent_id = tracking_uri(), suite["parent_run_id"]
        client = MlflowClient(uri)
        parent = client.get_run(parent_id)
        ti.xcom_push(key=LINK_XCOM_KEY, value=run_url(parent.info.experiment_id, parent_id))
        if not suite.get("recheck"):
            analyse(uri, parent_id, suite["case_count"])
            close(uri, parent_id, suite["case_count"])
        baselines = {"previous nightly": params["baseline_run_id"] or previous_nightly(
            uri, experiment_name(), dag_run.dag_id, before_run=parent_id)}
        baselines.update(champion_suites(uri, parent_id))
        passed, message = nightly_verdict(uri, parent_id, baselines, suite.get("tolerance"))
        if not passed:
            raise AirflowFailException(f"nightly regression suite {parent_id} regressed:\n{message}")
        return message

    runs >> compare()


elastic_nightly_regression()
