"""`mean_rate` on a trace: the rate_scale a run needs for a trace nobody has measured, derived from the buckets the
run replays, and recorded so that Spark's workers (which do not read the file) replay the same events."""
from __future__ import annotations

import json

import numpy as np
import pytest

from workloads import Schedule
from workloads.spec import WorkloadError, load_workload, parse_workload
from workloads.traces import DEFAULT_TRACES_DIR, traces_dir

# a 1-s trace of 40 buckets: quiet, a burst at 10-11 s, then a higher level from 20 s
COUNTS = [10] * 10 + [400, 300] + [10] * 8 + [50] * 20


@pytest.fixture()
def trace_file(tmp_path):
    path = tmp_path / "rate.csv"
    path.write_text("t_seconds,events\n" + "".join(f"{t},{c}\n" for t, c in enumerate(COUNTS)))
    return str(path)


def spec(trace_file: str, **trace) -> dict:
    return {"name": "mine", "trace": {"path": trace_file, **trace}, "seed": 3}


def test_the_replayed_window_offers_the_mean_rate_asked_for(trace_file):
    workload = parse_workload(spec(trace_file, mean_rate=2000))
    schedule = Schedule(workload)
    assert workload.duration_s == 40
    assert schedule.total_events == pytest.approx(2000 * 40, abs=2)
    assert workload.streams[0].trace.rate_scale == pytest.approx(2000 * 40 / sum(COUNTS))


def test_only_the_buckets_the_run_replays_set_the_scale(trace_file):
    """A run shorter than the window (here the first 12 s, the burst included) is scaled on what it replays, not on
    the window's later level, which it never reaches."""
    workload = parse_workload({**spec(trace_file, mean_rate=1000), "duration_s": 12})
    assert workload.streams[0].trace.rate_scale == pytest.approx(1000 * 12 / sum(COUNTS[:12]))
    assert Schedule(workload).total_events == pytest.approx(12_000, abs=2)
    compressed = parse_workload({**spec(trace_file, mean_rate=1000, compression=4), "duration_s": 5})
    assert compressed.streams[0].trace.rate_scale == pytest.approx(1000 * 5 / sum(COUNTS[:20]))


def test_the_bursts_keep_their_shape(trace_file):
    scaled = Schedule(parse_workload(spec(trace_file, mean_rate=2000)))
    plain = Schedule(parse_workload(spec(trace_file)))
    ratio = scaled.total_events / plain.total_events
    for t in (5, 11, 30):
        assert scaled.count_due(t * 1_000_000) == pytest.approx(ratio * plain.count_due(t * 1_000_000), rel=0.01)


def test_the_recorded_form_replays_the_same_events_with_or_without_the_file(trace_file):
    workload = parse_workload(spec(trace_file, mean_rate=2000))
    assert parse_workload(workload.to_dict()) == workload
    on_a_worker = parse_workload(json.loads(workload.to_json()), check_traces=False)
    assert on_a_worker.streams[0].trace.rate_scale == workload.streams[0].trace.rate_scale
    shorter = workload.with_overrides(duration_s=12)
    assert shorter.streams[0].trace.rate_scale == pytest.approx(2000 * 12 / sum(COUNTS[:12]))


def test_a_multi_stream_workload_scales_each_trace_on_its_own(trace_file):
    workload = parse_workload({"name": "two", "seed": 1, "streams": [
        {"name": "a", "trace": {"path": trace_file, "mean_rate": 500}},
        {"name": "b", "trace": {"path": trace_file, "rate_scale": 2}}]})
    a, b = (s.trace for s in workload.streams)
    assert a.rate_scale == pytest.approx(500 * 40 / sum(COUNTS)) and b.rate_scale == 2


@pytest.mark.parametrize("trace, message", [
    ({"mean_rate": 0}, "field 'trace'.mean_rate must be > 0"),
    ({"mean_rate": "2000"}, "field 'trace'.mean_rate must be a number"),
    ({"mean_rate": 2000, "rate_scale": 3}, "give rate_scale or mean_rate, not both"),
    ({"mean_rate": 2000, "records": "task_events"}, "mean_rate scales the counts"),
])
def test_bad_mean_rates_name_the_field(trace_file, trace, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload(spec(trace_file, **trace), source="mine.yaml")


def test_a_silent_window_cannot_be_scaled_and_says_where(tmp_path):
    path = tmp_path / "rate.csv"
    path.write_text("t_seconds,events\n" + "".join(f"{t},{0 if t < 10 else 5}\n" for t in range(20)))
    with pytest.raises(WorkloadError, match=r"mine.yaml: field 'trace'.mean_rate: the replayed window \[0, 10\) s"):
        parse_workload({"name": "m", "trace": {"path": str(path), "mean_rate": 100}, "duration_s": 10},
                       source="mine.yaml")


BURSTY = ("bursty-google-tasks", "bursty-google-tasks-1s", "bursty-alibaba-batch", "bursty-azure-conv",
          "bursty-nasa-day")


@pytest.mark.skipif(not (traces_dir() / "google2011_task_events").is_dir(),
                    reason=f"the shared traces are not in {DEFAULT_TRACES_DIR} (../shared/traces beside the checkout) "
                           "or $ELASTIC_TRACES_DIR")
@pytest.mark.parametrize("name", BURSTY)
def test_the_bursty_suites_rule_is_mean_rate_2000(name):
    """The bursty catalogue wrote its rule (rate_scale = 2000 ev/s / the window's mean) as rounded numbers; the field
    gives the same scale within their rounding, so a new trace follows the suite's rule by writing mean_rate: 2000."""
    written = load_workload(name)
    raw = written.to_dict()
    raw["trace"].pop("rate_scale")
    derived = parse_workload({**raw, "trace": {**raw["trace"], "mean_rate": 2000}})
    assert derived.streams[0].trace.rate_scale == pytest.approx(written.streams[0].trace.rate_scale, rel=0.01)
    assert Schedule(derived).total_events == pytest.approx(2000 * written.duration_s, abs=2)
