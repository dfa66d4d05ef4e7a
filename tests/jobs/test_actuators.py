"""The actuator contract in the control loop: each accepted decision goes to every actuator in order, each outcome
is recorded with the decision, unavailable actuators are said once, and a rejected decision reaches none."""
from controllers import ControlLoop, Decision, Outcome, Unavailable, build_controller
from controllers.base import Controller
from jobs.actuators.degrees import DegreeActuator
from simulator.plant import ConstantArrivals, chain, simulate

OPS = ("parse", "enrich", "aggregate", "sink")


class Recording:
    """A test actuator: records the decisions it is handed."""
    name = "recording"

    def __init__(self):
        self.seen = []

    def apply(self, record):
        self.seen.append(record.batch_id)
        return Outcome(self.name, "applied", record.executors, record.time_s, note="seen")

    def describe(self):
        return {"actuator": self.name, "available": True}


class Scripted(Controller):
    """Asks for enrich=3 after batch 1, an impossible degree after batch 3, nothing else."""
    name = "test-scripted"
    summary = "test"

    def initial_degrees(self):
        return {op: 1 for op in self.operators}

    def decide(self, snapshot):
        degrees = snapshot.degrees
        if snapshot.batch_id == 1:
            degrees["enrich"] = 3
        if snapshot.batch_id == 3:
            degrees["enrich"] = 99
        return Decision(degrees, f"after {snapshot.batch_id}", details={"seen": float(snapshot.batch_id)})


def test_decisions_reach_the_actuators_with_their_details_and_take_effect_when_the_next_batch_starts():
    controller = Scripted({}, OPS, 8)
    degrees, recording = DegreeActuator(controller.initial_degrees()), Recording()
    loop = ControlLoop(controller, [degrees, recording, Unavailable("executors", "local master")])
    config = chain([(op, 1e-5) for op in OPS], trigger_interval_s=1.0)
    run = simulate(config, ConstantArrivals(1000, 6), loop, 6)
    log = run.decisions
    assert recording.seen == [r.batch_id for r in log if r.accepted], "accepted decisions only, each once"
    change = log[1]
    assert change.outcome("degrees").requested == {"enrich": [1, 3]}
    assert change.outcome("degrees").effective_s is None, "not in force until a batch starts with it"
    assert degrees.batch_started(change.time_s + 0.5) == {"parse": 1, "enrich": 3, "aggregate": 1, "sink": 1}
    assert change.outcome("degrees").effective_s == change.time_s + 0.5
    assert log[0].outcome("degrees") is None, "nothing changed: the degree actuator has nothing to do"
    rejected = log[3]
    assert not rejected.accepted and rejected.outcomes == [] and rejected.requested["degrees"]["enrich"] == 99
    assert rejected.to_dict()["details"] == {"seen": 3.0}, "details are kept, even for a rejected decision"
    assert log[1].to_dict()["outcomes"][0]["actuator"] == "degrees"
    assert [o["actuator"] for o in log[1].to_dict()["outcomes"]] == ["degrees", "recording"]
    assert Unavailable("executors", "local master").describe() == {
        "actuator": "executors", "available": False, "reason": "local master"}


def test_the_oracle_gets_the_schedule_through_bind_not_attribute_probing():
    import pytest

    from controllers.types import RunContext

    oracle = build_controller("oracle", {"service_s": {op: 1e-5 for op in OPS}}, OPS, 8)
    with pytest.raises(RuntimeError, match="bind a RunContext"):
        oracle.plan(1.0, 0, 1.0)
    oracle.bind(RunContext(trigger_s=1.0, slo_latency_s=2.0, schedule=ConstantArrivals(1000, 6)))
    assert oracle.slo_latency_s == 2.0 and oracle.plan(1.0, 0, 1.0)[2]
