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
        df = (spark.read.format("workload_replay").option("spec", schedule.spec.to_json())
              .option("schedule_state", schedule.state()).option("first", str(first)).option("stop", str(stop))
              .load())
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


def _run(tmp_path, tracking_uri, query, controller_args):
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps({**WORKLOAD, "duration_s": 16}))
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
    longer = Schedule(parse_workload({**WORKLOAD, "duration_s": 16}, "test"))
    same, why = nx.same_rows(nx.answer("q4", read_output(out / "sink")), nx.expected("q4", longer))
    assert same, why


def test_a_users_query_module_runs_under_a_controller(tmp_path, tracking_uri):
    example = Path(__file__).resolve().parents[2] / "examples" / "key_windows.py"
    out, summary = _run(tmp_path, tracking_uri, f"{example}:build", ["--controller", "threshold"])
    assert summary["records_lost"] == 0 and summary["records_duplicated"] == 0
    windows = read_output(out / "sink").to_pandas()
    # every event is counted once, in the window its time falls in, whatever the batches and degrees
    assert windows["events"].sum() == summary["records_in"] > 0
    assert not windows.duplicated(["key", "window_start_us"]).any()
