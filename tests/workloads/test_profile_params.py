"""Profile parameters are declarations (params.declare): one mechanism checks them, describes them and knows their
rules, and the same spec still gives the same values and events."""
import pytest

from params.declare import Param, ParamError, search_space
from workloads.inspect import main as inspect_main
from workloads.profiles import PROFILES, REQUIRED, check_profile_params, describe_profile


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_declares_its_parameters_and_rules_over_them(name):
    profile = PROFILES[name]
    assert profile.params and all(isinstance(spec, Param) and spec.doc for spec in profile.params.values())
    for rule in profile.rules:
        assert set(rule.fields) <= set(profile.params), f"rule {rule.message!r} names an undeclared parameter"
    assert search_space(profile.params) == {}, "workloads are inputs of an experiment, not tuned"
    text = describe_profile(name)
    assert text.startswith(f"{name}: {profile.doc}")
    for key, spec in profile.params.items():
        assert f"  {key} ({spec.kind.__name__}, {'required' if spec.default is REQUIRED else 'default'}" in text
    assert text.count("  rule: ") == len(profile.rules) and "{" not in text


def test_defaults_fill_in_as_floats_and_the_declared_order_is_kept():
    assert check_profile_params("periodic_peaks", {}, "w") == {"base": 10.0, "peak": 20.0, "peak_s": 20.0,
                                                               "trough_s": 40.0, "first_peak_s": 0.0}
    values = check_profile_params("autoscale", {"low": 1, "high": 5, "low_s": 1, "rise_s": 1, "high_s": 1,
                                                "step_s": 1}, "w")
    assert values["steps"] == 4.0 and all(type(v) is float for v in values.values())


@pytest.mark.parametrize("name, params, message", [
    ("step", {"low": 1, "high": 2, "at_s": float("inf")}, "w: profile 'step': parameter 'at_s' must be a finite "
                                                          "number, got inf"),
    ("constant", {"rate": "fast"}, "w: profile 'constant': parameter 'rate' must be of type float, got 'fast'"),
    ("levels", {"low": 1, "high": 2, "pattern": 3}, "w: profile 'levels': parameter 'pattern' must be of type str, "
                                                    "got 3"),
    ("levels", {"low": 1, "high": 2}, "w: profile 'levels': needs parameter 'pattern' (string of A (high) and B "
                                      "(low), one letter per period; spaces and case are ignored)"),
    ("autoscale", {"low": 0, "high": 5, "low_s": 1, "rise_s": 1, "high_s": 1, "step_s": 1},
     "w: profile 'autoscale': parameter 'low' must be > 0.0, got 0.0"),
    ("periodic_peaks", {"peak_s": 0, "trough_s": 0}, "w: profile 'periodic_peaks': peak_s (0.0) + trough_s (0.0) "
                                                     "must be > 0"),
])
def test_bad_parameters_name_the_profile_and_the_parameter(name, params, message):
    with pytest.raises(ParamError) as err:
        check_profile_params(name, params, "w")
    assert str(err.value) == message


def test_inspect_describes_a_profile_the_profiles_of_a_workload_and_all_profiles(capsys):
    assert inspect_main(["--describe", "ramp"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == describe_profile("ramp").splitlines()
    assert "  ramp_end_s (float, required [0.0..]): when the ramp reaches `end`" in out
    assert "  rule: ramp_end_s must be greater than ramp_start_s" in out
    assert inspect_main(["--describe", "sousa-variable"]) == 0  # a catalogue workload: the profile it uses
    assert capsys.readouterr().out.startswith("levels: ")
    assert inspect_main(["--profiles"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in PROFILES)
    assert inspect_main(["--describe", "zigzag"]) == 2
    assert "'zigzag' is not a profile" in capsys.readouterr().err
