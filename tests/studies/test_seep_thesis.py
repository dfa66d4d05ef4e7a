"""The SEEP thesis' simulated tests T1-T6 (§5.2.2-5.2.7, pp. 68-78), on the tuple-at-a-time queue
model with the thesis' lambda and mu and the catalogue's policies (the same files a Spark run uses).

Timing: readings every 5 s (at 5, 10, 15 ... s); a trigger judges the readings younger than its window, so a rule
with a T-second window acts T seconds after the last reading that broke its condition — T1: the queue is exactly
300 (not above) at 60 s, above from 65 s on, and the rule acts at 90 s (the thesis: "about 92 s").
"""
import pytest

from controllers.policy import load_policy
from controllers.policy.catalogue import CATALOGUE
from studies.seep_queue_model import QueueOperator, simulate_policy
from workloads import Schedule, load_workload


def schedule(workload: str, duration_s: float = 300.0) -> Schedule:
    return Schedule(load_workload(workload).with_overrides(duration_s=duration_s))


def run(policy: str, workload: str, operators, duration_s: float = 300.0):
    ops = [QueueOperator(name, mu) for name, mu in operators]
    return simulate_policy(ops, schedule(workload, duration_s), load_policy(policy), duration_s)


def test_t1_single_operator_scales_out_once_and_the_queue_plateaus():
    r = run("seep-t1", "seep-constant", [("enrich", 5.0)])
    crossed = r.first_time_queue_above("enrich", 300)
    assert 60.0 <= crossed <= 65.0  # lambda - mu = 5 tuples/s: 300 at 60 s
    last_not_above = max(t for t, q in zip(r.times, r.queue["enrich"]) if q <= 300 and t < crossed + 30)
    assert [(a.time_s, a.old_size, a.new_size) for a in r.actions] == [(last_not_above + 30.0, 1, 2)]
    assert 90.0 <= r.executed[0].time_s <= 92.0
    plateau = r.queue_at("enrich", r.executed[0].time_s)
    assert 450 <= plateau <= 480
    assert r.queue_at("enrich", 290.0) == pytest.approx(plateau, abs=2)  # 2 x 5 = lambda: it stops growing
    # the condition holds for the rest of the run, yet nothing else happens: nodes(2) and the edge trigger


def test_t2_scales_out_by_two_and_the_queue_drains():
    r = run("seep-t2", "seep-constant", [("enrich", 5.0)])
    assert [(a.old_size, a.new_size, a.executed) for a in r.actions] == [(1, 3, True)]
    assert 90.0 <= r.actions[0].time_s <= 92.0
    drained = next(t for t, q in zip(r.times, r.queue["enrich"]) if t > 95 and q == 0)
    # 15 tuples/s against 10: about 475 tuples drain in about 95 s
    assert 180.0 <= drained <= 200.0


def test_t3_only_the_real_bottleneck_scales():
    r = run("seep-t3", "seep-constant", [("parse", 20.0), ("enrich", 5.0)])
    assert [(a.operator, a.old_size, a.new_size) for a in r.actions] == [("enrich", 1, 3)]
    assert 90.0 <= r.actions[0].time_s <= 92.0
    assert max(r.queue["parse"]) <= 1.0 and set(r.sizes["parse"]) == {1}


def test_t4_short_peaks_never_reach_the_threshold():
    r = run("seep-t4", "seep-random-peaks", [("enrich", 10.0)])
    assert r.actions == []
    # the first peak (about 5 s at 20 tuples/s against mu 10) adds about 50 tuples
    assert 40 <= r.queue_at("enrich", 20.0) <= 60
    assert max(r.queue["enrich"]) < 10_000


def test_t5_follows_the_load_out_at_each_peak_and_in_after_the_drain():
    r = run("seep-t5", "seep-periodic", [("enrich", 10.0)])
    executed = [(a.time_s, a.action, a.old_size, a.new_size) for a in r.executed]
    # peaks at 20-40, 80-100, 140-160, 200-220, 260-280 s; the queue passes 100 ten seconds into a peak
    assert 30.0 <= r.first_time_queue_above("enrich", 100) <= 35.0
    outs = [e for e in executed if e[1] == "scale-out"]
    ins = [e for e in executed if e[1] == "scale-in"]
    assert [(o, n) for _, _, o, n in outs] == [(1, 3)] * len(outs) and len(outs) == 5
    assert [(o, n) for _, _, o, n in ins] == [(3, 1)] * len(ins) and len(ins) >= 4
    for k, (t, *_rest) in enumerate(outs):
        assert 20.0 + 60 * k + 10 <= t <= 20.0 + 60 * k + 20  # 10-20 s into each peak
    for (t_out, *_a), (t_in, *_b) in zip(outs, ins):
        assert 10.0 <= t_in - t_out <= 20.0  # drain (30 vs 10-20 tuples/s), then 5 s below 1
    # between actions every rule is quiet: one scale-out per peak however long the queue stays above 100
    assert all(a.executed or a.reason.endswith("already at the floor of 1") for a in r.actions)


def test_t6_hysteresis_keeps_three_instances_for_five_minutes():
    r = run("seep-t6", "seep-periodic", [("enrich", 10.0)], duration_s=400.0)
    executed = r.executed
    assert [(a.action, a.old_size, a.new_size) for a in executed] == [("scale-out", 1, 3)]
    scaled_out = executed[0].time_s
    assert 30.0 <= scaled_out <= 40.0
    assert all(n == 3 for t, n in zip(r.times, r.sizes["enrich"]) if scaled_out <= t <= scaled_out + 300)
    guard = [a for a in r.actions if not a.executed and "guard" in a.reason]
    assert guard and guard[0].time_s - scaled_out < 300  # the scale-in fired and the guard blocked it
    # the guard is what holds the size: the same policy with guards ignored scales in after the first drain
    from controllers.policy import PolicyOptions, parse_policy

    unguarded = parse_policy((CATALOGUE / "seep-t6.yaml").read_text().replace("rules:", "options: {guards: ignored}\n"
                                                                                "rules:", 1))
    assert unguarded.options == PolicyOptions(guards="ignored")
    free = simulate_policy([QueueOperator("enrich", 10.0)], schedule("seep-periodic", 400.0), unguarded, 400.0)
    assert [(a.action, a.old_size, a.new_size) for a in free.executed][:2] == [("scale-out", 1, 3), ("scale-in", 3, 1)]


def test_a_provisioning_delay_moves_the_effect_not_the_decision():
    ops = [QueueOperator("enrich", 5.0)]
    fast = simulate_policy(ops, schedule("seep-constant"), load_policy("seep-t1"), 300)
    slow = simulate_policy(ops, schedule("seep-constant"), load_policy("seep-t1"), 300, provisioning_s=20.0)
    assert fast.actions[0].time_s == slow.actions[0].time_s
    assert slow.queue_at("enrich", 290.0) == pytest.approx(fast.queue_at("enrich", 290.0) + 100, abs=2)
