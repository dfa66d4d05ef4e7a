"""The multi-level controller's capacity table as a run finds it (jobs/capacity_table.py), in a real MLflow store:
logged by the phase-B command's own function, found by run id and as `latest` for the run's query, and refused with
one line naming the table when it is missing, from another query or topology, empty or not a table run."""
import json

import pytest

from analysis.multilevel_table import log_table, staircase_workload
from controllers.multilevel import CapacityTable, TableError
from jobs.capacity_table import TableNotFound, query_identity, resolve
from workloads import Schedule, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")
QUERY = query_identity(None, "default")


def table(rate=3000.0, query=QUERY, operators=OPS):
    return CapacityTable.from_dict({"operators": list(operators), "query": query, "rows": [
        {"rate_eps": rate, "degrees": {op: 1 for op in operators}, "executors": 1}]})


def test_a_logged_table_is_found_by_id_and_as_the_latest_for_its_query(tracking_uri):
    first = log_table(table(3000), tracking_uri, {"period_s": 10}, "benchmark-run-1")
    log_table(table(9999, query="nexmark:q5"), tracking_uri, {"period_s": 10}, "benchmark-run-2")
    assert resolve(first, QUERY, OPS, tracking_uri).rows[0].rate_eps == 3000
    newer = log_table(table(4000), tracking_uri, {"period_s": 10}, "benchmark-run-3")
    latest = resolve("latest", QUERY, OPS, tracking_uri)
    assert latest.rows[0].rate_eps == 4000 and newer != first  # the newest for this query, not the q5 one
    with pytest.raises(TableError, match=f"table run {first}: measured on query 'topology:default', this run "
                                         "computes 'nexmark:q1'"):
        resolve(first, "nexmark:q1", OPS, tracking_uri)
    with pytest.raises(TableNotFound, match="no capacity table for query 'nexmark:q7'.*analysis.multilevel_table"):
        resolve("latest", "nexmark:q7", OPS, tracking_uri)
    with pytest.raises(TableNotFound, match="table run 'nonesuch' is not in the tracking store"):
        resolve("nonesuch", QUERY, OPS, tracking_uri)


def test_a_table_file_is_checked_like_a_logged_one(tmp_path, tracking_uri):
    good = tmp_path / "table.json"
    good.write_text(json.dumps(table().to_dict()))
    assert resolve(str(good), QUERY, OPS, tracking_uri).rows[0].executors == 1
    other = tmp_path / "other.json"
    other.write_text(json.dumps(table(operators=("a", "b")).to_dict()))
    with pytest.raises(TableError, match=f"table file {other}: measured on operators"):
        resolve(str(other), QUERY, OPS, tracking_uri)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({**table().to_dict(), "rows": []}))
    with pytest.raises(TableError, match="field 'rows' is empty"):
        resolve(str(empty), QUERY, OPS, tracking_uri)
    broken = tmp_path / "broken.json"
    broken.write_text('{"rows": [\n')
    with pytest.raises(TableError, match="not JSON \\(line 2"):
        resolve(str(broken), QUERY, OPS, tracking_uri)
    with pytest.raises(TableNotFound, match="does not exist"):
        resolve(str(tmp_path / "absent.json"), QUERY, OPS, tracking_uri)


def test_the_benchmark_staircase_rises_level_by_level(tmp_path):
    path = staircase_workload(tmp_path / "s.yaml", 1000, 3000, 1000, 10, seed=1, hold_s=5)
    schedule = Schedule(load_workload(str(path)))
    assert schedule.total_events == 1000 * 15 + 2000 * 10 + 3000 * 10  # the first level held 5 s longer


def test_a_logged_table_is_registered_and_found_by_its_alias_which_only_moves_when_asked(new_tracking_uri, capsys):
    from mlflow.tracking import MlflowClient

    from analysis.multilevel_table import main
    from jobs.capacity_table import registered_name

    tracking_uri = new_tracking_uri()  # a store of its own: the version numbers below count from 1
    mlflow_client = MlflowClient(tracking_uri)
    first = log_table(table(3000), tracking_uri, {"period_s": 10}, "benchmark-run-1")
    assert resolve("@current", QUERY, OPS, tracking_uri).rows[0].rate_eps == 3000
    log_table(table(4000), tracking_uri, {"period_s": 10}, "benchmark-run-2", alias="")  # registered, alias stays
    assert resolve("@current", QUERY, OPS, tracking_uri).rows[0].rate_eps == 3000
    assert resolve("latest", QUERY, OPS, tracking_uri).rows[0].rate_eps == 4000
    name = registered_name(QUERY)
    assert name == "multilevel-table.topology-default"
    assert {str(v.version): v.run_id for v in mlflow_client.search_model_versions(f"name='{name}'")}["1"] == first
    # a user pins a table by hand: the alias moves to a new version of that run, and runs read it
    assert main(["--register", first, "--alias", "pinned", "--tracking-uri", tracking_uri]) == 0
    assert f"table run {first} registered as {name} version 3, alias 'pinned' moved to it" in capsys.readouterr().out
    pinned = resolve("@pinned", QUERY, OPS, tracking_uri)
    assert pinned.rows[0].rate_eps == 3000 and pinned.source == f"table run {first} ({name}@pinned, version 3)"
    assert main(["--list", "--tracking-uri", tracking_uri]) == 0
    listed = capsys.readouterr().out
    assert listed.index(f"{name} version 3 @pinned (table run {first})") < listed.index(f"{name} version 2 (table") \
        < listed.index(f"{name} version 1 @current (table run {first})")
    assert listed.count("      3000         1") == 2 and "      4000         1" in listed
    assert main(["--list", "--query", "nexmark:q3", "--tracking-uri", tracking_uri]) == 1
    assert "no registered table for query 'nexmark:q3'" in capsys.readouterr().err
    with pytest.raises(TableNotFound, match=f"no version of registered table '{name}' has alias 'nonesuch'"):
        resolve("@nonesuch", QUERY, OPS, tracking_uri)
    # another query's alias is not this query's: the q5 table is registered under its own name
    log_table(table(9999, query="nexmark:q5"), tracking_uri, {"period_s": 10}, "benchmark-run-3")
    assert resolve("@current", QUERY, OPS, tracking_uri).rows[0].rate_eps == 3000
    with pytest.raises(TableNotFound, match="'multilevel-table.nexmark-q1' has alias 'current'"):
        resolve("@current", "nexmark:q1", OPS, tracking_uri)
    # registering a run that is not this query's table is refused with one line, exit 2
    assert main(["--register", first, "--query", "nexmark:q5", "--tracking-uri", tracking_uri]) == 2
    assert "holds the table of query 'topology:default', not 'nexmark:q5'" in capsys.readouterr().err


def test_without_a_registered_predictor_multilevel_keeps_its_trend_and_records_it(new_tracking_uri):
    """What a run of `--controller multilevel --param table=@current --param predictor=registry` binds when the
    registry has no load predictor: the table behind the alias, and the trend recorded as its predictor, not the OLS
    the registry hands over for AUTOSCALE (the run's own checks need a cluster master; tests/jobs/
    test_standalone_cluster.py runs multilevel on one)."""
    import controllers
    from jobs.predictors import load_registered_predictor

    tracking_uri = new_tracking_uri()
    log_table(table(3000), tracking_uri, {"period_s": 10}, "benchmark-run-1")
    loaded = load_registered_predictor(tracking_uri, "load-predictor", "champion")
    assert "is not a registered model" in loaded.warning
    controller = controllers.build_controller("multilevel", {"table": "@current", "predictor": "registry"}, OPS, 8)
    controller.bind(controllers.RunContext(trigger_s=2.0, slo_latency_s=5.0, predictor=loaded.predictor,
                                           predictor_warning=loaded.warning,
                                           capacity_table=resolve("@current", QUERY, OPS, tracking_uri)))
    assert controller.table.rows[0].rate_eps == 3000
    assert {**loaded.tags, **controller.run_tags()}["predictor"] == "trend"  # as jobs.recording.run_record merges
    assert "; the trend is used" in controller.predictor_note


def test_a_table_measured_on_generated_events_is_not_taken_for_a_trace_of_another_event_format(tracking_uri):
    """The workload family: the benchmark measures on the generator's records; a run replaying Google task events
    parses CSV lines, so its query identity differs and no table is found for it, by `latest` or by alias."""
    family = query_identity(None, "default", "google_task_events_csv")
    assert family == "topology:default+google_task_events_csv" and query_identity(None, "default", "binary") == QUERY
    log_table(table(3000), tracking_uri, {"period_s": 10}, "benchmark-run-generated")
    with pytest.raises(TableNotFound, match="no capacity table for query 'topology:default\\+google_task_events_csv'"):
        resolve("latest", family, OPS, tracking_uri)
    with pytest.raises(TableNotFound, match="'multilevel-table.topology-default-google_task_events_csv' has alias"):
        resolve("@current", family, OPS, tracking_uri)
