"""The predictors' declared dataset: spec errors name the file and field, outages are masked by a rule that leaves
bursty-but-idle traces alone, masks split series so no window crosses them, and the same spec gives the same rows."""
import numpy as np
import pytest

from analysis.predictors.dataset import (DatasetError, DatasetSpec, Series, TraceEntry, load_dataset, load_spec,
                                         outage_mask, parse_spec)
from analysis.predictors.windows import make_windows, paper_ols
from controllers.forecast import (SPREAD_FLOOR, Horizon, LastValuePredictor, LearnedPredictor, PaperPredictor,
                                  features, local_spread)
from workloads.traces import available_traces


def write_trace(path, counts, bucket_s=1):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("t_seconds,events\n" + "".join(f"{i * bucket_s},{int(c)}\n" for i, c in enumerate(counts)))
    return str(path)


def cycle_counts(seed, n=6000, level=50.0, period=120):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return rng.poisson(level * (1 + 0.6 * np.sin(2 * np.pi * t / period)))


@pytest.mark.parametrize("raw, message", [
    ({"traces": ["a"], "colour": 1}, r"spec.yaml: unknown field\(s\) colour"),
    ({"traces": [{"name": "a", "compresion": 2}]}, r"traces\[0\] \(a\): unknown field\(s\) compresion"),
    ({"traces": [{"name": "a", "window": [10, 5]}]}, r"traces\[0\] \(a\).window must satisfy 0 <= start_s < end_s"),
    ({"traces": [{"name": "a", "compression": 0}]}, r"traces\[0\] \(a\).compression must be > 0"),
    ({"traces": ["a", "a"]}, r"\['a'\] listed twice"),
    ({"traces": []}, r"no traces and no runs"),
    ({"traces": ["a"], "horizon": {"steps": 0}}, r"horizon.steps must be a whole number >= 1"),
    ({"traces": ["a"], "runs": [3]}, r"runs must be a list of MLflow run ids"),
])
def test_bad_specs_name_the_file_and_field(raw, message):
    with pytest.raises(DatasetError, match=message):
        parse_spec(raw, "spec.yaml")


def test_a_resolution_that_is_not_whole_buckets_and_an_empty_window_are_errors(tmp_path):
    path = write_trace(tmp_path / "t" / "rate.csv", cycle_counts(1, 600), bucket_s=60)
    spec = parse_spec({"traces": [{"name": path, "compression": 7}]}, "spec.yaml")
    with pytest.raises(DatasetError, match=r"compression: 2 s x 7 = 14 trace seconds .* not a whole number of the "
                                           r"trace's 60 s buckets; choose compression so that it is \(e.g. 30\)"):
        load_dataset(spec)
    spec = parse_spec({"traces": [{"name": path, "compression": 30, "window": [1e9, 2e9]}]}, "spec.yaml")
    with pytest.raises(DatasetError, match=r"window \[1e\+09, 2e\+09\) s holds no bucket"):
        load_dataset(spec)
    bad = tmp_path / "bad" / "rate.csv"
    write_trace(bad, [1, 2, 3])
    bad.write_text(bad.read_text() + "3,-4\n")
    with pytest.raises(DatasetError, match=r"traces\[0\].*rate.csv:5: negative count -4"):
        load_dataset(parse_spec({"traces": [str(bad)]}, "spec.yaml"))


def test_outages_are_masked_only_where_emptiness_is_abnormal():
    steady = cycle_counts(2, 7200, level=5.0)
    steady[3000:4200] = 0  # 20 minutes without a single event at ~5 events/s: a logging outage
    steady[5000:5030] = 0  # 30 s: too short to call
    mask = outage_mask(steady, 1.0, min_s=600, nats=14)
    assert mask[3000:4200].all() and mask.sum() == 1200
    bursty = np.zeros(7200, dtype=int)  # mostly empty with bursts: its quiet hours are its normal state
    bursty[::900] = 500
    assert not outage_mask(bursty, 1.0, min_s=600, nats=14).any()


def test_masks_split_the_series_and_no_window_crosses_them(tmp_path):
    counts = cycle_counts(3, 3000)
    path = write_trace(tmp_path / "t" / "rate.csv", counts)
    spec = parse_spec({"traces": [{"name": path, "mask": [[1000, 1100]]}]}, "spec.yaml")
    [series] = load_dataset(spec).series.values()
    assert series.segments() == [(0, 500), (550, 1500)]  # 2 s sub-intervals; [1000, 1100) s masked
    w = make_windows(series, spec.horizon)
    assert np.isfinite(w.history).all() and np.isfinite(w.y).all()
    per_segment = [stop - start - spec.horizon.lags - spec.horizon.steps + 1 for start, stop in series.segments()]
    assert len(w) == sum(per_segment)


def test_the_same_spec_gives_the_same_rows_and_digest_and_a_change_shows(tmp_path):
    path = write_trace(tmp_path / "t" / "rate.csv", cycle_counts(4, 2000))
    a, b = (load_dataset(parse_spec({"traces": [path]}, "s.yaml")) for _ in range(2))
    assert a.digest == b.digest and all(np.array_equal(a.series[k].rates, b.series[k].rates, equal_nan=True)
                                        for k in a.series)
    c = load_dataset(parse_spec({"traces": [path], "max_points": 500}, "s.yaml"))
    assert c.digest != a.digest and len(c.series[next(iter(c.series))].rates) == 500


def test_features_are_scale_free_and_idle_windows_are_not_blown_up():
    busy = [100.0, 120, 80, 100, 110, 90, 100, 100, 95, 105]
    row, scale = features(busy)
    row10, scale10 = features([10 * r for r in busy])
    assert scale10 == pytest.approx(10 * scale) and row10 == pytest.approx(row)
    assert "log_scale" not in row  # no absolute level: a model cannot tie "low level" to "predict a fraction"
    idle = [0.0, 0, 0.5, 0, 0, 0, 0, 0.5, 0, 0]
    row, scale = features(idle, floor_rate=Horizon().idle_rate)
    assert scale == Horizon().idle_rate and max(row[f"lag_{k}"] for k in range(1, 11)) < 1


def test_vectorised_paper_baseline_is_the_controllers_predictor():
    rng = np.random.default_rng(7)
    h = Horizon()
    series = Series("s", "s", rng.uniform(50, 150, 400))
    w = make_windows(series, h)
    for reading in ("extrapolated", "literal"):
        vec = paper_ols(w, h.steps, reading) * w.scale
        paper = PaperPredictor(reading)
        times = [h.step_s * (k + 1) for k in range(h.steps)]
        for i in (0, 17, len(w) - 1):
            fc = paper.forecast(times, list(w.history[i][-h.steps:] * h.step_s), [h.step_s] * h.steps, h.period_s,
                                h.steps)
            assert vec[i] == pytest.approx(fc.arrivals / h.period_s), (reading, i)


def test_a_learned_predictor_answers_idle_windows_with_the_last_value():
    calls = []
    learned = LearnedPredictor(lambda rows: calls.append(rows) or [5.0], "m")
    times, intervals = list(range(12)), [2.0] * 12
    idle = [0, 1, 0, 0, 2, 0, 0, 1, 0, 0, 0, 3]  # 7 events in 10 sub-intervals: idle
    fc = learned.forecast(times, idle, intervals, 10.0, 5)
    assert not calls and fc.arrivals == LastValuePredictor().forecast(times, idle, intervals, 10.0, 5).arrivals
    busy = [100] * 12
    fc = learned.forecast(times, busy, intervals, 10.0, 5)
    assert calls and fc.arrivals == pytest.approx(5.0 * 50 * 10.0)  # ratio 5 x the window's 50 events/s


def test_the_conservative_margin_scales_with_the_local_spread_when_it_is_locally_weighted():
    """The locally weighted conservative variant adds offset x local spread (the mean absolute change of the last 11
    scale-free rates): a calm window gets little margin, a bursty one a lot; the plain one the same offset everywhere."""
    h = Horizon(2.0, 5, lags=15)
    calm, bursty = [100.0] * 15, [60.0, 140.0] * 7 + [100.0]
    row_calm, _ = features([r / 2.0 for r in calm], 15)
    row_bursty, _ = features([r / 2.0 for r in bursty], 15)
    assert local_spread(row_calm) == SPREAD_FLOOR  # a flat window still gets a margin
    assert local_spread(row_bursty) == pytest.approx((0.8 * 9 + 0.4) / 10)  # |0.6-1.4| steps, then 1.4->1.0
    times, intervals = list(range(15)), [2.0] * 15
    for counts, spread in ((calm, SPREAD_FLOOR), (bursty, local_spread(row_bursty))):
        plain = LearnedPredictor(lambda rows: [1.0], "m", horizon=h, offset=0.5)
        local = LearnedPredictor(lambda rows: [1.0], "m", horizon=h, offset=0.5, offset_spread=True)
        scale = sum(counts) / 2.0 / 15  # the window's mean rate, events/s
        assert plain.forecast(times, counts, intervals, 10.0, 5).arrivals == pytest.approx(1.5 * scale * 10.0)
        assert local.forecast(times, counts, intervals, 10.0, 5).arrivals == pytest.approx(
            (1.0 + 0.5 * spread) * scale * 10.0)


@pytest.mark.skipif(not available_traces(), reason="no real traces: ../shared/traces (or $ELASTIC_TRACES_DIR) is "
                                                   "absent in this checkout")
def test_the_projects_dataset_loads_from_the_shared_traces():
    spec = load_spec()
    missing = [t.name for t in spec.traces if t.name not in available_traces()]
    if missing:
        pytest.skip(f"traces {missing} of the project's dataset are not in this traces directory")
    dataset = load_dataset(spec)
    assert len(dataset.series) == len(spec.traces) and len(dataset.digest) == 64
    nasa = dataset.series.get("trace:nasa_http_1995")
    assert nasa is not None and nasa.masked["sub-intervals in outages"] > 2000  # the 1995 logging outage (~40 h)
    assert dataset.series["trace:google2011_task_events"].masked["sub-intervals in outages"] == 0
