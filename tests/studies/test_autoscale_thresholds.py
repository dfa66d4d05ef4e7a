"""studies.autoscale_thresholds: the selection rule its docstring declares, and the plant comparison it makes."""
from __future__ import annotations

from controllers.forecast import LastValuePredictor
from studies.autoscale_thresholds import PAPER, choose, compare, measure
from studies.burst_wait_budget import NOISY
from studies.guards_simulated import random_peaks
from workloads import Schedule, parse_workload


def test_the_cheapest_pair_that_keeps_the_slo_within_the_slack_is_chosen():
    scored = [(0.05, 0.8, +6.9, 0.959), (0.1, 0.8, +0.5, 0.929), (0.3, 0.8, -6.1, 0.883), (0.2, 0.8, -0.6, 0.905)]
    assert choose(scored, 0.5) == (0.1, 0.8, +0.5, 0.929)  # 0.2/0.8 is cheaper but loses 0.6 points
    assert choose(scored, 1.0) == (0.2, 0.8, -0.6, 0.905)
    assert choose([(0.3, 0.8, -6.1, 0.883)], 0.5) is None


def test_a_comparison_is_paired_with_the_papers_run_on_the_same_case():
    arrivals = Schedule(parse_workload(random_peaks(1), source="test"))
    paper = {"peaks": measure(PAPER, arrivals, 1)}
    (name, points, ratio, _), = compare([("peaks", arrivals)], PAPER, None, 1, paper, NOISY)
    assert (name, points, ratio) == ("peaks", 0.0, 1.0)  # the paper against itself
    naive = compare([("peaks", arrivals)], PAPER, LastValuePredictor(), 1, paper, NOISY)
    assert naive[0][2] != 1.0  # another predictor steers another run
