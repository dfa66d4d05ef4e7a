"""Placement controllers: the seeds' worked numbers, and the decisions on small key-group tables."""
import pytest

from controllers.placement import PlacementSnapshot, build_placement
from controllers.placement.souravlas import fair_split, one_to_one_steps
from controllers.placement.sousa import degradation_score, dominates
from controllers.placement.stepwise import (class_table, initial_schedule, one_largest_step, paper_schedule,
                                            relabel_to_identity, schedule_errors, single_index_matrix, step_cost,
                                            total_cost)
from params.declare import ParamError

# ---- Sousa 2014, Eq. 3.2 and its worked example (§3.2.3) ----


def test_degradation_score_reproduces_the_formula_not_the_printed_slips():
    assert degradation_score([5, 5, 10], 0.25) == pytest.approx(1.0)
    assert degradation_score([12, 5, 15], 0.25) == pytest.approx(10 / 12)  # printed 0.8
    assert degradation_score([20, 30, 20], 0.25) == pytest.approx(0.5)  # printed 0.66
    assert degradation_score([20, 30, 20], 0.75) == 0.0  # +50 % is not a degradation at d = 0.75
    assert degradation_score([7], 0.25) == 0.0 and degradation_score([0, 5], 0.25) == 0.0


def test_dominance_needs_no_resource_higher_and_one_lower():
    source, moving = (10.0, 10.0), (2.0, 2.0)
    assert dominates(source, (7.0, 8.0), moving)
    assert not dominates(source, (8.0, 8.0), moving)  # equal on every resource: nothing gained
    assert dominates(source, (8.0, 7.0), moving)
    assert not dominates(source, (1.0, 9.0), moving)  # one resource would end above the source's level


def snapshot(t, assignment, latency, usage, partitions=3, in_flight=0):
    return PlacementSnapshot(time_s=t, interval_s=1.0, assignment=tuple(assignment), partitions=partitions,
                             latency_s=tuple(latency), usage=usage, moves_in_flight=in_flight)


def sousa_run(controller, latencies, assignment, usage):
    decisions = []
    for i, latency in enumerate(latencies, start=1):
        decisions.append(controller.decide(snapshot(float(i), assignment, latency, usage)))
    return decisions


# key groups 0, 1 on partition 0 (0 is the heavier), 2 on partition 1, 3 on partition 2; usage: records, busy,
# state bytes, shuffle bytes
USAGE = {0: (60.0, 0.6, 600.0, 60.0), 1: (20.0, 0.2, 200.0, 20.0), 2: (30.0, 0.3, 300.0, 30.0),
         3: (10.0, 0.1, 100.0, 10.0)}


def test_sousa_moves_the_degraded_partitions_largest_movable_key_group_once_per_round_then_waits():
    sousa = build_placement("sousa", {"round_s": 4})
    rising = [(1.0, 1.0, 1.0), (1.0, 1.0, 1.0), (2.0, 1.0, 1.0), (3.0, 1.0, 1.0)]  # partition 0 degrades
    decisions = sousa_run(sousa, rising, (0, 0, 1, 2), USAGE)
    assert [d.moves for d in decisions[:3]] == [(), (), ()]
    (move,) = decisions[3].moves  # l_mig = 1
    # both key groups on partition 0 have s = 2: key group 0, the larger share, goes first; partition 1 fails the
    # test (30 + 60 records > partition 0's 80), partition 2 passes it (10 + 60 = 70 < 80 on every resource)
    assert (move.key_group, move.source, move.target) == (0, 0, 2)
    assert "round 1" in decisions[3].reason
    # while the move is in flight no round runs; the window restarts after it
    waiting = sousa.decide(snapshot(5.0, (0, 0, 1, 2), (3.0, 1.0, 1.0), USAGE, in_flight=1))
    assert waiting.moves == () and "suspended" in waiting.reason


def test_sousa_with_nothing_degraded_or_nowhere_to_go_moves_nothing():
    steady = [(1.0, 1.0, 1.0)] * 4
    assert all(d.moves == () for d in sousa_run(build_placement("sousa", {"round_s": 4}), steady, (0, 0, 1, 2),
                                                 USAGE))
    # every key group on partition 0: a degraded one can go to an empty partition; with one partition, nowhere
    lonely = build_placement("sousa", {"round_s": 2})
    one = [PlacementSnapshot(float(i), 1.0, (0, 0), 1, (float(i),), {0: (1.0,) * 4, 1: (1.0,) * 4})
           for i in (1, 2)]
    assert [lonely.decide(s).moves for s in one] == [(), ()]


def test_sousa_ties_go_to_the_key_group_moved_longest_ago():
    sousa = build_placement("sousa", {"round_s": 2, "max_moves": 1})
    usage = {0: (1.0,) * 4, 1: (1.0,) * 4, 2: (0.0,) * 4, 3: (0.0,) * 4}
    first = sousa_run(sousa, [(1.0, 1.0, 1.0), (2.0, 1.0, 1.0)], (0, 0, 1, 2), usage)[-1]
    (moved,) = first.moves
    assert moved.key_group == 0  # never moved, equal share: the lower id
    # back on partition 0 with key group 1, the same rise again: the one never moved goes first
    later = [sousa.decide(snapshot(t, (0, 0, 1, 2), lat, usage)) for t, lat in ((3.0, (1.0, 1, 1)),
                                                                              (4.0, (2.0, 1, 1)))][-1]
    assert later.moves[0].key_group == 1


def test_sousa_random_is_seeded_and_uses_the_same_destination_test():
    runs = []
    for _ in range(2):
        rnd = build_placement("sousa-random", {"round_s": 2, "seed": 7})
        runs.append([d.moves for d in sousa_run(rnd, [(1.0, 1, 1), (1.0, 1, 1)] * 3, (0, 0, 1, 2), USAGE)])
    assert runs[0] == runs[1]
    moves = [m for round_moves in runs[0] for m in round_moves]
    assert moves and all(len(r) <= 1 for r in runs[0])  # l_mig = 1
    # only moves the destination test allows: from partition 0 (80 records) to 2 (10), never onto 1 with key group 0
    assert all(m.source != m.target and not (m.key_group == 0 and m.target == 1) for m in moves)


@pytest.mark.parametrize("name,params,field", [
    ("sousa", {"sensitivity": 0}, "sensitivity"), ("sousa", {"sensitivity": -0.5}, "sensitivity"),
    ("sousa", {"max_moves": 0}, "max_moves"), ("souravlas", {"sub_cluster_size": 1}, "sub_cluster_size"),
    ("souravlas", {"share": "balanced"}, "share"), ("sousa", {"nonsense": 1}, "nonsense"),
])
def test_bad_settings_are_refused_naming_them(name, params, field):
    with pytest.raises(ParamError, match=field):
        build_placement(name, params)
    with pytest.raises(ParamError, match="unknown placement controller"):
        build_placement("hash-plus")


# ---- Souravlas et al. 2021, §3 (the schedule) and §4 (the fair split) ----

def test_class_table_reproduces_table_2():
    table = class_table(6, 4, 6, 5)
    assert [c.combinations for c in table] == [4, 4, 3, 3, 3, 3]
    assert set(table[0].pairs) == {(0, 0), (3, 0), (1, 2), (4, 2), (2, 4), (5, 4)}
    assert set(table[2].pairs) == {(2, 0), (5, 0), (0, 2), (3, 2), (1, 4), (4, 4)}
    assert set(table[5].pairs) == {(1, 1), (4, 1), (2, 3), (5, 3), (0, 5), (3, 5)}


def test_the_schedule_costs_23_then_17_then_16_and_the_printed_final_matrix_is_caught():
    steps = paper_schedule(6, 4, 5)
    assert steps["single index"][0] == (0, 2, 4, 0, 2, 4)
    assert total_cost(steps["initial"]) == 23
    assert steps["initial"][0] == (0, 2, 4, 1, 3, 5)
    assert total_cost(steps["identity first"]) == 17
    assert steps["identity first"][1] == (3, 4, 5, 0, 1, 2)
    final = steps["final"]
    assert total_cost(final) == 16 and [step_cost(r) for r in final] == [0, 3, 2, 5, 2, 4]
    assert schedule_errors(final) == []
    assert sum(step_cost(r) == 5 for r in final) == 1  # one step of the largest cost Q - 1
    printed = ((0, 1, 2, 3, 4, 5), (3, 4, 5, 0, 1, 2), (1, 2, 0, 4, 5, 3), (5, 4, 3, 1, 2, 0), (2, 0, 1, 5, 3, 4),
               (4, 3, 5, 2, 0, 1))
    assert total_cost(printed) == 16  # its costs are right ...
    errors = schedule_errors(printed)  # ... its columns are not
    assert errors == ["column N1 does not send what source 1 has to: 4 more often than due; 5 less often than due",
                      "column N2 does not send what source 2 has to: 5 more often than due; 4 less often than due"]


@pytest.mark.parametrize("nodes,t,s", [(5, 4, 6), (4, 2, 3), (3, 3, 3), (7, 1, 2)])
def test_every_schedule_built_is_one_to_one_and_the_steps_never_cost_more(nodes, t, s):
    table = class_table(nodes, t, nodes, s)
    pairs = [p for c in table for p in c.pairs]
    initial = initial_schedule(table, nodes)
    assert schedule_errors(initial, pairs) == []
    first = relabel_to_identity(initial, 0)
    final = one_largest_step(first)
    assert final[0] == tuple(range(nodes)) and total_cost(final) <= total_cost(first)
    assert all(sorted(r) == list(range(nodes)) for r in final)
    assert len(single_index_matrix(table, nodes)) == sum(1 for c in table if c.pairs)  # an empty class: no step


def test_fair_split_reproduces_18_9_23_and_offers_the_headroom_reading():
    assert fair_split(50, [0.6, 0.3, 0.8]) == [18, 9, 23]
    headroom = fair_split(50, [0.6, 0.3, 0.8], share="headroom")
    assert sum(headroom) == 50 and headroom[1] > headroom[0] > headroom[2]
    assert fair_split(3, [0.0, 0.0]) == [2, 1]  # no weight anywhere: equal shares, the remainder to the first
    assert fair_split(0, [0.5]) == [0]
    assert fair_split(8, [0.9, 0.1, 0.5, 0.2], share="even") == [2, 2, 2, 2]  # the paper's section 6: 8 to 4 nodes


def test_one_to_one_steps_never_let_a_partition_send_or_receive_twice_in_a_step():
    pairs = [(0, 1), (0, 2), (0, 3), (4, 1), (4, 2), (5, 1)]
    steps = one_to_one_steps(pairs)
    assert len(steps) == 3  # partition 0 sends three times, 1 receives three times: three steps (König)
    assert sorted(p for s in steps for p in s) == sorted(pairs)
    for step in steps:
        assert len({u for u, _ in step}) == len(step) and len({v for _, v in step}) == len(step)
    assert [max(abs(u - v) for u, v in s) for s in steps] == sorted(max(abs(u - v) for u, v in s) for s in steps)


def souravlas_snapshot(t, assignment, busy, partitions, in_flight=0):
    usage = {g: (1.0, b, 0.0, 0.0) for g, b in enumerate(busy)}
    return PlacementSnapshot(t, 1.0, tuple(assignment), partitions, (0.0,) * partitions, usage, in_flight)


def test_souravlas_relieves_an_overloaded_partition_within_its_sub_cluster_step_by_step():
    # partition 0 holds key groups 0-3 (0.3 s each per second: utilisation 1.2), partitions 1-3 are light,
    # partition 5 is in the other sub-cluster (size 5) and idle
    assignment = (0, 0, 0, 0, 1, 2, 3, 5)
    busy = (0.3, 0.3, 0.3, 0.3, 0.1, 0.2, 0.05, 0.0)
    controller = build_placement("souravlas", {"round_s": 2})
    assert controller.decide(souravlas_snapshot(1.0, assignment, busy, 6)).moves == ()
    first = controller.decide(souravlas_snapshot(2.0, assignment, busy, 6))
    assert first.moves and "round 1" in first.reason
    moves = list(first.moves)
    while True:  # one step per period until the schedule is done
        nxt = controller.decide(souravlas_snapshot(3.0, assignment, busy, 6))
        if not nxt.moves:
            break
        assert "step of the round's schedule" in nxt.reason
        moves += nxt.moves
    assert all(m.source == 0 and m.target in (1, 2, 3, 4) for m in moves)  # the home sub-cluster only
    # mean utilisation (1.2 + 0.1 + 0.2 + 0.05 + 0 + 0) / 6 = 0.26: whole key groups of 0.3 do not fit under the
    # excess 0.94 more than three times
    assert len(moves) == 3 and len({m.key_group for m in moves}) == 3


def test_souravlas_leaves_an_even_load_and_an_indivisible_hot_key_group_alone():
    even = build_placement("souravlas", {"round_s": 1})
    assert even.decide(souravlas_snapshot(1.0, (0, 1, 2), (0.9, 0.9, 0.9), 3)).moves == ()
    hot = build_placement("souravlas", {"round_s": 1})
    decision = hot.decide(souravlas_snapshot(1.0, (0, 1, 2), (0.95, 0.05, 0.05), 3))
    assert decision.moves == () and "cannot be split" in decision.reason
