"""The workload catalogue: every profile and trace replays deterministically, with the shape its source describes,
and bad input is rejected with the file, line or field named."""
import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads import Schedule, WorkloadError, catalogue_names, load_workload, parse_workload
from workloads.traces import DEFAULT_TRACES_DIR, available_traces, traces_dir

TRACES_PRESENT = bool(available_traces())
needs_traces = pytest.mark.skipif(
    not TRACES_PRESENT, reason=f"real traces not found in {traces_dir()} (set ELASTIC_TRACES_DIR to their folder)")


def digest(schedule: Schedule, first: int = 0, stop: int | None = None) -> str:
    ev = schedule.events(first, schedule.total_events if stop is None else stop)
    h = hashlib.sha256()
    payload = (b"\n".join(ev.payload.to_pylist()) if hasattr(ev.payload, "to_pylist")
               else np.ascontiguousarray(ev.payload).tobytes())
    for arr in (ev.event_id, ev.arrival_us, ev.key, ev.stream):
        h.update(np.ascontiguousarray(arr).tobytes())
    h.update(payload)
    return h.hexdigest()


def is_trace_entry(name: str) -> bool:
    text = (load_workload.__globals__["CATALOGUE_DIR"] / f"{name}.yaml").read_text()
    return "\ntrace:" in text or "  trace:" in text


SYNTHETIC = [n for n in catalogue_names() if not is_trace_entry(n)]
TRACE_ENTRIES = [n for n in catalogue_names() if is_trace_entry(n)]


# ---- the catalogue ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SYNTHETIC)
def test_synthetic_entries_replay_deterministically(name):
    spec = load_workload(name)
    a, b = Schedule(spec), Schedule(load_workload(name))
    assert a.total_events > 0
    stop = min(a.total_events, 50_000)
    assert digest(a, 0, stop) == digest(b, 0, stop), "same spec and seed, same events"
    other = Schedule(spec.with_overrides(seed=spec.seed + 1))
    assert digest(other, 0, min(stop, other.total_events)) != digest(a, 0, stop)


@needs_traces
@pytest.mark.parametrize("name", TRACE_ENTRIES)
def test_trace_entries_replay_their_window(name):
    spec = load_workload(name)
    s = Schedule(spec)
    t = spec.streams[0].trace
    assert s.total_events > 0 and len(t.sha256) == 64
    assert s.bucket_us == round(t.trace_bucket_s / t.compression * 1e6)
    stop = min(s.total_events, 20_000)
    assert digest(s, 0, stop) == digest(Schedule(load_workload(name)), 0, stop)


def test_catalogue_lists_the_seed_profiles():
    for required in ("constant", "step", "ramp", "sine", "flash-crowd", "random-walk", "autoscale-paper",
                     "seep-constant", "seep-periodic", "seep-random-peaks", "sousa-stable", "sousa-variable",
                     "google-like"):
        assert required in catalogue_names()


# ---- profile shapes ---------------------------------------------------------------------------------------------
def rates(spec_dict):
    s = Schedule(parse_workload(spec_dict))
    return s.rate_per_second()[1]


def test_autoscale_profile_low_exponential_high_steps_low():
    r = rates({"profile": "autoscale", "duration_s": 130,
               "params": {"low": 100, "high": 1600, "low_s": 20, "rise_s": 40, "high_s": 20, "steps": 3, "step_s": 10}})
    assert set(r[:20]) == {100}
    rise = r[20:60]
    assert np.all(np.diff(rise) > 0) and rise[-1] < 1600
    growth = rise[1:] / rise[:-1]
    assert growth.std() < 0.05 * growth.mean(), "exponential: constant growth factor"
    assert set(r[60:80]) == {1600}
    assert list(r[80:110:10]) == [1100, 600, 100] and set(r[110:]) == {100}


def test_seep_periodic_peaks_20s_every_60s():
    r = rates({"profile": "periodic_peaks", "duration_s": 180, "params": {"first_peak_s": 20}})
    assert set(r[:20]) == {10} and set(r[20:40]) == {20} and set(r[40:80]) == {10} and set(r[80:100]) == {20}


def test_random_peaks_first_peak_fixed_then_bounded_random_lengths():
    r = rates({"profile": "random_peaks", "duration_s": 600, "seed": 3})
    assert set(r[:10]) == {10} and set(r[10:15]) == {20} and r[15] == 10
    peak = (r == 20).astype(int)
    edges = np.flatnonzero(np.diff(np.concatenate([[0], peak, [0]])))
    lengths = edges[1::2] - edges[::2]
    assert len(lengths) >= 5 and lengths[1:-1].min() >= 5 and lengths.max() <= 31


def test_flash_crowd_spikes_then_decays_to_base():
    r = rates({"profile": "flash_crowd", "duration_s": 120,
               "params": {"base": 100, "peak": 1000, "at_s": 10, "rise_s": 2, "decay_s": 10}})
    assert r[5] == 100 and r[11:13].max() >= 700
    assert np.all(np.diff(r[13:]) <= 1) and r[-1] < 110  # (cumulative rounding: +-1 per bucket)


def test_levels_follow_the_pattern_with_ramps():
    r = rates({"profile": "levels", "duration_s": 180,
               "params": {"low": 50, "high": 550, "period_s": 60, "ramp_s": 10, "pattern": "ABA"}})
    assert r[30] == 550 and r[90] == 50 and r[150] == 550
    assert 50 < r[58] < 550 and 50 < r[61] < 550, "ramps around the boundary"


def test_google_like_is_lognormal_and_correlated():
    r = rates({"profile": "google_like", "duration_s": 20000, "seed": 5,
               "params": {"diurnal_amplitude": 0.0, "phi": 0.9}})
    logs = np.log(np.maximum(r, 0.5))
    assert abs(np.median(r) - 31.6) < 8
    assert 0.8 < logs.std() < 1.2
    lag1 = np.corrcoef(logs[:-1], logs[1:])[0, 1]
    assert 0.8 < lag1 < 0.97


def test_noise_is_mean_one_and_seeded():
    base = {"profile": "constant", "params": {"rate": 1000}, "duration_s": 2000, "seed": 1}
    noisy = rates({**base, "noise": {"sigma": 0.2}})
    assert noisy.std() > 100 and abs(noisy.mean() - 1000) < 30
    assert np.array_equal(noisy, rates({**base, "noise": {"sigma": 0.2}}))


def test_sousa_variable_matches_the_digest_total():
    s = Schedule(load_workload("sousa-variable"))
    assert len(s.spec.streams) == 13 and s.spec.total_keys == 13 * 50
    assert abs(s.total_events - 2.34e6) < 0.01 * 2.34e6  # Sousa 2014 App. A (pp. 67-73): about 2.34 M events per run


# ---- placement, streams and keys ----------------------------------------------------------------------------
GENERAL = [
    {"profile": "step", "params": {"low": 300, "high": 900, "at_s": 3}, "duration_s": 8, "arrivals": "poisson"},
    {"duration_s": 6, "streams": [
        {"profile": "constant", "params": {"rate": 200}, "keys": {"count": 10}},
        {"profile": "step", "params": {"low": 50, "high": 400, "at_s": 2}, "keys": {"count": 5}}]},
    {"duration_s": 6, "arrivals": "poisson", "bucket_s": 0.5, "streams": [
        {"profile": "constant", "params": {"rate": 333}},
        {"profile": "sine", "params": {"base": 300, "amplitude": 200, "period_s": 3}}]},
]


@pytest.mark.parametrize("raw", GENERAL)
def test_general_schedules_are_consistent_and_split_independent(raw):
    s = Schedule(parse_workload({**raw, "seed": 4}))
    arrivals = s.arrival_us(0, s.total_events)
    assert np.all(np.diff(arrivals) >= 0), "merged stream is in arrival order"
    bucket_of = arrivals // s.bucket_us
    assert np.array_equal(np.bincount(bucket_of, minlength=s.n_buckets)[: s.n_buckets], s.counts)
    whole = s.events(0, s.total_events)
    parts = [s.events(lo, min(lo + 257, s.total_events)) for lo in range(0, s.total_events, 257)]
    for field in ("arrival_us", "key", "stream", "payload"):
        np.testing.assert_array_equal(getattr(whole, field), np.concatenate([getattr(p, field) for p in parts]))
    for t in np.linspace(-5, s.duration_us + 5, 97).astype(np.int64):
        assert s.count_due(int(t)) == int(np.searchsorted(arrivals, t, side="right"))


def test_streams_have_disjoint_key_ranges():
    s = Schedule(parse_workload({**GENERAL[1], "seed": 1}))
    ev = s.events(0, s.total_events)
    assert set(np.unique(ev.key[ev.stream == 0])) <= set(range(10))
    assert set(np.unique(ev.key[ev.stream == 1])) <= set(range(10, 15))
    assert np.count_nonzero(ev.stream == 0) == 1200


def test_poisson_counts_vary_around_the_rate():
    s = Schedule(parse_workload({"profile": "constant", "params": {"rate": 100}, "duration_s": 400,
                                 "arrivals": "poisson", "seed": 2}))
    assert abs(s.counts.mean() - 100) < 3 and 7 < s.counts.std() < 13  # Poisson: sd = sqrt(100)


def test_zipf_keys_are_skewed_and_hot_keys_drift():
    base = {"profile": "constant", "params": {"rate": 20000}, "duration_s": 4, "seed": 1}
    zipf = Schedule(parse_workload({**base, "keys": {"count": 100, "distribution": "zipf", "zipf_s": 1.2}}))
    keys = zipf.events(0, zipf.total_events).key
    counts = np.bincount(keys, minlength=100)
    assert counts[0] > 10 * np.median(counts) and counts.argmax() == 0
    drifting = Schedule(parse_workload({**base, "keys": {"count": 100, "distribution": "zipf", "hot_key_drift_s": 1}}))
    ev = drifting.events(0, drifting.total_events)
    hottest = {int(np.bincount(ev.key[(ev.arrival_us // 1_000_000) == sec], minlength=100).argmax()) for sec in range(4)}
    assert len(hottest) >= 3, "the hot key moves every second"


def test_schedule_state_round_trip():
    spec = parse_workload({**GENERAL[2], "seed": 9, "noise": {"sigma": 0.3}})
    a = Schedule(spec)
    b = Schedule.from_state(parse_workload(spec.to_dict(), check_traces=False), a.state())
    assert digest(a) == digest(b)


def test_spec_round_trips_through_its_dict():
    for raw in GENERAL:
        spec = parse_workload(raw)
        assert parse_workload(spec.to_dict()) == spec


# ---- real traces ---------------------------------------------------------------------------------------------
def write_trace(path, rows, header="t_seconds,events"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return str(path)


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.integers(0, 300), min_size=3, max_size=40),
       compression=st.sampled_from([1, 2, 5, 10]), scale=st.sampled_from([1.0, 0.5, 3.0, 0.1]))
def test_trace_counts_are_replayed_exactly_after_scaling(tmp_path_factory, counts, compression, scale):
    path = write_trace(tmp_path_factory.mktemp("t") / "rate.csv", [f"{10 * i},{c}" for i, c in enumerate(counts)])
    s = Schedule(parse_workload({"trace": {"path": path, "compression": compression, "rate_scale": scale}}))
    assert s.bucket_us == 10_000_000 // compression and s.n_buckets == len(counts)
    expected_cum = np.cumsum(counts) * scale
    assert np.all(np.abs(s.cum[1:] - expected_cum) <= 1), "cumulative rounding: every prefix within one event"
    if scale == 1.0:
        assert list(s.counts) == counts
    arrivals = s.arrival_us(0, s.total_events)
    assert np.all(np.diff(arrivals) >= 0) and np.all(arrivals // s.bucket_us == np.repeat(np.arange(len(counts)), s.counts))


def test_trace_window_and_duration(tmp_path):
    path = write_trace(tmp_path / "rate.csv", [f"{i},{i}" for i in range(100)])
    spec = parse_workload({"trace": {"path": path, "start_s": 10, "length_s": 20, "compression": 2}})
    assert spec.duration_s == 10 and list(Schedule(spec).counts) == list(range(10, 30))
    shorter = spec.with_overrides(duration_s=5)
    assert list(Schedule(shorter).counts) == list(range(10, 20))


@pytest.mark.parametrize("rows,header,message", [
    (["0,1", "1,x"], "t_seconds,events", ":3: events 'x' is not a whole number"),
    (["0,1", "1,2,3"], "t_seconds,events", ":3: expected 2 fields"),
    (["0,1", "2,1", "1,1"], "t_seconds,events", ":4: non-monotonic time 1"),
    (["0,1", "1,1", "1,1"], "t_seconds,events", ":4: duplicate time 1"),
    (["0,1", "1,-4"], "t_seconds,events", ":3: negative count -4"),
    (["0,1", "1,1", "3,1"], "t_seconds,events", ":4: bucket of 2 s where the file's bucket is 1 s"),
    (["0,1", "1,1"], "time,count", ":1: expected header t_seconds,events"),
    (["0,1"], "t_seconds,events", "needs at least 2 data rows"),
])
def test_malformed_traces_name_file_and_line(tmp_path, rows, header, message):
    path = write_trace(tmp_path / "rate.csv", rows, header)
    with pytest.raises(WorkloadError) as err:
        parse_workload({"trace": {"path": path}}, source="bad.yaml")
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize("trace,message", [
    ({"start_s": 200}, "past the end of the trace"),
    ({"start_s": 90, "length_s": 20}, "goes past the end of the trace"),
    ({"length_s": 0}, "length_s must be > 0"),
    ({"compression": 0}, "compression must be > 0"),
    ({"start_s": 1.5}, "not on a bucket boundary"),
])
def test_bad_trace_windows_are_rejected(tmp_path, trace, message):
    path = write_trace(tmp_path / "rate.csv", [f"{i},1" for i in range(100)])
    with pytest.raises(WorkloadError, match=message):
        parse_workload({"trace": {"path": path, **trace}})


def test_missing_traces_directory_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("ELASTIC_TRACES_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(WorkloadError) as err:
        parse_workload({"trace": {"name": "google2011_task_events"}})
    assert str(tmp_path / "nowhere") in str(err.value) and "ELASTIC_TRACES_DIR" in str(err.value)


@pytest.mark.parametrize("raw,message", [
    ({"profile": "sine", "params": {"base": 1, "amplitude": 2, "period_s": 5}, "duration_s": 5},
     r"^spec.yaml: profile 'sine': amplitude \(2.0\) must not exceed base \(1.0\)"),
    ({"profile": "sine", "params": {"base": 1, "amplitude": 1, "period_s": 0}, "duration_s": 5},
     r"^spec.yaml: profile 'sine': parameter 'period_s' must be > 0.0, got 0.0$"),
    ({"profile": "levels", "params": {"low": 1, "high": 2, "pattern": "ABX"}, "duration_s": 5},
     r"^spec.yaml: profile 'levels': pattern must be a string of A \(high\) and B \(low\), got 'ABX'$"),
    ({"profile": "levels", "params": {"low": 1, "high": 2, "pattern": "AB", "ramp_s": 60}, "duration_s": 5},
     r"^spec.yaml: profile 'levels': ramp_s \(60.0\) must be shorter than period_s \(60.0\)$"),
    ({"profile": "google_like", "params": {"phi": 1.5}, "duration_s": 5},
     r"^spec.yaml: profile 'google_like': phi \(1.5\) must be below 1"),
    ({"profile": "random_walk", "params": {"start": 10, "step_sd": 1, "max": 5}, "duration_s": 5},
     r"^spec.yaml: profile 'random_walk': start \(10.0\) must lie between min \(0.0\) and max \(5.0\)$"),
    ({"profile": "autoscale", "params": {"low": 10, "high": 10, "low_s": 5, "rise_s": 10, "high_s": 5, "step_s": 3},
      "duration_s": 40}, r"^spec.yaml: profile 'autoscale': high \(10.0\) must be greater than low \(10.0\)$"),
    ({"profile": "random_peaks", "params": {"min_trough_s": 90}, "duration_s": 5},
     r"^spec.yaml: profile 'random_peaks': min_trough_s \(90.0\) must not exceed max_trough_s \(60.0\)$"),
    ({"profile": "constant", "params": {"rate": 1}, "duration_s": 5, "arrivals": "bursty"}, "'arrivals' must be one of"),
    ({"profile": "constant", "params": {"rate": 1}, "duration_s": 5, "keys": {"distribution": "zipf", "zipf_s": 0}},
     "zipf_s must be > 0"),
    ({"profile": "constant", "params": {"rate": 1}, "duration_s": 5, "noise": {"step_s": 1}}, "needs 'sigma'"),
    ({"duration_s": 5, "streams": []}, "non-empty list"),
    ({"duration_s": 5, "streams": [{"profile": "constant", "params": {"rate": 1}, "trace": {"name": "x"}}]},
     "exactly one of 'profile'"),
    ({"duration_s": 5, "profile": "constant", "streams": [{"profile": "constant", "params": {"rate": 1}}]},
     "belong inside each of 'streams'"),
])
def test_bad_specs_name_the_field(raw, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload(raw, source="spec.yaml")


@needs_traces
def test_real_trace_bucket_is_read_from_the_data():
    spec = parse_workload({"trace": {"name": "nasa_http_1995", "length_s": 3600}})
    assert spec.streams[0].trace.trace_bucket_s == 60 and spec.duration_s == 3600
    assert DEFAULT_TRACES_DIR.name == "traces"


# ---- real records as payload ----------------------------------------------------------------------------------
needs_task_records = pytest.mark.skipif(
    "google2011_task_events" not in available_traces(),
    reason=f"trace google2011_task_events not found in {traces_dir()} (set ELASTIC_TRACES_DIR)")


@needs_task_records
def test_task_event_records_are_replayed_row_by_row():
    import gzip

    spec = parse_workload({"trace": {"name": "google2011_task_events", "length_s": 30, "records": "task_events"}})
    s = Schedule(spec)
    ev = s.events(0, s.total_events)
    rows = ev.payload.to_pylist()
    # the raw part files, rows with timestamp in (600 s, 630 s): the same rows, in the same order
    part = traces_dir() / "google2011_task_events" / "raw" / "task_events" / "part-00000-of-00500.csv.gz"
    with gzip.open(part, "rb") as fh:
        raw = [line.rstrip(b"\n") for line in fh if 600e6 <= int(line.split(b",", 1)[0]) < 630e6]
    assert rows == raw and len(rows) > 200
    times = np.array([int(r.split(b",", 1)[0]) for r in rows])
    np.testing.assert_array_equal(ev.arrival_us, times - 600_000_000)
    assert list(s.counts) == list(np.bincount(ev.arrival_us // 1_000_000, minlength=30))
    machines = np.array([int(r.split(b",")[4] or 0) for r in rows])
    for key in np.unique(ev.key)[:50]:  # one key per machine
        assert len(set(machines[ev.key == key])) == 1


@needs_task_records
def test_task_event_filters_and_cpu_parsing():
    from jobs.operators import parse_batch
    from jobs.replay_source import event_batches

    spec = parse_workload({"trace": {"name": "google2011_task_events", "length_s": 60, "records": "task_events",
                                     "event_types": [1, 4], "require_machine": True, "compression": 2}})
    s = Schedule(spec)
    assert spec.duration_s == 30
    batch = next(event_batches(s, 0, 0, s.total_events))
    rows = [r.split(b",") for r in batch.column("payload").to_pylist()]
    assert {int(r[5]) for r in rows} <= {1, 4} and all(r[4] for r in rows)
    values = parse_batch(batch, "google_task_events_csv").column("value").to_pylist()
    assert values == [round(float(r[9] or 0) * 1e6) for r in rows]


@needs_task_records
@pytest.mark.parametrize("trace,message", [
    ({"rate_scale": 2}, "rate_scale must be 1 with records"),
    ({"event_types": [9]}, "event type codes 0-8"),
    ({"records": "job_events"}, "unknown record set"),
])
def test_bad_record_specs(trace, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload({"trace": {"name": "google2011_task_events", "records": "task_events", **trace}})
