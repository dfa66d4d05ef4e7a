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
