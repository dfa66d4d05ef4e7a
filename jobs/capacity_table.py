"""The multi-level controller's capacity table, found where the user points (`table=`): a JSON file, an MLflow run
of `analysis.multilevel_table` by id, `latest` — the newest finished table run for the run's query in the
`characterisation` experiment — or `@ALIAS`, a registry alias of the table registered for the run's query. Read and
checked before Spark starts, so a table from another topology or query, an empty one or one that is not there is a
one-line error naming it, not a controller failing mid-stream.

Why a registry as well as `latest`: `latest` moves whenever anyone benchmarks (a half-loaded machine's table
included); an alias moves only when someone moves it (the benchmark moves `current` when it logs a table, a user can
pin another version in the MLflow UI or with `analysis.multilevel_table --register RUN_ID`), and every version keeps
the table run it came from, as the project's controller configurations and load predictors are kept."""
from __future__ import annotations

import json
import re
from pathlib import Path

from controllers.multilevel import CapacityTable, TableError

EXPERIMENT = "characterisation"
ARTIFACT = "multilevel_table.json"
TABLE_TAG = "multilevel.table"
QUERY_TAG = "multilevel.query"
REGISTERED_PREFIX = "multilevel-table"
DEFAULT_ALIAS = "current"  # the project's choice: the alias the benchmark moves to the table it has just logged


class TableNotFound(LookupError):
    pass


def query_identity(query: str | None, topology: str | None, payload_format: str = "binary") -> str:
    """What a table's rates hold for: the --query as given, else the benchmark topology by name and, when it is not
    the generator's own (`binary`), the event format its operators parse (the workload family: a trace replayed as
    Google task-event CSV lines costs parse more per event than the generated records a table is measured on)."""
    if query is not None:
        return query
    identity = f"topology:{topology or 'default'}"
    return identity if payload_format == "binary" else f"{identity}+{payload_format}"


def registered_name(identity: str) -> str:
    """The registered model that holds the tables of one query: `multilevel-table.topology-default`,
    `multilevel-table.nexmark-q5` (MLflow's names keep to letters, digits, '.', '_' and '-')."""
    return f"{REGISTERED_PREFIX}.{re.sub(r'[^A-Za-z0-9_.-]+', '-', identity).strip('-')}"


def register(client, run_id: str, identity: str, alias: str = DEFAULT_ALIAS) -> str:
    """A new version of the query's registered table, pointing at table run `run_id`, and `alias` moved to it;
    returns the version. Refuses a run that is not a table run or holds another query's table."""
    from mlflow.exceptions import MlflowException

    run = client.get_run(run_id)
    if run.data.tags.get(TABLE_TAG) != "true":
        raise TableError(f"run {run_id} is not a capacity table run (tag {TABLE_TAG} missing)")
    if run.data.tags.get(QUERY_TAG) != identity:
        raise TableError(f"run {run_id} holds the table of query {run.data.tags.get(QUERY_TAG)!r}, not {identity!r}")
    name = registered_name(identity)
    try:
        client.create_registered_model(name, tags={QUERY_TAG: identity}, description=(
            f"Capacity tables of query {identity!r} (analysis.multilevel_table). The multilevel controller reads "
            f"the version an alias marks: --param table=@{DEFAULT_ALIAS}."))
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    version = client.create_model_version(name, run.info.artifact_uri, run_id=run_id,
                                          tags={QUERY_TAG: identity, "table_run_id": run_id})
    if alias:
        client.set_registered_model_alias(name, alias, version.version)
    return str(version.version)


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
    where = None
    if reference.startswith("@"):
        run_id, where = _by_alias(client, reference[1:], identity, tracking_uri)
    elif reference == "latest":
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
    return json.loads(Path(local).read_text()), where or f"table run {run_id}"


def registered_versions(identity: str, tracking_uri: str) -> list[tuple[str, list[str], str, CapacityTable]]:
    """Every registered table of the query, newest first: (version, its aliases, its table run, the table)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    name = registered_name(identity)
    out = []
    for v in sorted(client.search_model_versions(f"name='{name}'"), key=lambda v: int(v.version), reverse=True):
        data, where = _from_mlflow(v.run_id, identity, tracking_uri)
        aliases = list(client.get_model_version(name, v.version).aliases)
        out.append((str(v.version), aliases, v.run_id, CapacityTable.from_dict(data, where)))
    return out


def _by_alias(client, alias: str, identity: str, tracking_uri: str) -> tuple[str, str]:
    """The table run behind `alias` of the query's registered table, and how to name it in a message."""
    from mlflow.exceptions import MlflowException

    name = registered_name(identity)
    try:
        version = client.get_model_version_by_alias(name, alias)
    except MlflowException:
        raise TableNotFound(f"no version of registered table {name!r} has alias {alias!r} in {tracking_uri}: "
                            f"python -m analysis.multilevel_table registers one (or --register RUN_ID)") from None
    return version.run_id, f"table run {version.run_id} ({name}@{alias}, version {version.version})"
