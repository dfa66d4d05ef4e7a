"""The Nexmark queries written with the operator API give exactly the pandas references' answers, at degrees 1, 2
and 4 and when every operator's degree changes from batch to batch (state moving with its keys), on the job's own
per-batch path without Spark (tests/queries/local_runner.py). On Spark: tests/jobs/test_queries_on_spark.py."""
from __future__ import annotations

import pytest

from queries import nexmark as nx
from tests.queries.local_runner import run_locally
from workloads.schedule import Schedule
from workloads.spec import parse_workload

QUERIES = list(nx.ARROW_QUERIES)  # the DataFrame versions need Spark: tests/jobs/test_queries_on_spark.py


@pytest.fixture(scope="module")
def schedule():
    # 14 s, 1,200 then 2,800 ev/s: 28,000 events, a 10 s window and a part, auctions closing throughout
    return Schedule(parse_workload({"name": "nexmark-test", "profile": "step", "duration_s": 14, "seed": 11,
                                    "params": {"low": 1200, "high": 2800, "at_s": 7}}, "test"))


@pytest.fixture(scope="module")
def references(schedule):
    return {name: nx.expected(name, schedule) for name in QUERIES}


def _bounds(schedule, n_batches: int) -> list[int]:
    total = schedule.total_events
    return [total * i // n_batches for i in range(n_batches + 1)]


def _check(name, schedule, references, degrees):
    bounds = _bounds(schedule, len(degrees))
    output = run_locally(nx.build(name), schedule, bounds, degrees)
    same, why = nx.same_rows(nx.answer(name, output), references[name])
    assert same, f"{name}: {why}"


@pytest.mark.parametrize("degree", [1, 2, 4])
@pytest.mark.parametrize("name", QUERIES)
def test_each_query_equals_its_reference_at_a_fixed_degree(name, degree, schedule, references):
    ops = nx.build(name).names
    _check(name, schedule, references, [{op: degree for op in ops}] * 7)


@pytest.mark.parametrize("name", QUERIES)
def test_each_query_equals_its_reference_when_degrees_change_every_batch(name, schedule, references):
    ops = nx.build(name).names
    pattern = [1, 3, 4, 2, 1, 4, 2, 3, 1]
    degrees = [{op: pattern[(b + i) % len(pattern)] for i, op in enumerate(ops)} for b in range(9)]
    _check(name, schedule, references, degrees)


def test_a_comparison_names_the_first_differing_row(schedule, references):
    output = run_locally(nx.build("q7"), schedule, _bounds(schedule, 3), [{}] * 3)
    wrong = nx.answer("q7", output)
    wrong.loc[0, "price"] += 1
    same, why = nx.same_rows(wrong, references["q7"])
    assert not same and "1 rows differ" in why and "price" in why


def test_the_answers_are_not_trivially_empty(references):
    # every query has rows to compare on this workload (an empty answer would match an empty output)
    assert all(len(references[name]) > 0 for name in QUERIES)
    assert len(references["q4"]) == 5  # all five categories sold something
