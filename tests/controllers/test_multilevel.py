"""The multi-level seed's phase B (the automatic benchmark as a controller, and the capacity table derived from its
decision log) and phase C (the `multilevel` controller moving between the table's rows): table lookup, scale-in
hysteresis, the cheapest-level order and the table's checks, on hand-made snapshots (microseconds)."""
from dataclasses import replace

import pytest

from controllers import ConfigError, ControlLoop, RunContext, build_controller
from controllers.multilevel import CapacityTable, TableError, table_from_decisions
from tests.controllers.test_guards import OPS, snap

ROWS = [  # what a benchmark on two 1-core workers could find
    {"rate_eps": 2000, "degrees": {op: 1 for op in OPS}, "executors": 1, "level": "start"},
    {"rate_eps": 3000, "degrees": {"parse": 1, "enrich": 2, "aggregate": 1, "sink": 1}, "executors": 2,
     "level": "executors", "delay_s": 6.0},
    {"rate_eps": 6000, "degrees": {op: 2 for op in OPS}, "executors": 2, "level": "partitions"},
]
TABLE = CapacityTable.from_dict({"operators": list(OPS), "query": "topology:default", "rows": ROWS})


def multilevel(table=TABLE, **params):
    """The seed's controller alone (`guards=false`) unless the test says otherwise: its table logic is what these
    tests are about; tests/controllers/test_guard_layer.py has it with the layer."""
    c = build_controller("multilevel", {"guards": False, **params}, OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=table))
    return ControlLoop(c)


def at(i, rate, backlog=0, slots=2):
    return replace(snap(time_s=2.0 * i, batch_id=i, rate=rate, backlog=backlog), slots=slots)


def test_the_cheapest_row_that_covers_the_need_with_headroom_is_taken_at_once():
    loop = multilevel(headroom=1.1, warmup_s=0)
    assert loop.executors == 1 and set(loop.degrees.values()) == {1}
    loop.step(at(1, 1500))  # 1,650 with headroom: row 0
    assert loop.executors == 1
    degrees = loop.step(at(2, 2500))  # trend +500/s over 2 s, led 6 s (row 1's delay): row 2
    assert loop.executors == 2 and degrees == dict(ROWS[2]["degrees"])
    assert "row 0 -> 2" in loop.log[-1].reason


def test_a_backlog_is_part_of_the_need():
    loop = multilevel(catch_up_s=10.0, headroom=1.0, warmup_s=0)
    loop.step(at(1, 1500, backlog=6000))  # 1,500 + 600 ev/s: row 1
    assert loop.executors == 2 and loop.degrees["enrich"] == 2


def test_scale_in_waits_for_the_stabilisation_and_only_to_a_row_with_room_to_spare():
    loop = multilevel(stabilisation_s=10.0, scale_in_band=0.8, headroom=1.0, warmup_s=0)
    loop.step(at(1, 5000))
    assert loop.executors == 2 and loop.degrees["parse"] == 2
    for i in range(2, 7):  # 2,500 ev/s: row 1 covers it, but only row 2 covers it with 20 % to spare
        loop.step(at(i, 2500))
    assert loop.degrees["parse"] == 2 and "fits" in loop.log[-1].reason
    loop.step(at(7, 1000))  # t = 14: row 0 would do (1,000 <= 0.8 x 2,000)
    assert loop.degrees["parse"] == 2 and "wanted for 0/10 s" in loop.log[-1].reason
    loop.step(at(8, 2100))  # t = 16: 2,100 <= 0.8 x 3,000: row 1 wanted
    loop.step(at(12, 1000))  # t = 24: 10 s after t = 14 -> the most demanding row wanted meanwhile, row 1
    assert loop.executors == 2 and loop.degrees == dict(ROWS[1]["degrees"])


def test_degrees_wait_for_the_executors_to_register():
    loop = multilevel(headroom=1.0, warmup_s=0)
    degrees = loop.step(at(1, 5000, slots=1))
    assert loop.executors == 2 and set(degrees.values()) == {1}


def _benchmark_run(periods):
    """Drive multilevel-benchmark through `periods` of (rate, health, p95), each held until the controller has
    judged a period at it, on a cluster whose executors register one batch after they are asked for."""
    c = build_controller("multilevel-benchmark", {"period_s": 4.0, "max_executors": 2, "warmup_s": 0, "settle_s": 0},
                         OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0))
    loop = ControlLoop(c)
    i, slots = 0, 1
    for rate, health, p95 in periods:
        while True:
            i += 1
            s = replace(snap(time_s=2.0 * i, batch_id=i, rate=rate, records=int(rate * 2 * health),
                             spans={"parse": 0.1, "enrich": 0.9, "aggregate": 0.2, "sink": 0.1}),
                        slots=slots, latency_p95_s=p95)
            loop.step(s)
            slots = loop.executors  # registered by the next batch
            if "multilevel.health" in loop.log[-1].details:
                break
    return loop


def test_the_benchmark_adds_partitions_within_the_slots_before_executors_and_its_log_makes_the_table():
    loop = _benchmark_run([(1000, 1.0, 2.0), (2000, 0.9, 2.0), (2000, 1.0, 2.0), (3000, 0.8, 2.0), (3000, 1.0, 2.0),
                           (4000, 1.0, 6.0), (4000, 1.0, 2.0)])
    levels = [r.details.get("multilevel.level") for r in loop.log if "multilevel.level" in r.details]
    # one slot: no partition can help, so an executor; then two slots: the bottleneck (enrich) gets a second task
    assert levels == ["executors", "partitions", "partitions"]
    records = [r.to_dict() for r in loop.log]
    table = table_from_decisions(records, OPS, "topology:default", {"health_threshold": 0.95})
    assert [(r.rate_eps, r.executors, r.degrees["enrich"], r.level) for r in table.rows] == [
        (1000, 1, 1, "start"), (2000, 2, 1, "executors"), (3000, 2, 2, "partitions"), (4000, 2, 2, "partitions")]
    assert table.rows[1].delay_s > 0  # measured: request -> the slot registered
    # a late p95 is unhealthy though every event was read
    late = [r for r in loop.log if r.details.get("multilevel.p95_worst_s") == 6.0]
    assert late and late[0].details["multilevel.healthy"] == 0


def test_tables_from_another_topology_or_query_or_empty_are_refused_naming_the_field():
    with pytest.raises(TableError, match="field 'rows' is empty"):
        CapacityTable.from_dict({"operators": list(OPS), "query": "q", "rows": []})
    with pytest.raises(TableError, match="field 'query' is missing"):
        CapacityTable.from_dict({"operators": list(OPS), "rows": ROWS})
    with pytest.raises(TableError, match=r"rows\[0\]: field 'degrees'"):
        CapacityTable.from_dict({"operators": ["a", "b"], "query": "q", "rows": ROWS})
    with pytest.raises(TableError, match="measured on query 'topology:default', this run computes 'nexmark:q5'"):
        TABLE.check_for(OPS, "nexmark:q5", "table run x")
    with pytest.raises(TableError, match="measured on operators"):
        TABLE.check_for(("a",), "topology:default", "table run x")
    with pytest.raises(ConfigError, match="no capacity table"):
        multilevel(table=None)
    with pytest.raises(ConfigError, match="degree 2 > max_degree 1"):
        c = build_controller("multilevel", {}, OPS, 1)
        c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=TABLE))


@pytest.mark.parametrize("params, message", [
    ({"headroom": 0.9}, "headroom"), ({"scale_in_band": 1.5}, "scale_in_band"), ({"stabilisation_s": -1},
                                                                                  "stabilisation_s"),
])
def test_bad_settings_are_refused_naming_the_parameter(params, message):
    with pytest.raises(ConfigError, match=message):
        build_controller("multilevel", params, OPS, 8)


def test_no_period_is_judged_in_the_warm_up_or_while_an_addition_settles():
    c = build_controller("multilevel-benchmark", {"period_s": 4.0, "warmup_s": 8.0, "settle_s": 4.0}, OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0))
    loop = ControlLoop(c)
    judged = []
    for i in range(1, 12):  # a start-up transient: unhealthy throughout
        s = replace(snap(time_s=2.0 * i, batch_id=i, rate=1000, records=1000), slots=2, latency_p95_s=2.0)
        loop.step(s)
        if "multilevel.health" in loop.log[-1].details:
            judged.append(i)
    # batches 1-4 start before t = 8; the first period is batches 5-6, the addition after it settles over 7-8
    assert judged == [6, 10]


def test_the_first_row_holds_through_the_warm_up():
    loop = multilevel(headroom=1.0, warmup_s=10.0)
    loop.step(at(1, 5000, backlog=4000))
    assert loop.executors == 1 and "warming up" in loop.log[-1].reason
    loop.step(at(5, 5000))
    assert loop.executors == 2


def test_a_period_is_judged_at_one_offered_rate_not_across_a_step():
    c = build_controller("multilevel-benchmark", {"period_s": 4.0, "warmup_s": 0, "settle_s": 0}, OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0))
    loop = ControlLoop(c)
    # the batch that meets the step reads the old level's lag (health 0.5): it starts no judgement of the step
    for i, (rate, read) in enumerate([(1000, 2000), (2000, 2000), (2000, 4000), (2000, 4000)], start=1):
        loop.step(replace(snap(time_s=2.0 * i, batch_id=i, rate=rate, records=read), slots=1, latency_p95_s=2.0))
    reasons = [r.reason for r in loop.log]
    assert "offered rate 1000 -> 2000 ev/s: a new period starts after this batch" in reasons[1]
    assert loop.log[-1].details["multilevel.healthy"] == 1 and loop.executors == 1


def test_after_an_addition_the_next_period_waits_for_the_backlog_it_left_to_drain():
    c = build_controller("multilevel-benchmark", {"period_s": 4.0, "warmup_s": 0, "settle_s": 0, "recovery_s": 10},
                         OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0))
    loop = ControlLoop(c)
    spans = {"parse": 0.1, "enrich": 0.9, "aggregate": 0.2, "sink": 0.1}

    def batch(i, health, backlog, slots=2):
        s = snap(time_s=2.0 * i, batch_id=i, rate=1000, records=int(2000 * health), backlog=backlog, spans=spans)
        loop.step(replace(s, slots=slots, latency_p95_s=2.0))
        return loop.log[-1]

    batch(1, 0.5, 3000)
    assert "partitions: enrich -> 2" in batch(2, 0.5, 5000).reason  # unhealthy: the bottleneck gets a task
    assert "draining" in batch(3, 1.0, 4000).reason and "draining" in batch(4, 1.0, 2500).reason
    assert "judging" in batch(5, 1.0, 1500).reason  # drained (<= one trigger's 2,000 arrivals): a period starts
    assert batch(6, 1.0, 1500).details["multilevel.healthy"] == 1
    assert loop.degrees["enrich"] == 2


def test_a_row_reached_through_an_unjudged_configuration_carries_the_dearest_level_and_longest_delay_on_the_way():
    """Run 4 of the benchmark on the cluster: an executor added (12.2 s to register), its configuration never judged
    healthy (the backlog of those seconds), then partitions: the row after the start row is reached through the
    executor, so a controller moving to it pays its delay."""
    ones = {op: 1 for op in OPS}
    two = {**ones, "enrich": 2}
    log = [{"after": ones, "executors": 1, "details": {"multilevel.healthy": 1, "multilevel.rate_eps": 5000.0}},
           {"after": ones, "executors": 2, "details": {"multilevel.healthy": 0, "multilevel.rate_eps": 5256.0,
                                                       "multilevel.level": "executors"}},
           {"after": ones, "executors": 2, "details": {"multilevel.delay_s": 12.2}},
           {"after": two, "executors": 2, "details": {"multilevel.healthy": 0, "multilevel.rate_eps": 6371.0,
                                                      "multilevel.level": "partitions", "multilevel.delay_s": 0.0}},
           {"after": two, "executors": 2, "details": {"multilevel.healthy": 1, "multilevel.rate_eps": 7500.0}}]
    table = table_from_decisions(log, OPS, "topology:default")
    assert [(r.rate_eps, r.executors, r.level, r.delay_s) for r in table.rows] == [
        (5000.0, 1, "start", 0.0), (7500.0, 2, "executors", 12.2)]


def _learned(ratio):
    """A learned predictor that always forecasts `ratio` x the recent level (features are scale-free)."""
    from controllers.forecast import Horizon, LearnedPredictor

    return LearnedPredictor(lambda rows: [ratio] * len(rows), f"fake-x{ratio:g}", horizon=Horizon(2.0, 5))


def _multilevel_with(predictor, **params):
    c = build_controller("multilevel", {"guards": False, "predictor": "registry", "warmup_s": 0, "headroom": 1.0, **params},
                         OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=TABLE, predictor=predictor))
    return ControlLoop(c)


def test_a_learned_predictor_foresees_the_rise_the_trend_cannot_see():
    """Flat at 1,800 ev/s: the trend sees nothing to lead, a model forecasting 1.5x the level moves to the row
    that holds 2,700 before the step arrives; a model forecasting less than the last rate is never followed down."""
    trend = multilevel(headroom=1.0, warmup_s=0)
    rising = _multilevel_with(_learned(1.5), predictor_guard=False)
    falling = _multilevel_with(_learned(0.3), predictor_guard=False)
    for i in range(1, 12):  # 11 batches: the model's 10 lags of history, then its forecast
        for loop in (trend, rising, falling):
            loop.step(at(i, 1800))
    assert trend.executors == 1 and falling.executors == 1
    assert rising.executors == 2 and "predictor fake-x1.5" in rising.log[-1].reason
    assert rising.controller.run_tags() == {"predictor": "fake-x1.5"}


def test_the_guard_sets_a_model_worse_than_the_last_value_aside_and_the_decision_says_so():
    loop = _multilevel_with(_learned(1.5), guard_window=3, guard_min_scored=2, stabilisation_s=0)
    for i in range(1, 30):  # the load stays flat: the model's 1.5x is wrong every period, naive is exact
        loop.step(at(i, 1500))
        if i == 12:
            assert loop.executors == 2  # the model's 2,250 ev/s: row 1
    last = loop.log[-1]
    assert "set aside: worse than the last value" in last.reason and last.details["guard_using"] == "naive"
    assert "(trend +0/s" in last.reason  # its own estimate, which would lead a rising rate, not a flat last value
    assert last.details["guard_scored"] >= 2 and loop.executors == 1  # back on the row the load needs


def test_without_a_registered_model_the_trend_is_used_and_the_reason_says_why():
    from controllers.forecast import PaperPredictor

    c = build_controller("multilevel", {"predictor": "registry", "warmup_s": 0}, OPS, 8)
    c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=TABLE, predictor=PaperPredictor(),
                      predictor_warning="load predictor 'load-predictor' is not a registered model"))
    loop = ControlLoop(c)
    loop.step(at(1, 1500))
    assert "is not a registered model; the trend is used" in loop.log[-1].reason
    assert c.run_tags() == {"predictor": "trend"}
    with pytest.raises(ConfigError, match="period_s .1.0. is shorter than the trigger interval .2.0."):
        build_controller("multilevel", {"predictor": "registry", "period_s": 1.0}, OPS, 8).check_run(
            RunContext(trigger_s=2.0, slo_latency_s=5.0))
