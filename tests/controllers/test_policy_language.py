"""The policy language: YAML/JSON and the fluent builder give the same policy; bad policies fail with the rule,
the line and column, and what was expected — before any run starts."""
import json

import pytest

from controllers.policy import (
    PolicyError,
    above,
    absolute,
    below,
    catalogue_names,
    load_policy,
    minutes,
    nodes,
    parse_policy,
    relative,
    rule,
    rules,
    seconds,
    tuples,
)
from controllers.policy.builder import percent

T1_YAML = """\
name: t1
rules:
  - name: Queue length is above 300 for 30 seconds
    operator: enrich
    action: scale-out
    by: {absolute: 1}
    never_above: {nodes: 2}
    when:
      - metric: queue-length
        above: 300
        for_at_least: 30s
    with_no_scale_out_since: 5min
"""


def test_yaml_json_and_builder_give_the_same_policy():
    from_yaml = parse_policy(T1_YAML)
    from_json = parse_policy(json.dumps(from_yaml.to_dict()))
    built = rules(
        rule("Queue length is above 300 for 30 seconds")
        .scale_out("enrich").by(absolute(1)).but_never_above(nodes(2))
        .when("queue-length").is_(above(tuples(300))).for_at_least(seconds(30))
        .with_no_scale_out_since(minutes(5)),
        name="t1")
    assert from_yaml == from_json == built
    r = from_yaml.rules[0]
    assert (r.operator, r.action, r.factor.kind, r.factor.amount, r.limit.amount) == ("enrich", "scale-out",
                                                                                       "absolute", 1, 2)
    assert (r.triggers[0].for_at_least_s, r.triggers[0].aggregate, r.guards[0].seconds) == (30.0, "sum", 300.0)


def test_several_triggers_are_anded_and_durations_take_units():
    policy = rules(rule("hot and queued").scale_out("*").by(relative(2)).but_never_above(nodes(8))
                   .when("cpu").is_(above(percent(70))).for_at_least(seconds(30))
                   .and_("backlog").is_(above(100)).for_at_least(minutes(1)))
    r = policy.rules[0]
    assert [t.metric for t in r.triggers] == ["cpu", "queue-length"]  # backlog is queue-length's alias
    assert r.longest_window_s == 60.0
    assert parse_policy("rules: [{operator: a, action: scale-in, by: {relative: 2}, when: "
                        "{metric: latency, below: 200, for_at_least: '2 minutes'}}]").rules[0].name == "rule-1"


def test_every_catalogue_policy_parses_against_the_default_topology():
    from jobs.topology import DEFAULT_TOPOLOGY

    names = catalogue_names()
    assert {"seep-t1", "seep-t2", "seep-t3", "seep-t4", "seep-t5", "seep-t6", "seep-cpu"} <= set(names)
    for name in names:
        assert load_policy(name, DEFAULT_TOPOLOGY.names).rules


def test_an_empty_rule_list_is_a_static_policy():
    assert parse_policy("rules: []").rules == ()


# (policy text, expected message fragment): at least ten malformed policies, each with its own message
MALFORMED = [
    ("rules: [", "policy p.yaml, line 1, column 9: not valid YAML/JSON"),
    ("name: x\n", "policy p.yaml, line 1, column 1: policy: missing field 'rules'"),
    ("rules: {a: 1}\n", "line 1, column 8: rules: expected a list of rules, got a mapping"),
    ("rules:\n  - operator: enrich\n    action: scale-up\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 3, column 13: rule #1: action: expected one of scale-out, scale-in, got 'scale-up'"),
    ("rules:\n  - name: r\n    operator: nope\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 3, column 15: rule 'r': operator: unknown operator 'nope'; expected one of parse, enrich, aggregate, "
     "sink or '*'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: gpu, above: 50, for_at_least: 30}\n",
     "line 6, column 20: rule 'r': when: metric: unknown metric 'gpu'; expected one of queue-length, latency"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 0}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 5, column 20: rule 'r': by: absolute: expected an integer >= 1, got '0'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {relative: 0.5}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "rule 'r': by: relative: expected a number > 1, got '0.5'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1, relative: 2}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 5, column 9: rule 'r': by: expected exactly one of absolute, relative, got 2"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, below: 10, for_at_least: 30}\n",
     "line 6, column 11: rule 'r': when: expected exactly one of 'above' or 'below'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30 hours}\n",
     "line 6, column 50: rule 'r': when: for_at_least: expected a duration in seconds"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n",
     "line 2, column 5: rule 'r': missing field 'when'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n    when: []\n",
     "line 6, column 11: rule 'r': when: expected one trigger or a non-empty list of triggers"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-in\n    by: {absolute: 1}\n"
     "    never_above: {nodes: 3}\n    when: {metric: cpu, below: 5, for_at_least: 30}\n",
     "line 6, column 5: rule 'r': a scale-in rule takes 'never_below', not 'never_above'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: lots, for_at_least: 30}\n",
     "line 6, column 32: rule 'r': when: above: expected a number, got 'lots'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n    priority: 1\n",
     "line 7, column 5: rule 'r': unknown field 'priority'"),
    ("rules:\n  - name: r\n    operator: enrich\n    action: scale-out\n    by: {absolute: 1}\n"
     "    when: {metric: cpu, above: 50, for_at_least: 30}\n  - name: r\n    operator: parse\n"
     "    action: scale-out\n    by: {absolute: 1}\n    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 7, column 5: rule 'r': a second rule with this name"),
    ("options: {below: maybe}\nrules: []\n",
     "line 1, column 18: options: parameter 'below' must be one of strict, inclusive, got 'maybe'"),
    ("options: {history_tolerance: 1.5}\nrules: []\n",
     "line 1, column 30: options: history_tolerance (1.5) must be below 1 (a fraction in [0, 1))"),
    ("options: {history_tolerance: -0.1}\nrules: []\n",
     "line 1, column 30: options: parameter 'history_tolerance' must be >= 0.0, got -0.1"),
    ("options: {history_tolerance: .nan}\nrules: []\n", "line 1, column 30: options: history_tolerance: expected a "
                                                        "number, got '.nan'"),
    ("options: {sampling_period: 0s}\nrules: []\n",
     "line 1, column 28: options: parameter 'sampling_period' must be > 0.0, got 0.0"),
    ("options: {guards: [enforced]}\nrules: []\n",
     "line 1, column 19: options: guards: expected one of enforced, ignored, got a list"),
    ("rules:\n  - name: r\n    operator: !!python/object/apply:os.system [echo hi]\n    action: scale-out\n"
     "    by: {absolute: 1}\n    when: {metric: cpu, above: 50, for_at_least: 30}\n",
     "line 3, column 15: rule 'r': operator: expected an operator name or '*', got a list"),  # composed, never run
    ('{"rules": [{"name": "j", "operator": "enrich", "action": "scale-out", "by": {"absolute": 1},\n'
     '  "when": {"metric": "cpu", "above": 50}}]}',
     "policy p.yaml, line 2, column 11: rule 'j': when: missing field 'for_at_least'"),
]


@pytest.mark.parametrize("text, expected", MALFORMED, ids=[f"malformed-{i}" for i in range(len(MALFORMED))])
def test_malformed_policies_are_rejected_with_position_rule_and_expectation(text, expected):
    with pytest.raises(PolicyError) as err:
        parse_policy(text, source="p.yaml", operators=("parse", "enrich", "aggregate", "sink"))
    assert expected in str(err.value)


def test_the_builder_reports_a_trigger_step_out_of_order_and_is_checked_like_a_file():
    with pytest.raises(ValueError, match=r"rule 'x': .is_\(\) before .when\(metric\)"):
        rule("x").scale_out("enrich").is_(above(1))
    with pytest.raises(PolicyError, match="rule 'y': missing field 'by'"):
        rules(rule("y").scale_out("enrich").when("cpu").is_(above(1)).for_at_least(seconds(5)))
    with pytest.raises(PolicyError, match=r"^policy \(builder\): rule 'z': when #1: for_at_least: expected a duration"):
        rules(rule("z").scale_in("enrich").by(absolute(1)).when("cpu").is_(below(1)).for_at_least(seconds(0)))


def test_options_are_declared_once_and_checked_by_that_declaration_however_the_policy_is_built():
    from controllers.policy import OPTIONS, PolicyOptions, check_options, describe_options
    from params.declare import ParamError, SearchRange, search_space

    assert PolicyOptions().to_dict() == {name: spec.default for name, spec in OPTIONS.items()}
    assert set(search_space(OPTIONS)) == {"sampling_period", "history_tolerance"}
    assert all(isinstance(r, SearchRange) for r in search_space(OPTIONS).values())
    text = describe_options()
    assert all(f"  {name} ({spec.kind.__name__}, default {spec.default!r}" in text for name, spec in OPTIONS.items())
    assert "  rule: history_tolerance must be below 1 (a fraction in [0, 1))" in text
    # constructed directly: the same checks, the values as they will be used
    assert PolicyOptions(sampling_period_s=2).sampling_period_s == 2.0
    with pytest.raises(ParamError, match=r"^policy options: parameter 'below' must be one of strict, inclusive, "
                                         r"got 'maybe'$"):
        PolicyOptions(below="maybe")
    with pytest.raises(ParamError, match=r"^policy options: history_tolerance \(1.0\) must be below 1"):
        PolicyOptions(history_tolerance=1.0)
    with pytest.raises(ParamError, match=r"^policy options: unknown parameter\(s\) period"):
        check_options({"period": 5})
    # parsed, built and constructed options are the same thing
    options = PolicyOptions(sampling_period_s=2.0, below="inclusive", history_tolerance=0.0, edge="every-trigger")
    assert PolicyOptions.from_dict(options.to_dict()) == options
    assert rules(options=options).options == options
    parsed = parse_policy("options: {sampling_period: 2s, below: inclusive, history_tolerance: 0, "
                          "edge: every-trigger}\nrules: []\n")
    assert parsed.options == options
    with pytest.raises(PolicyError, match=r"^policy \(builder\): options: parameter 'sampling_period' must be > 0.0"):
        rules(options={"sampling_period": 0})
