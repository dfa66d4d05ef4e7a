"""The rule evaluator's semantics (SEEP thesis §4.2.2, §4.3.5), one property per test, on hand-fed readings."""
from controllers.policy import PolicyEngine, PolicyOptions, above, absolute, below, factor, nodes, relative, rule, rules
from controllers.policy.builder import seconds


def reading(**per_op):
    return {op: {"queue-length": {"sum": q, "mean": q, "max": q}} for op, q in per_op.items()}


def feed(engine, values, sizes, op="a", period=5.0, start=5.0):
    """Feed queue-length readings every `period` s; apply executed actions; return all actions."""
    out = []
    for i, q in enumerate(values):
        actions = engine.observe(start + i * period, reading(**{op: q}), sizes)
        for a in actions:
            if a.executed:
                sizes[a.operator] = a.new_size
        out += actions
    return out


def scale_out_when_above(limit=8, window=10.0, by=absolute(1), **opts):
    return rules(rule("out").scale_out("a").by(by).but_never_above(nodes(limit))
                 .when("queue-length").is_(above(100)).for_at_least(seconds(window)),
                 options=PolicyOptions(**opts))


def test_every_reading_in_the_window_must_hold_and_one_outlier_blocks():
    engine = PolicyEngine(scale_out_when_above(), ["a"], {"a": 1})
    assert feed(engine, [150, 150, 50, 150, 50, 150], {"a": 1}) == []  # every 10 s window holds a 50
    engine = PolicyEngine(scale_out_when_above(), ["a"], {"a": 1})
    actions = feed(engine, [150, 150, 150], {"a": 1})
    assert [(a.time_s, a.new_size) for a in actions] == [(15.0, 2)]  # 10 and 15 judged; the history reaches 5


def test_not_enough_history_leaves_the_state_unchanged():
    engine = PolicyEngine(scale_out_when_above(window=30.0), ["a"], {"a": 1})
    assert feed(engine, [500] * 6, {"a": 1}) == []  # 5..30 s spans 25 s < 0.9 x 30
    assert len(feed(engine, [500], {"a": 1}, start=35.0)) == 1  # 5..35 spans 30 s
    strict = PolicyEngine(scale_out_when_above(window=30.0, history_tolerance=0.0), ["a"], {"a": 1})
    assert feed(strict, [500] * 6, {"a": 1}) == []
    tolerant = PolicyEngine(scale_out_when_above(window=30.0, history_tolerance=0.2), ["a"], {"a": 1})
    assert [a.time_s for a in feed(tolerant, [500] * 6, {"a": 1})] == [30.0]  # 25 s >= 0.8 x 30


def test_a_rule_fires_once_per_transition_and_re_arms_when_the_condition_breaks():
    engine = PolicyEngine(scale_out_when_above(), ["a"], {"a": 1})
    sizes = {"a": 1}
    actions = feed(engine, [150] * 10 + [50] + [150] * 3, sizes)
    assert [(a.time_s, a.old_size, a.new_size) for a in actions] == [(15.0, 1, 2), (65.0, 2, 3)]


def test_limits_block_the_action_instead_of_clamping_it():
    engine = PolicyEngine(scale_out_when_above(limit=8, by=absolute(2)), ["a"], {"a": 7})
    actions = feed(engine, [150] * 3, {"a": 7})
    assert len(actions) == 1 and not actions[0].executed and actions[0].new_size == 9
    assert "limit: never above nodes 8" in actions[0].reason
    relative_limit = rules(rule("out").scale_out("a").by(absolute(1)).but_never_above(factor(2))
                           .when("queue-length").is_(above(100)).for_at_least(seconds(5)))
    engine = PolicyEngine(relative_limit, ["a"], {"a": 2})  # factor 2 x initial 2 = at most 4
    sizes = {"a": 2}
    actions = feed(engine, [150, 150, 50, 150, 150, 50, 150, 150, 50, 150, 150], sizes)
    assert [(a.new_size, a.executed) for a in actions] == [(3, True), (4, True), (5, False), (5, False)]
    assert sizes["a"] == 4


def test_never_below_is_a_floor_and_scale_in_stops_at_one():
    policy = rules(rule("in").scale_in("a").by(absolute(1)).but_never_below(nodes(1))
                   .when("queue-length").is_(below(1)).for_at_least(seconds(5)))
    engine = PolicyEngine(policy, ["a"], {"a": 3})
    sizes = {"a": 3}
    actions = feed(engine, [0, 0, 5, 0, 0, 5, 0, 0], sizes)
    # 3 -> 2 lands above the floor of 1: allowed (the thesis' code would have blocked it; floor: §4.2.2, p. 37)
    assert [(a.old_size, a.new_size, a.executed) for a in actions] == [(3, 2, True), (2, 1, True), (1, 1, False)]
    assert "floor of 1" in actions[-1].reason


def test_relative_factors_round_half_up_with_a_floor_of_one():
    from controllers.policy.model import ScaleFactor

    f = ScaleFactor("relative", 1.5)
    assert [f.apply("scale-out", n) for n in (1, 2, 3)] == [2, 3, 5]
    assert [f.apply("scale-in", n) for n in (1, 3, 4)] == [1, 2, 3]
    assert ScaleFactor("absolute", 5).apply("scale-in", 3) == 1


def test_guards_look_at_the_last_action_of_their_type():
    policy = rules(
        rule("out").scale_out("a").by(absolute(1)).but_never_above(nodes(8))
        .when("queue-length").is_(above(100)).for_at_least(seconds(5)),
        rule("in").scale_in("a").by(absolute(1))
        .when("queue-length").is_(below(1)).for_at_least(seconds(5)).with_no_scale_out_since(seconds(60)))
    engine = PolicyEngine(policy, ["a"], {"a": 1})
    sizes = {"a": 1}
    actions = feed(engine, [150, 150, 0, 0, 150, 0, 0], sizes)
    blocked = [a for a in actions if a.rule == "in"]
    assert [a.executed for a in blocked] == [False, False] and "guard: last scale-out" in blocked[0].reason
    ignored = PolicyEngine(rules(*[dict(r.to_dict()) for r in policy.rules], options=PolicyOptions(guards="ignored")),
                           ["a"], {"a": 1})
    sizes = {"a": 1}
    assert [a.rule for a in feed(ignored, [150, 150, 0, 0], sizes) if a.executed] == ["out", "in"]
    # a scale-in guard is not triggered by a scale-out
    in_guard = rules(rule("out").scale_out("a").by(absolute(1)).when("queue-length").is_(above(100))
                     .for_at_least(seconds(5)).with_no_scale_in_since(seconds(60)))
    engine = PolicyEngine(in_guard, ["a"], {"a": 1})
    sizes = {"a": 1}
    assert [a.executed for a in feed(engine, [150, 150, 0, 150, 150], sizes)] == [True, True]


def test_below_is_strict_by_default_and_inclusive_as_an_option():
    def fires(below_option):
        policy = rules(rule("in").scale_in("a").by(absolute(1)).when("queue-length").is_(below(1))
                       .for_at_least(seconds(5)), options=PolicyOptions(below=below_option))
        return bool(feed(PolicyEngine(policy, ["a"], {"a": 2}), [1, 1, 1], {"a": 2}))

    assert (fires("strict"), fires("inclusive")) == (False, True)


def test_and_ed_triggers_and_the_two_edge_readings():
    def policy(edge):
        return rules(rule("both").scale_out("a").by(absolute(1))
                     .when("queue-length").is_(above(100)).for_at_least(seconds(5))
                     .and_("latency").is_(above(1000)).for_at_least(seconds(20)), options=PolicyOptions(edge=edge))

    def run(edge):
        engine = PolicyEngine(policy(edge), ["a"], {"a": 1})
        sizes, out = {"a": 1}, []
        for i in range(8):  # queue high from the start, latency high from the start too: different windows
            r = {"a": {"queue-length": {"sum": 150.0}, "latency": {"job": 2000.0}}}
            out += [a for a in engine.observe(5.0 + 5 * i, r, sizes) if a.executed]
        return [a.time_s for a in out]

    assert run("rule") == [25.0]  # when the 20 s window is covered, both hold: the rule becomes fired once
    assert run("every-trigger") == []  # the thesis code's literal reading: the 5 s trigger changed long before


def test_wildcard_rules_evaluate_each_operator_on_its_own_readings():
    policy = rules(rule("all").scale_out("*").by(relative(2)).but_never_above(nodes(8))
                   .when("queue-length").is_(above(100)).for_at_least(seconds(5)))
    engine = PolicyEngine(policy, ["a", "b"], {"a": 1, "b": 1})
    sizes = {"a": 1, "b": 2}
    for t in (5.0, 10.0):
        for act in engine.observe(t, reading(a=500, b=10), sizes):
            sizes[act.operator] = act.new_size
    assert sizes == {"a": 2, "b": 2}


def test_the_runs_maximum_degree_blocks_like_a_limit():
    engine = PolicyEngine(scale_out_when_above(limit=16, by=absolute(4)), ["a"], {"a": 6}, max_size=8)
    actions = feed(engine, [150] * 3, {"a": 6})
    assert not actions[0].executed and "maximum degree is 8" in actions[0].reason
