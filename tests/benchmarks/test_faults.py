"""The fault suite's cheap cases, through the same functions `python -m benchmarks.faults` runs (which also writes
docs/reliability.md): each fault is started for real and its promise must hold. No Spark starts (validation checks
Java and refuses), so these run with the tests that need no Spark."""
import pytest

from benchmarks.faults import BAD_INPUTS, bad_input, cases, page

# the killed recording process and the local stack's leftovers are checked in more detail by
# tests/jobs/test_liveness.py and tests/deploy/test_local_stack_stop.py, with the same process scripts, and the
# promotion race by tests/analysis/test_promotion_registry.py with the same fabricated suites
COVERED_ELSEWHERE = ("recording process killed (SIGKILL)", "local stack: children outlive the leader",
                     "two promotions racing (two DAG runs' promote tasks)")
FAULTS = [(name, case) for name, case in cases() if not name.startswith("bad input: ") and name not in COVERED_ELSEWHERE]


@pytest.mark.parametrize("name, case", FAULTS, ids=[name for name, _ in FAULTS])
def test_each_fault_keeps_its_promise(name, case, tmp_path):
    outcome = case(tmp_path)
    assert outcome.held, outcome


def test_the_catalogue_has_at_least_35_bad_inputs_and_a_sample_is_rejected_cleanly(tmp_path):
    """Every bad input runs in `python -m benchmarks.faults`; here one of each kind (flag, workload file, trace file,
    topology, policy, controller config), to keep `make test` short."""
    assert len(BAD_INPUTS) >= 35 and len({b[0] for b in BAD_INPUTS}) == len(BAD_INPUTS)
    sample = ("zero trigger", "bad rate in the second stream", "trace with a bad row", "unknown operator kind",
              "policy duration that is not one", "controller config with an unknown parameter")
    by_name = {b[0]: b for b in BAD_INPUTS}
    outcomes = [bad_input(*by_name[what], tmp_path / str(i)) for i, what in enumerate(sample)]
    assert all(o.held for o in outcomes), [o for o in outcomes if not o.held]
    text = page(outcomes, "test machine")
    assert "**6 of 6 cases hold**; 6 of 6 bad inputs are rejected" in text
    assert "`error: workload: " in text and "## The promises" in text
