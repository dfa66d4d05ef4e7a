"""The one parameter mechanism: declarations as data, checked in one place, with search ranges and rules."""
import math

import pytest

import controllers
from controllers.common_params import INITIAL_DEGREE, at_most_max_degree, below
from params.declare import (Choices, Context, Param, ParamError, Rule, SearchRange, check_params, search_space)
from params.run import RUN_SETTINGS

DECLARED = {
    "ratio": Param(float, 0.9, "a ratio", minimum=0.0, search=SearchRange(0.5, 1.5)),
    "low": Param(float, 0.3, "a lower ratio", minimum=0.0),
    "degree": INITIAL_DEGREE,
    "degrees": Param(int, {}, "per operator", minimum=1, per_operator=True),
    "mode": Param(str, "a", "a mode", choices=("a", "b"), search=Choices(("a", "b"))),
}
RULES = (below("low", "ratio"), at_most_max_degree("degree", "degrees"))


def check(values, operators=None, max_degree=None):
    return check_params("thing 'x'", DECLARED, values, RULES, Context(operators, max_degree))


def test_defaults_fill_in_and_ints_given_for_floats_become_floats():
    checked = check({"ratio": 1})
    assert checked == {"ratio": 1.0, "low": 0.3, "degree": 1, "degrees": {}, "mode": "a"}
    assert isinstance(checked["ratio"], float)


@pytest.mark.parametrize("values, message", [
    ({"ratoi": 1.0}, "thing 'x': unknown parameter(s) ratoi; expected: ratio, low, degree, degrees, mode"),
    ({1: 2}, "unknown parameter(s) 1"),
    ({"ratio": -1.0}, "thing 'x': parameter 'ratio' must be >= 0.0, got -1.0"),
    ({"ratio": math.nan}, "thing 'x': parameter 'ratio' must be a finite number, got nan"),
    ({"ratio": True}, "parameter 'ratio' must be of type float, got True"),
    ({"mode": "c"}, "parameter 'mode' must be one of a, b, got 'c'"),
    ({"degrees": 3}, "parameter 'degrees' must be a mapping operator -> int"),
    ({"degrees": {"enrich": 0}}, "thing 'x': degrees['enrich'] must be >= 1, got 0"),
    ({"low": 0.95}, "thing 'x': low (0.95) must be below ratio (0.9)"),
])
def test_each_bad_value_is_one_line_naming_owner_and_parameter(values, message):
    with pytest.raises(ParamError) as err:
        check(values)
    assert message in str(err.value)


def test_rules_about_the_run_wait_for_the_run_and_then_hold():
    assert check({"degree": 12, "degrees": {"enrich": 9}})["degree"] == 12, "no max degree known yet: not judged"
    with pytest.raises(ParamError, match=r"degree \(12\) must be <= max_degree \(8\)"):
        check({"degree": 12}, max_degree=8)
    with pytest.raises(ParamError, match=r"degrees\['enrich'\] \(9\) must be <= max_degree \(8\)"):
        check({"degrees": {"enrich": 9}}, max_degree=8)
    with pytest.raises(ParamError, match=r"parameter 'degrees' names unknown operator\(s\) enrichh; operators: "
                                         r"parse, enrich"):
        check({"degrees": {"enrichh": 2}}, operators=("parse", "enrich"))


def test_a_rule_can_say_exactly_what_is_broken():
    rule = Rule(("a",), lambda v, c: "a is odd" if v["a"] % 2 else True, "a must be even")
    with pytest.raises(ParamError, match="^owner: a is odd$"):
        check_params("owner", {"a": Param(int, 1, "a")}, {}, (rule,))


def test_search_ranges_are_checked_against_the_bounds_when_declared():
    with pytest.raises(ParamError, match="empty or inverted"):
        SearchRange(2.0, 1.0)
    with pytest.raises(ParamError, match="log-scale search range needs low > 0"):
        SearchRange(0.0, 1.0, log=True)
    with pytest.raises(ParamError, match="below the minimum"):
        Param(float, 1.0, "x", minimum=0.5, search=SearchRange(0.1, 1.0))
    with pytest.raises(ParamError, match="numeric search range on a str parameter"):
        Param(str, "a", "x", search=SearchRange(0.1, 1.0))
    assert search_space(DECLARED) == {"ratio": SearchRange(0.5, 1.5), "mode": Choices(("a", "b"))}


def test_every_controllers_declarations_are_consistent_and_each_elastic_one_is_tunable():
    for name, cls in controllers.registered().items():
        for key, spec in cls.PARAMS.items():
            assert spec.doc, f"{name}.{key} has no doc"
            if spec.per_operator:
                assert spec.default == {}, f"{name}.{key}"
            else:
                spec.check(name, key, spec.default)  # every default passes its own declaration
        for rule in cls.RULES:
            assert set(rule.fields) <= set(cls.PARAMS), f"{name}: a rule names an undeclared field"
    for name in ("threshold", "ds2", "autoscale", "seep-detector"):
        assert controllers.base.search_space_of(name), f"{name} declares nothing to tune"
    assert controllers.base.search_space_of("static") == {}


def test_describe_shows_types_defaults_bounds_search_ranges_and_rules():
    text = controllers.describe("threshold")
    assert "scale_up_ratio (float, default 0.9 [0.0..]; tuned in [0.5, 1.5])" in text
    assert "rule: scale_down_ratio must be below scale_up_ratio" in text
    assert "initial_degree (int, default 1 [1..]; tuned in [1, 8])" in text
    assert "stabilisation_s (float, default 0.0 [0.0..]; tuned in [0.0, 120.0] when guards=True)" in text


def test_run_settings_are_declared_once_with_the_slo_of_the_project():
    assert RUN_SETTINGS["slo_latency_s"].default == 5.0 and RUN_SETTINGS["slo_target"].default == 0.95
    assert RUN_SETTINGS["slo_target"].json_schema() == {
        "type": "number", "description": RUN_SETTINGS["slo_target"].doc, "exclusiveMinimum": 0.0, "maximum": 1.0}
    from jobs.config import RunConfig
    from jobs.run import build_parser

    args = build_parser().parse_args(["--controller", "static"])
    config = RunConfig("static", {}, "step")
    for name, spec in RUN_SETTINGS.items():
        assert getattr(args, name) == spec.default == getattr(config, name), name
