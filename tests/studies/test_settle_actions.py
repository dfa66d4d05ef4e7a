"""The settle study on a suite's workloads alone (`--suite`): how the held-out traces are put through the plant."""
from studies.settle_actions import CONFIGURATIONS, table


def test_a_suites_workloads_alone_make_the_table():
    text, skipped = table(1, ("step",))
    rows = [line for line in text.splitlines() if line.startswith("| step |")]
    assert len(rows) == 1 and not skipped
    assert "google2011" not in text and "random-peaks" not in text  # the study's own cases are left out
    assert "Cases meeting each test, of 1 " in text
    assert len(rows[0].split("|")) == len(CONFIGURATIONS) + 4  # workload, the oracle's SLO, one cell each
