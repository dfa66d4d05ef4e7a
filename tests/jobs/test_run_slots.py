"""What a run tells its controller about the task slots it has (RunContext.slots), before Spark starts: a local
master's N, nothing for a cluster master (its executors register later and may change); and how long it runs."""
import pytest

from jobs.config import RunConfig, local_slots


@pytest.mark.parametrize("master, slots", [("local", 1), ("local[4]", 4), ("local[2, 3]", 2), ("local[16,1]", 16),
                                           ("spark://127.0.0.1:7077", 0), ("yarn", 0), (None, 0)])
def test_a_local_master_gives_its_slots_and_a_cluster_master_none(master, slots):
    assert local_slots(master) == slots


def test_local_star_gives_the_machines_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    assert local_slots("local[*]") == 6


def test_the_run_context_carries_them_to_the_controller():
    config = RunConfig(controller="ds2", controller_params={}, workload="step", master="local[3]")
    assert config.context().slots == 3


def test_the_run_context_carries_how_long_a_replayed_workload_runs():
    """Settle spends its error budget over a bounded run shorter than its memory (controllers/settle_replay.py)."""
    config = RunConfig(controller="settle", controller_params={}, workload="step", master="local[2]")
    assert config.context().duration_s == 0.0  # not validated: no workload read yet
    assert config.validate().context().duration_s == 60.0
    shorter = RunConfig(controller="ds2", controller_params={}, workload="step", master="local[2]", duration_s=30)
    assert shorter.validate().context().duration_s == 30.0
