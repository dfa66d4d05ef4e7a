"""The operator API's checks (queries.api.check_query) and the --query loader (queries.loading): every wrong
query is refused with its reference and the field at fault named, before Spark starts."""
from __future__ import annotations

import textwrap

import pyarrow as pa
import pytest

from queries.api import Operator, Query, QueryError, Stateful, check_query, schema_columns
from queries.loading import load_query

STATE = pa.schema([("key", pa.int32()), ("n", pa.int64())])


def _identity(t, ctx):
    return t


def _step(rows, state, ctx):
    return rows, state


SOURCE_DDL = "event_id BIGINT, arrival_ts TIMESTAMP, key INT, payload BINARY"


@pytest.mark.parametrize("ops, message", [
    ((), "has no operators"),
    ((Operator("", _identity, SOURCE_DDL),), "field 'name' must be a name"),
    ((Operator("a b", _identity, SOURCE_DDL),), "field 'name' must be a name"),
    ((Operator("a", _identity, SOURCE_DDL), Operator("a", _identity, SOURCE_DDL)), "used twice"),
    ((Operator("a", "not callable", SOURCE_DDL),), "field 'transform' must be a function"),
    ((Operator("a", _identity, ""),), "field 'schema' must be a Spark DDL schema"),
    ((Operator("a", _identity, SOURCE_DDL, key="user"),), "field 'key' names column 'user'"),
    ((Operator("a", _identity, "x BIGINT"), Operator("b", _identity, "x BIGINT", key="key")),
     "field 'key' names column 'key', which its input does not have (input columns: x)"),
    ((Operator("a", _identity, SOURCE_DDL, cpu_us=-1),), "field 'cpu_us' must be a number >= 0"),
    ((Operator("s", None, "key INT, n BIGINT", state=Stateful(STATE, _step)),), "needs field 'key'"),
    ((Operator("s", None, "key INT, n BIGINT", key="key", state=Stateful(STATE, None)),),
     "field 'state.step' must be a function"),
    ((Operator("s", None, "key INT, n BIGINT", key="key", state=Stateful(pa.schema([("n", pa.int64())]), _step)),),
     "must be a pyarrow schema holding the key column 'key'"),
    ((Operator("s", None, "key INT, n BIGINT", key="key", state=Stateful(STATE, _step)),
      Operator("t", _identity, "key INT, n BIGINT")), "must be the query's last"),
    ((Operator("d", _identity, SOURCE_DDL, dataframe=_identity),), "give one of fields 'transform', 'dataframe', "
     "'state', not 'transform' and 'dataframe'"),
    ((Operator("d", None, SOURCE_DDL, dataframe="select *"),), "field 'dataframe' must be a function"),
    ((Operator("d", None, "key INT, n BIGINT", key="key", dataframe=_identity, state=Stateful(STATE, _step)),),
     "not 'dataframe' and 'state'"),
    ((Operator("d", None, SOURCE_DDL, dataframe=_identity, cpu_us=5),), "a DataFrame operator's cost is what "
     "Spark spends on it"),
])
def test_a_wrong_query_is_refused_naming_the_field(ops, message):
    with pytest.raises(QueryError, match="my_query:build") as err:
        check_query(Query("q", ops), "my_query:build")
    assert message in str(err.value)


def test_a_good_query_passes_and_ddl_columns_are_read_with_nested_types():
    ops = (Operator("a", _identity, SOURCE_DDL), Operator("s", None, "key INT, n BIGINT", key="key",
                                                          state=Stateful(STATE, _step)))
    assert check_query(Query("q", ops), "x").names == ("a", "s")
    assert schema_columns("a BIGINT, b ARRAY<INT>, c DECIMAL(10,2), d MAP<STRING, INT>") == ["a", "b", "c", "d"]


def test_the_loader_names_what_is_wrong(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("x = (\n")
    (tmp_path / "fails.py").write_text(textwrap.dedent("""
        def build():
            raise RuntimeError("no table")
    """))
    (tmp_path / "wrong_type.py").write_text("def build():\n    return 42\n")
    cases = {
        "nothing": "expected MODULE:FUNCTION",
        "no_such_module:build": "no module named 'no_such_module' on the Python path",
        "missing.py:build": "no file missing.py",
        "broken.py:build": "broken.py, line 1",
        "fails.py:build": "build() failed: RuntimeError: no table",
        "fails.py:other": "has no function 'other'",
        "wrong_type.py:build": "returned int, expected a queries.api.Query",
        "nexmark:q9": "has no function 'q9'; it has q0, q1, q2, q3, q4, q5, q7, q8, q1df, q2df, q5df",
    }
    for ref, message in cases.items():
        with pytest.raises(QueryError) as err:
            load_query(ref)
        assert message in str(err.value), (ref, str(err.value))


def test_the_nexmark_queries_and_the_example_load():
    from pathlib import Path

    query, module = load_query("nexmark:q5")
    assert query.names == ("events", "windows", "count") and module.__name__ == "queries.nexmark"
    example = Path(__file__).resolve().parents[2] / "examples" / "key_windows.py"
    query, _ = load_query(f"{example}:build")
    assert query.names == ("decode", "windows") and query.stateful.name == "windows"
    query, _ = load_query(f"{example.with_name('key_windows_dataframe.py')}:build")
    assert query.operators[0].dataframe is not None and query.operators[0].key == "key"
    assert load_query("nexmark:q5df")[0].names == ("events", "window_counts", "count")


def test_bad_query_input_stops_the_run_before_spark(tmp_path):
    from jobs.config import InputError, RunConfig

    with pytest.raises(InputError, match="nexmark query|has no function 'q6'"):
        RunConfig("static", {}, "constant", query="nexmark:q6").validate()
    with pytest.raises(InputError, match="cannot be combined with --query"):
        RunConfig("static", {}, "constant", query="nexmark:q1", topology="zero-cost").validate()
    with pytest.raises(InputError, match="placement controllers place the benchmark topology"):
        RunConfig("static", {"degree": 2}, "constant", query="nexmark:q1", placement="sousa").validate()
