"""The Nexmark queries and a user's query on real Spark give exactly the pandas references' answers.

Two levels: every query through the job's per-batch function (jobs.operators.apply_query with the driver's state,
jobs.query_runtime) on micro-batches read by the replay source, every operator's degree changing from batch to
batch (1, 2, 4, 3, ...); and whole streaming runs (`python -m jobs.run --query ...`) under a controller that
changes degrees live, checked from the committed output. The fast check of the same queries without Spark, at
fixed degrees too, is tests/queries/test_nexmark_queries.py."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from jobs.sink_check import read_output
from queries import nexmark as nx
from tests.support import run_cli
from workloads.schedule import Schedule
from workloads.spec import parse_workload

pytestmark = pytest.mark.spark

WORKLOAD = {"name": "nexmark-spark-test", "profile": "step", "duration_s": 12, "seed": 5,
            "params": {"low": 1000, "high": 2500, "at_s": 6}}
DEGREES = [1, 2, 4, 3]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from jobs.config import RunConfig
    from jobs.spark_session import package_code, start_spark

    config = RunConfig("static", {}, WORKLOAD, master="local[2]", quiet=True).validate()
    session = start_spark(config, package_code(tmp_path_factory.mktemp("code") / "code.zip"))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def schedule():
    return Schedule(parse_workload(WORKLOAD, "test"))


def _replay(spark, schedule, first: int, stop: int):
    """Events [first, stop) of the schedule as the replay source serves a micro-batch."""
    return (spark.read.format("workload_replay").option("spec", schedule.spec.to_json())
            .option("schedule_state", schedule.state()).option("first", str(first)).option("stop", str(stop)).load())


def _run_batches(spark, schedule, query):
    """The query over four micro-batches, as jobs.batch.BatchProcessor runs them, degrees changing each batch."""
    from jobs.operators import apply_query
    from jobs.query_runtime import QueryState, batch_context

    state = QueryState(query)
    context = batch_context(schedule.spec, schedule.state())
    total = schedule.total_events
    bounds = [total * i // len(DEGREES) for i in range(len(DEGREES) + 1)]
    outputs = []
    for b, (first, stop) in enumerate(zip(bounds, bounds[1:])):
        df = _replay(spark, schedule, first, stop)
        degrees = {op: DEGREES[(b + i) % len(DEGREES)] for i, op in enumerate(query.names)}
        out = apply_query(df, query, degrees, context=context, state=state.payload()).toArrow()
        outputs.append(state.after_batch(out, int(schedule.arrival_us(stop - 1, stop)[0])))
    final = state.flush()
    outputs += [final] if final is not None else []
    return pa.concat_tables(outputs)


@pytest.mark.parametrize("name", list(nx.QUERIES))
def test_each_nexmark_query_on_spark_equals_its_reference_across_degree_changes(spark, schedule, name):
    output = _run_batches(spark, schedule, nx.build(name))
    same, why = nx.same_rows(nx.answer(name, output), nx.expected(name, schedule))
    assert same, f"{name}: {why}"


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_dataframe_example_equals_the_arrow_example_across_degree_changes(spark, schedule):
    """The same windows per key written with DataFrame operators and with Arrow operators: the same rows."""
    from jobs.experiment import ship_query_module
    from queries.loading import load_query

    answers = []
    for example in ("key_windows.py", "key_windows_dataframe.py"):
        query, module = load_query(f"{EXAMPLES / example}:build")
        ship_query_module(module)  # as a run does: the user's module goes to the workers by value
        answers.append(_run_batches(spark, schedule, query).to_pandas())
    arrow, frame = answers
    assert arrow["events"].sum() == schedule.total_events
    same, why = nx.same_rows(frame, arrow)
    assert same, why


def _measured_batch(spark, schedule, query, degrees, first, stop):
    """The query on events [first, stop) as a run's batch measures it: its executed plan and its stats."""
    from jobs.metrics import OperatorStats
    from jobs.operators import apply_query
    from jobs.query_runtime import batch_context

    stats = OperatorStats(spark.sparkContext, query.names)
    df = _replay(spark, schedule, first, stop)
    plan = apply_query(df, query, degrees, stats.accumulators, observations=stats.observations,
                       context=batch_context(schedule.spec, schedule.state()))
    executed = plan._jdf.queryExecution().executedPlan().toString()
    plan.toArrow()
    stats.absorb()
    return executed, stats


def test_a_keyed_dataframe_operator_is_measured_and_its_groupby_needs_no_other_shuffle(spark, schedule):
    """Its input rows (and, as the first operator, the ids it read) come from Spark's Observation, its tasks are
    its degree, and its groupBy on its key runs on the repartition the engine made: one exchange per stage."""
    from jobs.experiment import ship_query_module
    from jobs.operators import chains
    from queries.loading import load_query

    query, module = load_query(f"{EXAMPLES / 'key_windows_dataframe.py'}:build")
    ship_query_module(module)
    degrees = {"partials": 3, "windows": 2}
    executed, stats = _measured_batch(spark, schedule, query, degrees, 100, 2100)
    assert executed.count("Exchange ") == len(chains(query, degrees)) == 2, executed
    partials, windows = stats.read(degrees)
    raw = stats.raw("partials")
    assert (partials.records_in, raw[3]) == (2000, sum(range(100, 2100)))
    assert partials.tasks == 3 and windows.tasks == 2 and partials.busy_s > 0
    assert windows.records_in == partials.records_out > 0


def test_an_unkeyed_dataframe_operator_runs_in_its_predecessors_stage_and_keeps_its_own_metrics(spark, schedule):
    """q1df at one degree: `convert` needs no shuffle after `events` (one exchange, before `events`), and is still
    measured as an operator of its own; at another degree it gets its own stage."""
    from jobs.operators import chains

    query = nx.build("q1df")
    for degrees, exchanges in (({"events": 2, "convert": 2}, 1), ({"events": 2, "convert": 3}, 2)):
        executed, stats = _measured_batch(spark, schedule, query, degrees, 0, 3000)
        assert executed.count("Exchange ") == len(chains(query, degrees)) == exchanges, executed
        events, convert = stats.read(degrees)
        assert (events.records_in, events.records_out, convert.records_in) == (3000, 3000, 3000)
        assert 0 < convert.records_out < 3000 and convert.tasks == degrees["convert"] and convert.busy_s > 0


def test_a_dataframe_operator_missing_a_declared_column_is_refused_before_any_job(spark):
    from jobs.operators import apply_query
    from queries.api import Operator, Query, QueryError

    query = Query("q", (Operator("pick", None, "key INT, total BIGINT", dataframe=lambda df, ctx: df.select("key")),))
    df = spark.createDataFrame([], "event_id BIGINT, arrival_ts TIMESTAMP, key INT, payload BINARY")
    with pytest.raises(QueryError, match="operator 'pick': field 'schema' declares column\\(s\\) total"):
        apply_query(df, query, {"pick": 1})


def _run(tmp_path, tracking_uri, query, controller_args):
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps(WORKLOAD))
    out = tmp_path / "run"
    proc = run_cli([*controller_args, "--workload", str(workload), "--query", query,
                    "--output-dir", str(out), "--tracking-uri", tracking_uri, "--trigger", "1", "--quiet",
                    "--summary-json", str(tmp_path / "summary.json")], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, json.loads((tmp_path / "summary.json").read_text())


def test_a_streaming_nexmark_run_with_live_degree_changes_gives_the_reference_answer(tmp_path, tracking_uri,
                                                                                        schedule):
    """q4 holds state per open auction: its degree goes 1 -> 3 -> 2 mid-run, and every auction's winning bid is
    still found once."""
    changes = "changes={3: {winning_bids: 3, select: 2}, 7: {winning_bids: 2, events: 2}}"
    out, summary = _run(tmp_path, tracking_uri, "nexmark:q4", ["--controller", "scripted", "--param", changes])
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    assert summary["scaling_actions"] == 2
    same, why = nx.same_rows(nx.answer("q4", read_output(out / "sink")), nx.expected("q4", schedule))
    assert same, why


def test_a_users_dataframe_query_module_runs_under_a_controller(tmp_path, tracking_uri):
    """The DataFrame version of the docs' example (the Arrow version runs batch by batch above, with the same
    answer) under DS2, which reads the DataFrame operator's measured rates."""
    out, summary = _run(tmp_path, tracking_uri, f"{EXAMPLES / 'key_windows_dataframe.py'}:build",
                        ["--controller", "ds2"])
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    windows = read_output(out / "sink").to_pandas()
    # every event is counted once, in the window its time falls in, whatever the batches and degrees
    assert windows["events"].sum() == summary["records_in"] > 0
    assert not windows.duplicated(["key", "window_start_us"]).any()
