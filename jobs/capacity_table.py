"""The multi-level controller's capacity table, found where the user points (`table=`): a JSON file, an MLflow run
of `analysis.multilevel_table` by id, or `latest` — the newest finished table run for the run's query in the
`characterisation` experiment. Read and checked before Spark starts, so a table from another topology or query, an
empty one or one that is not there is a one-line error naming it, not a controller failing mid-stream."""
from __future__ import annotations

import json
from pathlib import Path

from controllers.multilevel import CapacityTable, TableError

EXPERIMENT = "characterisation"
ARTIFACT = "multilevel_table.json"
TABLE_TAG = "multilevel.table"
QUERY_TAG = "multilevel.query"


class TableNotFound(LookupError):
    pass


def query_identity(query: str | None, topology: str | None) -> str:
    """What a table's rates hold for: the --query as given, else the benchmark topology by name."""
    return query if query is not None else f"topology:{topology or 'default'}"


def resolve(reference: str, identity: str, operators: tuple[str, ...], tracking_uri: str) -> CapacityTable:
    """The table `reference` names, checked against the run's query and operators; TableError/TableNotFound say
    what is wrong with which table."""
    path = Path(reference)
    if reference.endswith(".json") or path.is_file():
        if not path.is_file():
            raise TableNotFound(f"table file {reference} does not exist")
        where = f"table file {reference}"
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise TableError(f"{where}: not JSON (line {exc.lineno}: {exc.msg})") from None
    else:
        data, where = _from_mlflow(reference, identity, tracking_uri)
    table = CapacityTable.from_dict(data, where)
    table.check_for(operators, identity, where)
    return table


def _from_mlflow(reference: str, identity: str, tracking_uri: str) -> tuple[dict, str]:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    if reference == "latest":
        experiment = client.get_experiment_by_name(EXPERIMENT)
        runs = [] if experiment is None else client.search_runs(
            [experiment.experiment_id],
            f"tags.`{TABLE_TAG}` = 'true' and tags.`{QUERY_TAG}` = '{identity}' and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"], max_results=1)
        if not runs:
            raise TableNotFound(f"no capacity table for query {identity!r} in experiment {EXPERIMENT!r} at "
                                f"{tracking_uri}: run python -m analysis.multilevel_table first, or give table=FILE")
        run_id = runs[0].info.run_id
    else:
        run_id = reference
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise TableNotFound(f"table run {run_id!r} is not in the tracking store {tracking_uri}") from None
    if run.data.tags.get(TABLE_TAG) != "true":
        raise TableError(f"run {run_id} is not a capacity table run (tag {TABLE_TAG} missing)")
    local = client.download_artifacts(run_id, ARTIFACT)
    return json.loads(Path(local).read_text()), f"table run {run_id}"
