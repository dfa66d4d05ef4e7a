"""The schedule is the ground truth of every run: determinism, exact counts and the due-event arithmetic."""
import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads import Schedule, WorkloadError, load_workload, parse_workload


def spec(**kw):
    base = {"profile": "step", "params": {"low": 100, "high": 400, "at_s": 5}, "duration_s": 10, "seed": 7}
    base.update(kw)
    return parse_workload(base)


def digest(schedule: Schedule) -> str:
    ev = schedule.events(0, schedule.total_events)
    h = hashlib.sha256()
    for arr in (ev.event_id, ev.arrival_us, ev.key, np.ascontiguousarray(ev.payload)):
        h.update(arr.tobytes())
    return h.hexdigest()


def test_same_spec_and_seed_give_identical_events():
    assert digest(Schedule(spec())) == digest(Schedule(spec()))


def test_other_seed_changes_keys_and_payload_not_times():
    a, b = Schedule(spec(seed=1)), Schedule(spec(seed=2))
    assert digest(a) != digest(b)
    np.testing.assert_array_equal(a.arrival_us(0, a.total_events), b.arrival_us(0, b.total_events))


def test_events_do_not_depend_on_how_the_range_is_split():
    s = Schedule(spec())
    whole = s.events(0, s.total_events)
    parts = [s.events(lo, min(lo + 333, s.total_events)) for lo in range(0, s.total_events, 333)]
    np.testing.assert_array_equal(whole.key, np.concatenate([p.key for p in parts]))
    np.testing.assert_array_equal(whole.payload, np.concatenate([p.payload for p in parts]))
    np.testing.assert_array_equal(whole.arrival_us, np.concatenate([p.arrival_us for p in parts]))


def test_counts_follow_the_profile():
    s = Schedule(spec())
    assert s.total_events == 100 * 5 + 400 * 5
    assert list(s.counts[:5]) == [100] * 5 and list(s.counts[5:]) == [400] * 5


def test_keys_cover_the_key_space_uniformly():
    s = Schedule(spec(keys={"count": 10}, profile="constant", params={"rate": 10000}, duration_s=5))
    keys = s.events(0, s.total_events).key
    counts = np.bincount(keys, minlength=10)
    assert keys.min() >= 0 and keys.max() < 10
    assert counts.min() > 0.9 * counts.mean()


@settings(max_examples=60, deadline=None)
@given(
    rate=st.floats(0.3, 5000),
    duration=st.floats(1, 30),
    bucket=st.sampled_from([0.1, 0.5, 1.0, 2.0]),
    probes=st.lists(st.integers(-1_000_000, 40_000_000), min_size=1, max_size=30),
)
def test_count_due_agrees_with_arrival_times(rate, duration, bucket, probes):
    if bucket > duration:
        return
    s = Schedule(parse_workload({"profile": "constant", "params": {"rate": rate}, "duration_s": duration,
                                 "bucket_s": bucket}))
    arrivals = s.arrival_us(0, s.total_events)
    assert np.all(np.diff(arrivals) >= 0), "arrival times are monotone"
    bucket_of = arrivals // s.bucket_us
    assert np.all(np.bincount(bucket_of, minlength=s.n_buckets)[: s.n_buckets] == s.counts), "each event in its bucket"
    for t in probes:
        assert s.count_due(t) == int(np.searchsorted(arrivals, t, side="right"))
    assert abs(s.total_events - rate * duration) <= 1 + rate * 1e-9 * duration


def test_catalogue_entries_all_load():
    for name in ("constant", "step", "ramp"):
        assert load_workload(name).name == name


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"profile": "zigzag", "duration_s": 5}, "spec.yaml: unknown profile 'zigzag'"),
        ({"profile": "constant", "params": {"rate": 5, "rat": 1}, "duration_s": 5},
         "spec.yaml: profile 'constant': unknown parameter(s) rat; expected: rate"),
        ({"profile": "constant", "params": {"rate": -5}, "duration_s": 5},
         "spec.yaml: profile 'constant': parameter 'rate' must be >= 0.0, got -5.0"),
        ({"profile": "constant", "params": {"rate": float("nan")}, "duration_s": 5},
         "spec.yaml: profile 'constant': parameter 'rate' must be a finite number, got nan"),
        ({"profile": "constant", "params": {"rate": True}, "duration_s": 5},
         "spec.yaml: profile 'constant': parameter 'rate' must be of type float, got True"),
        ({"profile": "constant", "params": {"rate": 5}, "duration_s": 0}, "'duration_s' must be > 0"),
        ({"profile": "constant", "params": {"rate": 5}}, "missing field 'duration_s'"),
        ({"profile": "step", "params": {"low": 1, "high": 2}, "duration_s": 5},
         "spec.yaml: profile 'step': needs parameter 'at_s' (time of the step, seconds from the start)"),
        ({"profile": "constant", "params": {"rate": 5}, "duration_s": 5, "speed": 2}, "unknown field(s) speed"),
        ({"profile": "ramp", "params": {"start": 1, "end": 2, "ramp_start_s": 5, "ramp_end_s": 5}, "duration_s": 9},
         "spec.yaml: profile 'ramp': ramp_end_s (5.0) must be greater than ramp_start_s (5.0)"),
        ({"duration_s": 5, "streams": [{"profile": "constant", "params": {"rate": 1}},
                                       {"profile": "ramp", "params": {"start": 1, "end": 2, "ramp_end_s": 0}}]},
         "spec.yaml: streams[1]: profile 'ramp': ramp_end_s (0.0) must be greater than ramp_start_s (0.0)"),
    ],
)
def test_bad_specs_are_rejected_with_the_field_named(raw, message):
    with pytest.raises(WorkloadError) as err:
        parse_workload(raw, source="spec.yaml")
    assert message in str(err.value) and "spec.yaml" in str(err.value)


def test_bad_yaml_file_reports_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("profile: constant\nparams: {rate: 5\nduration_s: 3\n")
    with pytest.raises(WorkloadError, match=r"bad.yaml: line \d+, column \d+ is not valid YAML"):
        load_workload(str(path))


@pytest.mark.parametrize("text, line, message", [
    ("name: x\nprofile: nope\nduration_s: 10\n", 2, "unknown profile 'nope'"),
    ("name: x\nprofile: constant\nparams: {rate: -5}\nduration_s: 10\n", 3, "parameter 'rate' must be >= 0.0"),
    ("name: x\nprofile: constant\nparams: {rate: 5}\nduration_s: 10\ncolour: red\n", 5, "unknown field(s) colour"),
    ("name: x\nstreams:\n  - {profile: constant, params: {rate: 5}}\n  - profile: constant\n"
     "    params: {rate: -2}\nduration_s: 10\n", 5, "streams[1]: profile 'constant': parameter 'rate'"),
    ("name: x\nprofile: constant\nparams: {rate: 5}\nduration_s: 10\nnoise: {step_s: 1}\n", 5,
     "field 'noise' needs 'sigma'"),
    ("name: x\nprofile: constant\nparams: {rate: 5}\nseed: -3\nduration_s: 10\n", 4, "field 'seed' must be >= 0"),
])
def test_a_bad_field_in_a_workload_file_is_named_with_its_line(tmp_path, text, line, message):
    """The message names the file, the line of the offending field (the one in the right stream, not a field listed
    among the expected ones) and the field."""
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(WorkloadError) as err:
        load_workload(str(path))
    assert str(err.value).startswith(f"{path}, line {line}: ") and message in str(err.value), str(err.value)


def test_unknown_workload_name_lists_catalogue():
    with pytest.raises(WorkloadError, match="catalogue: .*step"):
        load_workload("nonesuch")
