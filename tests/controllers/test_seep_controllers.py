"""The SEEP controllers on the micro-batch interface: readings per sampling period from batches, a policy steering
the plant model, SEEP's built-in detector, and configuration errors before a run."""
import pytest

from controllers import ConfigError, ControlLoop, OperatorMetrics, Snapshot, build_controller
from simulator.plant import OperatorModel, PlantConfig, simulate
from controllers.seep import Sampler
from workloads import Schedule, load_workload

OPS = ("parse", "enrich")


def snap(time_s, *, backlog=0, arrivals=20, interval=2.0, enrich_busy=1.0, enrich_degree=1, selectivity=0.5,
         cpu_cores=None):
    ops = (OperatorMetrics("parse", 1, arrivals, int(arrivals * selectivity), 0.01, 1, 0.01, 0.01),
           OperatorMetrics("enrich", enrich_degree, 10, 10, enrich_busy, enrich_degree, enrich_busy / enrich_degree,
                           enrich_busy / enrich_degree))
    return Snapshot(batch_id=int(time_s), time_s=time_s, trigger_interval_s=2.0, batch_duration_s=1.0,
                    interval_s=interval, arrivals=arrivals, records_read=arrivals, backlog=backlog,
                    latency_p50_s=0.5, latency_p95_s=0.8, latency_p99_s=1.2, operators=ops, max_degree=8,
                    cpu_percent=40.0 + time_s, cpu_cores=cpu_cores)


def test_readings_come_once_per_period_from_the_batches_inside_it():
    sampler = Sampler(OPS, 5.0)
    got = [(t, sampler.add(snap(t, backlog=100, enrich_busy=1.0, enrich_degree=2))) for t in (2, 4, 6, 8, 10, 12)]
    taken = [t for t, r in got if r is not None]
    assert taken == [6, 10]  # the first batch end at or after each multiple of 5 s
    r = got[2][1]
    assert r["parse"]["queue-length"]["sum"] == 100 and r["enrich"]["queue-length"]["sum"] == 50  # x selectivity
    assert r["enrich"]["queue-length"]["mean"] == 25
    assert r["parse"]["input-rate"]["sum"] == pytest.approx(60 / 6)  # 3 batches of 20 over 6 s
    assert r["enrich"]["processed-rate"]["sum"] == pytest.approx(30 / 6)
    assert r["enrich"]["utilisation"]["mean"] == pytest.approx(100 * 3.0 / 6 / 2)  # busy 3 s, 2 tasks, 6 s
    assert r["enrich"]["utilisation"]["max"] == pytest.approx(100 * 1.5 / 6)
    assert r["enrich"]["latency"]["job"] == pytest.approx(1200.0)
    assert r["enrich"]["cpu"]["job"] == pytest.approx(44.0)  # averaged over the period's batches (42, 44, 46)
    assert set(r["enrich"]["queue-length"]) == {"sum", "mean"}, "no per-task queue on Spark: no max to pretend"
    assert got[4][1]["enrich"]["input-rate"]["sum"] == pytest.approx(20 * 0.5 / 2 * 2 / 2)  # batches 8, 10: 4 s
    normalised = Sampler(OPS, 5.0)
    last = [normalised.add(snap(t, cpu_cores=2)) for t in (2, 4, 6)][-1]
    assert last["parse"]["cpu"]["job"] == pytest.approx(22.0)  # 44 % of one core on a 2-core host


def test_utilisation_weighs_each_degree_by_how_long_it_was_in_force():
    sampler = Sampler(OPS, 4.0)
    sampler.add(snap(2.0, enrich_busy=2.0, enrich_degree=1))  # one task busy the whole 2 s
    r = sampler.add(snap(4.0, enrich_busy=2.0, enrich_degree=4))  # four tasks, each busy a quarter of the time
    assert r["enrich"]["utilisation"]["mean"] == pytest.approx(100 * (2.0 + 0.5) / 4.0)


def seep_plant(enrich_service_s=0.1):
    return PlantConfig((OperatorModel("parse", 0.0001), OperatorModel("enrich", enrich_service_s)),
                       trigger_interval_s=2.0, slots=4, batch_overhead_s=0.05, max_degree=8)


def test_t5_policy_on_the_micro_batch_plant_scales_out_once_and_never_back_in():
    """What micro-batching does to T5 (docs/seep.md): readings only at batch ends, so during the congested peak
    they come further apart than the 5-s window and one reading above 100 decides; and a micro-batch queue is never
    empty when sampled — events keep arriving while a batch runs (about lambda x batch time of them) — so "queue
    below 1" never holds."""
    controller = build_controller("seep-policy", {"policy": "seep-t5", "guards": False}, OPS, 8)
    schedule = Schedule(load_workload("seep-periodic").with_overrides(duration_s=150))
    run = simulate(seep_plant(), schedule, ControlLoop(controller), 150)
    changes = [(round(d.time_s), d.before["enrich"], d.after["enrich"]) for d in run.decisions if d.changed]
    # the first reading above 100, at the end of a 5-s batch in the first peak; no scale-in while events arrive
    # (once the schedule has ended and the last batch drained it, the queue is empty and T5 may give the slots back)
    assert [c for c in changes if c[0] < 150] == [(28, 1, 3)]
    backlog_when_sampled = [b.snapshot.backlog for b, d in zip(run.batches, run.decisions)
                            if d.reason != "between samples" and 50 < b.start_s < 140]  # before the schedule ends
    assert min(backlog_when_sampled) >= 1
    assert all(d.before["parse"] == d.after["parse"] == 1 for d in run.decisions)
    sampled = [d for d in run.decisions if d.reason != "between samples"]
    gaps = [b.time_s - a.time_s for a, b in zip(sampled, sampled[1:])]
    assert 4.0 <= sum(gaps) / len(gaps) <= 6.5  # one reading per 5 s period, at batch ends
    assert any("Queue length is above 100 for 5 seconds" in d.reason for d in run.decisions)


def test_an_inline_policy_with_an_unknown_operator_is_a_config_error_with_its_position():
    inline = ("rules:\n  - name: r\n    operator: map\n    action: scale-out\n    by: {absolute: 1}\n"
              "    when: {metric: utilisation, above: 80, for_at_least: 10s}\n")
    with pytest.raises(ConfigError, match=r"seep-policy': policy \(inline\), line 3, column 15: rule 'r': operator: "
                                          r"unknown operator 'map'; expected one of parse, enrich or '\*'"):
        build_controller("seep-policy", {"policy": inline}, OPS, 8)
    with pytest.raises(ConfigError, match="no policy 'seep-t9' in the catalogue; known: seep-cpu, seep-t1"):
        build_controller("seep-policy", {"policy": "seep-t9"}, OPS, 8)
    with pytest.raises(ConfigError, match="parameter 'initial_degrees' names unknown operator\\(s\\) map"):
        build_controller("seep-policy", {"initial_degrees": {"map": 2}}, OPS, 8)


def test_the_detector_adds_one_after_k_consecutive_reports_above_delta():
    c = build_controller("seep-detector", {"guards": False}, OPS, 8)
    degree, log = 1, []
    # 2-s batches, reports at 6, 10, 16, 20, 26, 30 s; enrich's tasks busy 75 % except around the 20 s report
    for t in range(2, 32, 2):
        busy_share = 0.2 if 18 <= t <= 20 else 0.75
        d = c.decide(snap(float(t), enrich_busy=busy_share * 2.0 * degree, enrich_degree=degree))
        if d.degrees["enrich"] != degree:
            log.append((t, degree, d.degrees["enrich"]))
            degree = d.degrees["enrich"]
    # +1 at the second consecutive report above 50 % (10 s); 16 s counts one, 20 s (20 %) resets; 26 and 30 s: +1
    assert log == [(10, 1, 2), (30, 2, 3)]
    assert c.decide(snap(32.0)).degrees["parse"] == 1, "parse is never busy: never scaled"
    cpu = build_controller("seep-detector", {"metric": "cpu", "threshold_percent": 30, "guards": False}, OPS, 8)
    for t in (2, 4, 6, 8, 10):
        last = cpu.decide(snap(float(t), enrich_busy=1.0, cpu_cores=1))
    assert last.degrees == {"parse": 1, "enrich": 2}  # the job's CPU is high: the busiest operator scales


def test_a_policys_identity_is_its_rules_not_how_it_was_named():
    from controllers import config_id, config_label
    from controllers.policy import load_policy
    from controllers.policy.catalogue import CATALOGUE

    by_name = config_id("seep-policy", {"policy": "seep-t5"})
    as_text = config_id("seep-policy", {"policy": (CATALOGUE / "seep-t5.yaml").read_text()})
    as_json = config_id("seep-policy", {"policy": load_policy("seep-t5").to_dict()})
    assert by_name == as_text == as_json
    assert by_name != config_id("seep-policy", {"policy": "seep-t5-microbatch"})
    assert config_label("seep-policy", {"policy": "seep-t5"}) == "seep-policy"  # the default keeps a short label
