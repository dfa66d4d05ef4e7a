"""Run one DAG with dag.test() in this process and print the outcome as JSON (used by the Airflow tests, each in a
fresh process so that each can have its own Airflow configuration: SQLite or PostgreSQL metadata).

    python tests/dags/run_dag.py DAG_ID '{"conf": ...}'
"""
import json
import sys
import traceback


def main() -> int:
    dag_id, conf = sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    from airflow.dag_processing.dagbag import DagBag
    from airflow.models.xcom import XComModel
    from airflow.utils.db import initdb
    from airflow.utils.session import create_session

    initdb()
    bag = DagBag()
    if bag.import_errors:
        print(json.dumps({"import_errors": {k: v[-500:] for k, v in bag.import_errors.items()}}))
        return 1
    try:
        run = bag.dags[dag_id].test(run_conf=conf)
    except Exception as exc:  # e.g. ParamValidationError: raised before any run is created
        print(json.dumps({"error": type(exc).__name__, "message": str(exc),
                          "trace": traceback.format_exc()[-2000:]}))
        return 0
    tis = [{"task_id": t.task_id, "map_index": t.map_index, "state": str(t.state) if t.state else None,
            "try_number": t.try_number} for t in run.get_task_instances()]
    with create_session() as session:
        rows = session.query(XComModel.task_id, XComModel.map_index, XComModel.key, XComModel.value).filter(
            XComModel.dag_id == dag_id, XComModel.run_id == run.run_id).all()
    xcoms = [{"task_id": r[0], "map_index": r[1], "key": r[2], "value": _load(r[3])} for r in rows]
    print(json.dumps({"state": str(run.state), "run_id": run.run_id, "tasks": tis, "xcoms": xcoms,
                      "links": _links(dag_id, run.run_id)}, default=str))
    return 0


def _links(dag_id: str, run_id: str) -> dict[str, dict[str, str]]:
    """The extra links of each task instance, resolved as the API server does for the UI (serialized DAG, plugin
    links evaluated against the metadata database)."""
    from airflow.models.dagbag import DBDagBag
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    out = {}
    with create_session() as session:
        run = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id)).one()
        dag = DBDagBag().get_dag_for_run(run, session=session)
        for ti in run.get_task_instances(session=session):
            task = dag.get_task(ti.task_id)
            out[f"{ti.task_id}[{ti.map_index}]"] = {name: task.get_extra_links(ti, name) for name in task.extra_links}
    return out


def _load(value):
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


if __name__ == "__main__":
    sys.exit(main())
