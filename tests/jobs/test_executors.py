"""Process and host levels without Spark: the ledger that pairs executor decisions with what Spark recorded, the
controllers that decide executors (scripted) or leave them to Spark (dynamic allocation), the cost integral, the
host actuator on a stand-in cluster, and the refusal of executor-level controllers on a local master."""
import time

import pandas as pd
import pytest

import controllers
from controllers.base import ConfigError
from controllers.loop import ControlLoop
from controllers.types import OperatorMetrics, Snapshot
from jobs.config import InputError, RunConfig
from jobs.actuators.executors import ExecutorLedger, ExecutorView, spark_time
from jobs.actuators.hosts import HostActuator
from jobs.spark_session import controller_spark_settings
from jobs.recording.summary import _executor_core_seconds

OPS = ("parse", "enrich", "aggregate", "sink")


def view(id, add, remove=None, tasks=0, cores=1):
    return ExecutorView(id, add, remove, remove is None, cores, tasks)


def snapshot(batch_id, degrees=None, executors=None):
    degrees = degrees or {op: 1 for op in OPS}
    ops = tuple(OperatorMetrics(op, d, 10, 10, 0.1, d, 0.1, 0.1) for op, d in degrees.items())
    return Snapshot(batch_id, 2.0 * batch_id, 2.0, 1.0, 2.0, 10, 10, 0, 1.0, 1.0, 1.0, ops, 8, executors=executors)


def test_spark_rest_timestamps_are_read_as_utc_epoch_seconds():
    assert spark_time("1970-01-01T00:00:01.500GMT") == 1.5
    assert spark_time(None) is None
    raw = {"id": "3", "isActive": False, "addTime": "1970-01-01T00:00:10.000GMT",
           "removeTime": "1970-01-01T00:00:20.250GMT", "totalCores": 1, "totalTasks": 4, "activeTasks": 0}
    v = ExecutorView.from_rest(raw)
    assert (v.id, v.add_time_s, v.remove_time_s, v.active, v.total_tasks) == ("3", 10.0, 20.25, False, 4)


def test_a_scale_out_is_complete_when_its_executors_registered_and_ran_a_task():
    ledger = ExecutorLedger()
    ledger.observe([view("0", 0.0, tasks=5)], now_s=1.0)
    change = ledger.decided(batch_id=3, decided_s=10.0, before=1, target=3)
    ledger.observe([view("0", 0.0, tasks=9), view("1", 11.5)], now_s=12.0)
    assert change.executors == ["1"] and not change.complete and ledger.pending()
    ledger.observe([view("0", 0.0, tasks=9), view("1", 11.5, tasks=1), view("2", 12.5)], now_s=13.0)
    assert change.registered_s == 12.5 and change.first_task_s is None, "both registered, one has not run a task"
    ledger.observe([view("0", 0.0), view("1", 11.5, tasks=2), view("2", 12.5, tasks=1)], now_s=14.25)
    assert change.complete and change.first_task_s == 14.25
    s = ledger.summary()
    assert s["executor_changes"] == 1 and s["executor_changes_incomplete"] == 0
    assert s["executor_provisioning_delay_s_mean"] == 2.5 and s["executor_first_task_delay_s_max"] == 4.25
    assert s["executor_release_delay_s_mean"] is None


def test_a_scale_in_is_complete_when_its_executors_are_removed_and_executors_are_not_claimed_twice():
    ledger = ExecutorLedger()
    ledger.started_s = 5.0
    out = ledger.decided(1, 10.0, 1, 3)
    ledger.observe([view("0", 0.0, tasks=1), view("1", 11.0, tasks=1), view("2", 12.0, tasks=1)], now_s=12.5)
    assert out.complete and out.executors == ["1", "2"]
    back = ledger.decided(6, 20.0, 3, 1)
    ledger.observe([view("0", 0.0, tasks=1), view("1", 11.0, 21.0, tasks=1), view("2", 12.0, tasks=1)], now_s=21.5)
    assert back.executors == ["1"] and not back.complete
    ledger.observe([view("0", 0.0, tasks=1), view("1", 11.0, 21.0, tasks=1), view("2", 12.0, 22.5, tasks=1)], 23.0)
    assert back.complete and back.released_s == 22.5
    s = ledger.summary()
    assert s["executor_changes"] == 2 and s["executor_release_delay_s_max"] == 2.5
    assert s["executors_added"] == 2 and s["executors_removed"] == 2, "executor 0 predates the measured run"
    assert [c.to_dict()["direction"] for c in ledger.changes] == ["out", "in"]


def test_an_executor_that_never_comes_leaves_the_change_incomplete_and_unmeasured():
    ledger = ExecutorLedger()
    ledger.observe([view("0", 0.0, tasks=1)], 1.0)
    ledger.decided(2, 10.0, 1, 2)
    ledger.observe([view("0", 0.0, tasks=3)], 30.0)
    s = ledger.summary()
    assert s["executor_changes_incomplete"] == 1 and s["executor_provisioning_delay_s_mean"] is None


class StandInDriver:
    """What ExecutorActuator calls on Spark's driver (request a total, kill one executor), recorded; the executors
    it reports are set by the test (read_executors is patched to return them)."""

    def __init__(self):
        self.calls: list[tuple] = []
        self._jsc = self
        self._jvm = self
        self.PythonUtils = self
        self.java = self
        self.util = self

    def sc(self):
        return self

    def HashMap(self):
        return {}

    def toScalaMap(self, m):
        return m

    def requestTotalExecutors(self, n, locality, hosts):
        self.calls.append(("total", n))
        return True

    def killExecutor(self, executor_id):
        self.calls.append(("kill", executor_id))
        return True


def test_an_executor_above_the_target_that_no_change_explains_is_killed_newest_first(monkeypatch):
    """The standalone master's first grant can register an executor after the start-up count looked settled (CI:
    two executors in every batch of a run whose controller asked for one). The actuator kills it when it sees it;
    an executor above the target during a pending scale-in (killed, not yet removed) is left alone."""
    from jobs.actuators import executors as module

    seen: list[ExecutorView] = [view("0", 0.0)]
    monkeypatch.setattr(module, "read_executors", lambda sc: list(seen))
    driver = StandInDriver()
    actuator = module.ExecutorActuator(driver)
    actuator.set_total(1, record=False)
    assert driver.calls == [("total", 1)]
    seen.append(view("1", 3.0))  # the late one from the first grant
    assert [v.id for v in actuator.observe()] == ["0", "1"]
    assert driver.calls[1:] == [("kill", "1"), ("total", 1)]
    actuator.observe()  # Spark still lists it as active until it is gone: not killed (nor counted) twice
    assert driver.calls[1:] == [("kill", "1"), ("total", 1)]
    assert actuator.ledger.summary()["executors_killed_unasked"] == 1
    seen[1] = view("1", 3.0, remove=4.0)
    try:
        actuator.set_total(2)  # a scale-out, complete (registered, ran a task), then a scale-in
        seen.append(view("2", time.time() + 1.0, tasks=1))
        actuator.observe()
        assert not actuator.ledger.pending()
        actuator.set_total(1)
        assert ("kill", "2") in driver.calls
        del driver.calls[:]
        assert len(actuator.observe()) == 2 and actuator.ledger.pending(), "killed, not yet removed"
        assert driver.calls == [] and actuator.ledger.summary()["executors_killed_unasked"] == 1
    finally:
        actuator.close()  # its poller reads the stand-in's executors while a change is pending


def test_scripted_executor_counts_reach_the_loop_and_the_decision_log():
    c = controllers.build_controller("scripted", {"initial_executors": 1, "executor_changes": {2: 3, 5: 1}}, OPS, 8)
    assert c.initial_executors() == 1 and c.needs_cluster()
    loop = ControlLoop(c)
    seen = []
    for b in range(7):
        loop.step(snapshot(b))
        seen.append(loop.executors)
    assert seen == [1, 1, 3, 3, 3, 1, 1]
    changed = [r for r in loop.log if r.executors_changed]
    assert [(r.batch_id, r.executors_before, r.executors) for r in changed] == [(2, 1, 3), (5, 3, 1)]
    assert not any(r.changed for r in loop.log), "executor changes are not degree changes"
    assert "executors=3" in loop.log[2].reason


@pytest.mark.parametrize("params, message", [
    ({"executor_changes": {2: 3}}, "need initial_executors >= 1"),
    ({"initial_executors": 1, "executor_changes": {2: 0}}, "positive integer"),
    ({"initial_executors": 1, "executor_changes": {"x": 2}}, "batch ids must be integers"),
    ({"initial_executors": -1}, "must be >= 0"),
])
def test_scripted_rejects_bad_executor_plans(params, message):
    with pytest.raises(ConfigError, match=message):
        controllers.build_controller("scripted", params, OPS, 8)


def test_an_executor_count_from_a_controller_that_leaves_executors_to_spark_is_rejected():
    class Rogue(controllers.Controller):
        name = "rogue-executors"
        summary = "test"

        def initial_degrees(self):
            return {op: 1 for op in self.operators}

        def decide(self, snapshot):
            return controllers.Decision(snapshot.degrees, "more executors", executors=4)

    loop = ControlLoop(Rogue({}, OPS, 8))
    loop.step(snapshot(0))
    assert not loop.log[0].accepted and "leaves the executors to Spark" in loop.log[0].reason
    assert loop.executors is None


def test_spark_dynamic_allocation_is_configured_not_decided():
    c = controllers.build_controller("spark-dynamic-allocation", {"max_executors": 3}, OPS, 6)
    assert c.initial_degrees() == {op: 6 for op in OPS}, "degree 0 means Spark's shuffle partitions (max_degree)"
    assert c.initial_executors() is None and c.needs_cluster()
    settings = c.spark_settings()
    assert settings["spark.dynamicAllocation.enabled"] == "true"
    assert settings["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert settings["spark.dynamicAllocation.maxExecutors"] == "3"
    assert settings["spark.dynamicAllocation.executorIdleTimeout"] == "60s"
    assert settings["spark.dynamicAllocation.shuffleTracking.timeout"] == "30s"
    decision = c.decide(snapshot(0, {op: 6 for op in OPS}))
    assert decision.degrees == {op: 6 for op in OPS} and decision.executors is None
    assert controller_spark_settings(c) == settings
    with pytest.raises(ConfigError, match="min_executors <= initial_executors <= max_executors"):
        controllers.build_controller("spark-dynamic-allocation", {"initial_executors": 5, "max_executors": 3}, OPS, 8)


def test_a_controller_that_sets_executors_gets_one_core_executors_and_no_dynamic_allocation():
    c = controllers.build_controller("scripted", {"initial_executors": 2}, OPS, 8)
    assert controller_spark_settings(c) == {"spark.executor.cores": "1", "spark.dynamicAllocation.enabled": "false"}
    assert controller_spark_settings(controllers.build_controller("static", {}, OPS, 8)) == {}
    assert not controllers.build_controller("static", {}, OPS, 8).needs_cluster()


@pytest.mark.parametrize("name, params", [("scripted", {"initial_executors": 1}), ("spark-dynamic-allocation", {})])
def test_executor_level_controllers_are_refused_on_a_local_master_before_spark_starts(name, params):
    config = RunConfig(controller=name, controller_params=params, workload="step", master="local[2]")
    with pytest.raises(InputError, match="needs a cluster master"):
        config.validate()


def test_host_scaling_needs_a_controller_that_sets_executors_and_a_started_cluster(tmp_path):
    config = RunConfig(controller="static", controller_params={}, workload="step", master="spark://127.0.0.1:1",
                       host_scaling=True)
    with pytest.raises(InputError, match="does not manage executors"):
        config.validate()
    config = RunConfig(controller="scripted", controller_params={"initial_executors": 1}, workload="step",
                       master="spark://127.0.0.1:1", host_scaling=True, cluster_state=str(tmp_path))
    with pytest.raises(InputError, match="no standalone cluster started by this project"):
        config.validate()


def test_executor_core_seconds_integrate_the_cores_spark_had_per_batch():
    batches = pd.DataFrame({"executor_cores": [1, 3, 3, 1], "interval_in_force_s": [2.0, 2.0, 1.0, 2.0]})
    assert _executor_core_seconds(batches, 4, 100.0) == 1 * 2 + 3 * 2 + 3 * 1 + 1 * 2
    assert _executor_core_seconds(pd.DataFrame({"interval_in_force_s": [2.0]}), 4, 10.0) == 40.0, \
        "without executor observations (local master): the fixed cores x wall time"


class FakeCluster:
    """Stands in for deploy.spark_cluster.StandaloneCluster: workers of one core, their use set by the test."""
    worker_cores = 1

    def __init__(self, base_free=0):
        self.base_free = base_free
        self.used: dict[str, int] = {}
        self.removed: list[str] = []

    def free_cores(self):
        return self.base_free + sum(1 - u for u in self.used.values())

    def add_worker(self):
        name = f"worker-{len(self.used) + len(self.removed) + 3}"
        self.used[name] = 0
        return name, 0.01

    def worker(self, name):
        return {"coresused": self.used[name]} if name in self.used else None

    def remove_worker(self, name):
        del self.used[name]
        self.removed.append(name)


def test_hosts_are_added_for_missing_cores_only_and_only_idle_added_hosts_are_released():
    cluster = FakeCluster(base_free=1)
    hosts = HostActuator(cluster, provisioning_delay_s=0.0, log=lambda line: None)
    assert hosts.grow_for(1, free_cores=1) == 0, "a free core is enough"
    assert hosts.grow_for(3, free_cores=1) == 2
    for thread in hosts._threads:
        thread.join()
    assert sorted(hosts.added) == ["worker-3", "worker-4"]
    cluster.used["worker-3"] = 1  # runs an executor
    assert hosts.release_idle() == ["worker-4"]
    assert hosts.added == ["worker-3"]
    hosts.close()
    assert cluster.removed == ["worker-4", "worker-3"] and not cluster.used
    s = hosts.summary()
    assert s["hosts_added"] == 2 and s["hosts_removed"] == 2 and s["host_add_failures"] == 0
    assert s["host_provisioning_delay_s_max"] is not None and s["host_provisioning_delay_s_max"] < 5


def test_the_host_actuator_follows_a_decisions_executor_target_and_says_when_its_workers_joined():
    from types import SimpleNamespace

    from controllers.loop import DecisionRecord

    executors = SimpleNamespace(target=1, last_active=[object()], ledger=SimpleNamespace(pending=lambda: False))
    hosts = HostActuator(FakeCluster(base_free=0), provisioning_delay_s=0.0, log=lambda line: None,
                         executors=executors)
    hosts.anchor_s = 1000.0
    record = DecisionRecord(2, 6.0, {}, {}, True, "scale out", executors=3, executors_before=1)
    outcome = hosts.apply(record)
    assert outcome.requested == {"add_workers": 2} and outcome.requested_s == 6.0
    for thread in hosts._threads:
        thread.join()
    hosts.settle()
    assert outcome.effective_s is not None and outcome.measured == {"workers": ["worker-3", "worker-4"]}
    executors.target = 3
    hosts.cluster.used.update({"worker-3": 1, "worker-4": 1})  # the new executors run there
    assert hosts.apply(DecisionRecord(3, 8.0, {}, {}, True, "hold", executors=3, executors_before=3)) is None
    hosts.cluster.used["worker-4"] = 0  # its executor was removed: the idle worker this run added goes
    released = hosts.apply(DecisionRecord(4, 9.0, {}, {}, True, "hold", executors=3, executors_before=3))
    assert released.requested == {"remove_workers": ["worker-4"]}
    hosts.close()
