"""The Spark-minutes budget while a confirmation runs: a case starts only while what was spent plus its estimate
fits, a skipped case is named on the parent, and a suite stopped by the budget closes FINISHED with what is known
(a configuration short of seeds is then not a promotion candidate, as for any missing run)."""
import time

import pytest
from mlflow.tracking import MlflowClient

from analysis.budget import gate, skipped_cases, spent_minutes
from analysis.orchestration import analyse, close


@pytest.fixture()
def suite(tmp_path):
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("e", artifact_location=(tmp_path / "a").as_uri())
    parent = client.create_run(exp, tags={"kind": "tuning"}).info.run_id
    return uri, client, exp, parent


def child(client, exp, parent, minutes, status="FINISHED", running=False, case=0):
    start = int(time.time() * 1000) - int(minutes * 60000)
    run = client.create_run(exp, start_time=start,
                            tags={"mlflow.parentRunId": parent, "airflow.case": str(case), "controller": "ds2",
                                  "workload": "step", "seed": str(case + 1), "config": "ds2"})
    if not running:
        client.set_terminated(run.info.run_id, status, end_time=start + int(minutes * 60000))
    return run.info.run_id


def test_what_is_spent_is_the_runs_wall_time_failed_and_running_ones_included(suite):
    uri, client, exp, parent = suite
    assert spent_minutes(client, parent) == 0
    child(client, exp, parent, 2.0)
    child(client, exp, parent, 1.5, status="FAILED")  # a failed attempt used the cluster too
    created = time.time()
    child(client, exp, parent, 0.5, running=True)
    spent = spent_minutes(client, parent)
    # the running one counts until now: on a loaded machine the calls above take seconds, so the bound grows with them
    assert 4.0 - 0.02 <= spent <= 4.0 + (time.time() - created) / 60 + 0.02


def test_a_case_starts_only_while_it_fits_and_a_skipped_case_is_named(suite):
    uri, client, exp, parent = suite
    child(client, exp, parent, 3.0)
    assert gate(uri, parent, 1, case_minutes=1.5, budget_minutes=5.0) is None, "3 + 1.5 <= 5: it runs"
    reason = gate(uri, parent, 2, case_minutes=2.5, budget_minutes=5.0)
    assert reason.startswith("over the Spark-minutes budget: 3.0 of 5 minutes spent, this case needs about 2.5")
    assert skipped_cases(client, parent) == {2: reason}


def test_a_suite_stopped_by_the_budget_closes_finished_and_a_failure_still_fails_it(suite):
    uri, client, exp, parent = suite
    child(client, exp, parent, 1.0, case=0)
    child(client, exp, parent, 1.0, case=1)
    assert gate(uri, parent, 2, case_minutes=1.0, budget_minutes=2.5) is not None
    assert "1 case(s) skipped by the Spark-minutes budget" in analyse(uri, parent, case_count=3)
    assert "never started" not in analyse(uri, parent, case_count=3), "a skipped case is not a missing one"
    assert close(uri, parent, case_count=3) == "FINISHED"
    assert "skipped" in client.get_run(parent).data.tags["budget.stopped"]
    # without the budget's tag, the same absence is a missing run: the suite failed
    other = client.create_run(exp).info.run_id
    child(client, exp, other, 1.0, case=0)
    assert close(uri, other, case_count=2) == "FAILED"
