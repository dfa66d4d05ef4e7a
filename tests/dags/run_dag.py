"""Run one DAG with dag.test() in this process and print the outcome as JSON (used by the Airflow tests, each in a
fresh process so that each can have its own Airflow configuration: SQLite or PostgreSQL metadata).

    python tests/dags/run_dag.py DAG_ID '{"conf": ...}'

The last line of stdout is the outcome; the exit code says which kind:
  0  the DAG ran: {"state", "run_id", "tasks", "xcoms", "links"} (a failed run is an outcome too: its state says so)
  1  the DAG files did not import: {"import_errors": {file: traceback tail}}
  3  dag.test() raised before or while running (e.g. ParamValidationError: the conf does not match the Params):
     {"error": exception type, "message", "trace"}
Task logs are in stdout, each task's between "[DAG TEST] starting task_id=T map_index=M" and "[DAG TEST] end task
task_id=T map_index=M" (dag.test() runs one task at a time); `task_logs` splits them.
"""
import json
import re
import sys
import traceback

DID_NOT_RUN = 3
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")  # a structured log line, not an exception's text
_TASK_MARK = re.compile(r"\[DAG TEST\] (starting|end task) task_id=(\S+) map_index=(-?\d+)")


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
        return DID_NOT_RUN
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


def task_logs(output: str) -> dict[str, str]:
    """'task_id[map_index]' -> what that task logged (every try, in order), from this script's stdout."""
    logs: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        mark = _TASK_MARK.search(line)
        if mark:
            kind, task_id, index = mark.groups()
            current = f"{task_id}[{index}]" if kind == "starting" else None
            if kind == "starting":
                logs.setdefault(current, [])
            continue
        if current is not None:
            logs[current].append(line)
    return {key: "\n".join(lines) for key, lines in logs.items()}


def task_error(log: str) -> str | None:
    """The exception a task's log ends with (type and full message, which may span lines), or None."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last):")]
    if not starts:
        return None
    rest = lines[starts[-1] + 1:]
    first = next((i for i, line in enumerate(rest) if line and not line[0].isspace()), None)
    if first is None:
        return None
    message = []
    for line in rest[first:]:
        if _LOG_LINE.match(line):
            break
        message.append(line)
    return "\n".join(message).strip()


def _load(value):
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


if __name__ == "__main__":
    sys.exit(main())
