"""Property: any workload file or policy a user might write is either accepted — and then runs in the plant model —
or rejected with one line (a WorkloadError or PolicyError naming the file); never a traceback from deeper down.

Hypothesis writes the files: every profile and its parameters (plus unknown ones), values of every kind (negative,
zero, huge, text, lists, null), missing and unknown fields, and policies with every part of a rule varied."""
import yaml
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controllers.policy import model as policy_model
from controllers.policy.parse import PolicyError, parse_policy
from simulator.calibration import Calibration
from simulator.evaluate import simulate_configuration
from workloads import Schedule
from workloads.profiles import PROFILES
from workloads.spec import WorkloadError, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")
PLANT = Calibration.from_params({
    "service_s": {"parse": 1e-5, "enrich": 1.6e-4, "aggregate": 1.5e-5, "sink": 5e-6},
    "selectivity": {op: 1.0 for op in OPS}, "task_overhead_s": 0.01, "batch_overhead_s": 0.3, "slots": 4,
    "calibration_run": "fuzz"}).plant(OPS, 2.0, 8)

ANY_VALUE = st.one_of(st.integers(-1000, 10_000), st.floats(-1e3, 1e6, allow_nan=False), st.just(0),
                      st.text(max_size=6), st.none(), st.lists(st.integers(0, 5), max_size=3), st.booleans())
PROFILE_NAMES = sorted(PROFILES) + ["nope", ""]


@st.composite
def workload_files(draw) -> dict:
    """Half are written as a user who read the docs would (known profile and parameters, plausible values), half
    with anything in any field: both halves must end in a run or in one line."""
    careful = draw(st.booleans())
    profile = draw(st.sampled_from(sorted(PROFILES) if careful else PROFILE_NAMES))
    known = list(PROFILES[profile].params) if profile in PROFILES else []
    if careful:
        # a time parameter within the run, a rate in the hundreds, a shape parameter (pattern, sigma_log) sampled
        names = draw(st.lists(st.sampled_from(known), unique=True, max_size=len(known))) if known else []
        value = st.floats(0.1, 20, allow_nan=False)
        params = {n: draw(value if n.endswith("_s") else st.floats(0.1, 1.0) if n in ("sigma_log", "phi",
                  "diurnal_amplitude", "rate_scale") else st.just("0101") if n == "pattern" else
                  st.integers(1, 5) if n == "steps" else st.floats(1, 800, allow_nan=False)) for n in names}
    else:
        names = draw(st.lists(st.sampled_from(known + ["rate", "colour"]), unique=True, max_size=len(known) + 1))
        params = {name: draw(st.one_of(st.floats(0, 2000, allow_nan=False), ANY_VALUE)) for name in names}
    spec = {"profile": profile, "params": params,
            "duration_s": draw(st.floats(1, 30, allow_nan=False) if careful
                               else st.one_of(st.floats(1, 30, allow_nan=False), ANY_VALUE)),
            "seed": draw(st.integers(0, 99) if careful else st.one_of(st.integers(0, 99), ANY_VALUE))}
    if draw(st.booleans()):
        spec["keys"] = draw(st.fixed_dictionaries({"count": st.integers(1 if careful else -2, 500)}) if careful
                            else st.one_of(st.fixed_dictionaries({"count": st.integers(-2, 500)}), ANY_VALUE))
    if draw(st.booleans()):
        spec["noise"] = draw(st.fixed_dictionaries({"sigma": st.floats(0 if careful else -1, 1, allow_nan=False)})
                             if careful else ANY_VALUE)
    if not careful:
        if draw(st.integers(0, 9)) == 0:
            spec["colour"] = "blue"
        for field in draw(st.lists(st.sampled_from(["profile", "params", "duration_s"]), max_size=1)):
            spec.pop(field)
    return spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=workload_files())
def test_a_workload_file_is_accepted_and_simulates_or_rejected_in_one_line(spec, tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(spec))
    try:
        workload = load_workload(str(path))
    except WorkloadError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(str(path)), message
        return
    workload = workload.with_overrides(duration_s=min(workload.duration_s, 20.0))
    schedule = Schedule(workload)
    run = simulate_configuration("threshold", {}, schedule, PLANT, slo_latency_s=5.0)
    if schedule.total_events == 0:  # rates so low that nothing arrives (a 1 s google_like at median 1 ev/s)
        assert (run.batches, run.cost_slot_seconds, run.slo_attainment) == (0, 0.0, 1.0)
        return
    assert run.batches > 0 and run.cost_slot_seconds > 0 and 0.0 <= run.slo_attainment <= 1.0


METRICS = ["cpu", "queue-length", "latency", "throughput", "nope", ""]
ACTIONS = ["scale-out", "scale-in", "grow", None]


@st.composite
def policies(draw) -> str:
    """As for workloads: half written with the documented vocabulary, half with anything."""
    if draw(st.booleans()):
        rules = [{"name": f"r{i}", "operator": draw(st.sampled_from(list(OPS) + ["*"])),
                  "action": draw(st.sampled_from(["scale-out", "scale-in"])),
                  "by": draw(st.sampled_from([{"absolute": 1}, {"relative": 2}, {"nodes": 2}])),
                  "when": {"metric": draw(st.sampled_from(sorted(policy_model.METRICS))),
                           draw(st.sampled_from(["above", "below"])): draw(st.floats(0, 100, allow_nan=False)),
                           "for_at_least": draw(st.sampled_from([1, 30, "30s", "5min"]))}}
                 for i in range(draw(st.integers(0, 3)))]
        return yaml.safe_dump({"rules": rules})
    rules = []
    for i in range(draw(st.integers(0, 3))):
        rule = {"name": draw(st.sampled_from([f"r{i}", "dup", "", None])),
                "operator": draw(st.sampled_from(["enrich", "*", "parse", "nope", 3])),
                "action": draw(st.sampled_from(ACTIONS)),
                "by": draw(st.one_of(st.fixed_dictionaries({"absolute": st.integers(-2, 4)}),
                                     st.fixed_dictionaries({"relative": st.floats(-1, 3, allow_nan=False)}),
                                     ANY_VALUE)),
                "when": draw(st.one_of(
                    st.fixed_dictionaries({"metric": st.sampled_from(METRICS),
                                           draw(st.sampled_from(["above", "below", "between"])): st.floats(
                                               -10, 200, allow_nan=False),
                                           "for_at_least": st.one_of(st.integers(-5, 60),
                                                                     st.sampled_from(["30s", "5min", "soon"]))}),
                    ANY_VALUE))}
        rules.append({k: v for k, v in rule.items() if v is not None or draw(st.booleans())})
    doc = {"rules": rules}
    if draw(st.integers(0, 5)) == 0:
        doc = draw(st.sampled_from([{"rule": rules}, [rules], "rules"]))
    return yaml.safe_dump(doc)


@settings(max_examples=200, deadline=None)
@given(text=policies())
def test_a_policy_is_parsed_or_rejected_in_one_line(text):
    try:
        policy = parse_policy(text, source="p.yaml", operators=OPS)
    except PolicyError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith("policy p.yaml"), message
        return
    assert isinstance(policy, policy_model.Policy)
    assert len({rule.name for rule in policy.rules}) == len(policy.rules)


def test_a_log_rate_spread_past_the_bound_is_refused_before_any_event_is_drawn():
    """Why the bound: google_like with sigma_log 165 drew rates whose events filled 23 GB (fuzzed, 2026-12-03)."""
    from workloads import WorkloadError, parse_workload

    with pytest.raises(WorkloadError, match="sigma_log.*must be <= 5.0"):
        parse_workload({"profile": "google_like", "params": {"phi": 0.0, "sigma_log": 165.0}, "duration_s": 1.0,
                        "seed": 1}, source="fuzzed")
