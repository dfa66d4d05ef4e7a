"""Native queries on real Spark: each shipped example, its state in RocksDB, equals its pandas reference across
rescales by restart (stop, repartition the checkpoint's state, start), with nothing lost or duplicated."""
from __future__ import annotations

import pandas as pd
import pytest

from queries import native
from queries import nexmark_reference as ref
from queries.nexmark import reference_events
from tests.jobs.native_support import ANCHOR_US, replay
from workloads.schedule import Schedule
from workloads.spec import parse_workload

pytestmark = pytest.mark.spark

WORKLOAD = {"name": "native-test", "profile": "step", "duration_s": 12, "seed": 5,
            "params": {"low": 1000, "high": 2500, "at_s": 6}}


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from jobs.config import RunConfig
    from jobs.native.run import NATIVE_SETTINGS
    from jobs.spark_session import package_code, start_spark

    config = RunConfig("static", {}, WORKLOAD, master="local[2]", quiet=True).validate()
    session = start_spark(config, package_code(tmp_path_factory.mktemp("code") / "code.zip"), NATIVE_SETTINGS)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def schedule():
    return Schedule(parse_workload(WORKLOAD, "test"))


@pytest.fixture(scope="module")
def streams(schedule):
    return reference_events(schedule)


def _sorted(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return df[columns].astype("int64", errors="ignore").sort_values(columns, ignore_index=True)


def test_windowed_count_equals_reference_across_rescales(spark, schedule, tmp_path):
    rows, restarts, (lost, duplicated), _ = replay(spark, "native:windowed_count", schedule, tmp_path, [2, 4, 1],
                                                   batch_events=4000)
    assert [(r.from_partitions, r.to_partitions) for r in restarts] == [(2, 4), (4, 1)]
    assert all(r.repartition_s > 0 and r.stop_attempts >= 1 for r in restarts)
    assert (lost, duplicated) == (0, 0)
    events = schedule.events(0, schedule.total_events)
    arrival_us = pd.Series(events.arrival_us + ANCHOR_US)
    expected = native.windowed_count_reference(arrival_us, pd.Series(events.key))
    closed_by_us = arrival_us.max() - 2_000_000  # the final watermark: windows ending by then are emitted
    expected = expected[expected["window_start"] + 5_000_000 <= closed_by_us]
    starts = pd.to_datetime(rows["window_start"], utc=True)
    got = rows.assign(window_start=(starts - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(microseconds=1))
    pd.testing.assert_frame_equal(_sorted(got, ["window_start", "key", "events"]),
                                  _sorted(expected, ["window_start", "key", "events"]))


# each query at 1, 2, 4 and 8 partitions, a quarter of the stream at each, rescaled mid-stream three times
@pytest.mark.parametrize("name,plan", [("q5", [1, 2, 4, 8]), ("q7", [8, 4, 2, 1]), ("q8", [2, 8, 1, 4])])
def test_nexmark_equals_reference_at_every_partition_count_across_rescales(spark, schedule, streams, tmp_path, name,
                                                                          plan):
    rows, restarts, (lost, duplicated), _ = replay(spark, f"native:{name}", schedule, tmp_path, plan,
                                                   batch_events=4000)
    assert [(r.from_partitions, r.to_partitions) for r in restarts] == list(zip(plan, plan[1:]))
    assert (lost, duplicated) == (0, 0)
    bids = streams["bid"]
    last_bid_us = int(bids["date_time_us"].max())
    if name == "q5":
        expected = ref.q5(bids)
        expected = expected[expected["window_start_us"] + ref.WINDOW_US <= last_bid_us]
        got = rows
    elif name == "q7":
        expected = ref.q7(bids)
        expected = expected[expected["window_start_us"] + ref.WINDOW_US <= last_bid_us]
        got = rows
    else:
        expected = ref.q8(streams["person"], streams["auction"])
        got = native.q8_answer(rows)
    columns = list(expected.columns)
    assert len(expected) > 0
    pd.testing.assert_frame_equal(_sorted(got, columns), _sorted(expected.reset_index(drop=True), columns))


BAD_JOBS = '''
def batch(events):
    return events.sparkSession.range(3)

def not_a_frame(events):
    return 42

def wrong_mode(events):
    return events.select("key"), "complete"
'''


@pytest.mark.parametrize("function,message", [
    ("batch", "returned a batch DataFrame"),
    ("not_a_frame", "returned int, not a streaming DataFrame"),
    ("wrong_mode", "Spark refuses the query: .*[Cc]omplete"),
])
def test_bad_queries_are_refused_before_the_stream_starts(spark, schedule, tmp_path, function, message):
    from jobs.native.query import NativeQueryError, Workload, load_native_query
    from jobs.native.stream import start_native_stream

    path = tmp_path / "bad_jobs.py"
    path.write_text(BAD_JOBS)
    native = load_native_query(f"{path}:{function}")
    with pytest.raises(NativeQueryError, match=message):
        start_native_stream(spark, native, Workload(schedule.spec, schedule.state()), lambda df, i: None,
                            tmp_path / "checkpoint", 1.0, tmp_path / "hold", anchor_us=ANCHOR_US)
    assert not spark.streams.active
    assert not (tmp_path / "checkpoint" / "commits").exists()  # nothing ran


def test_a_rescale_killed_inside_the_repartition_is_resumed_by_a_retry(spark, tmp_path):
    """The driver SIGKILLed while the repartition's Spark job runs (benchmarks/native_rescale_faults.py); the retry,
    here in this session, resumes the checkpoint: the output equals the reference, nothing lost or duplicated."""
    from benchmarks.native_rescale_faults import _driver, check, drive

    cut = _driver(tmp_path, "kill-in-repartition")
    assert cut.returncode == -9, cut.stderr[-2000:]
    assert drive(tmp_path, None) == 0
    held, figures = check(tmp_path)
    assert held, figures


def test_a_repartition_that_keeps_failing_fails_the_rescale_and_the_checkpoint_resumes(spark, tmp_path, capsys):
    """Every repartition job cancelled (an exception inside the repartition, its one retry failing too): the rescale
    fails in one line, and a retry resumes the checkpoint with the reference's output."""
    from benchmarks.native_rescale_faults import check, drive

    assert drive(tmp_path, "raise-in-repartition") == 1
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("rescale failed")]
    assert len(said) == 1 and "the repartition to 4 failed 2 times" in said[0]
    assert not spark.streams.active
    assert drive(tmp_path, None) == 0
    held, figures = check(tmp_path)
    assert held, figures
