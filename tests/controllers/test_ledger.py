"""The decision ledger, on hand-made decisions and batches whose figures are known, and on DS2 and the oracle."""
import math

import pytest

from controllers.ledger import LEDGER_COLUMNS, ledger_rows, ledger_summary
from controllers.loop import DecisionRecord


def _batch(batch_id, arrivals=200, interval_s=1.0, records_read=200, batch_duration_s=0.5, backlog=0):
    return {"batch_id": batch_id, "arrivals": arrivals, "interval_s": interval_s, "records_read": records_read,
            "batch_duration_s": batch_duration_s, "backlog": backlog}


def _decision(batch_id, before, after, details=None, executors=None, executors_before=None):
    return DecisionRecord(batch_id, float(batch_id), dict(before), dict(after), True, "because", executors,
                          executors_before, None, dict(details or {}))


def test_a_prediction_is_set_against_the_window_after_the_action():
    details = {"predicted.arrival_eps": 250.0, "predicted.records": 500.0, "predicted.batch_s": 0.5,
               "predicted.vector": "a=2"}
    decisions = [_decision(0, {"a": 1}, {"a": 1}), _decision(1, {"a": 1}, {"a": 2}, details)]
    # in force from batch 2: batches 2-4 (batch 5 is beyond the window of 3)
    batches = [_batch(0), _batch(1)] + [_batch(b, arrivals=200, records_read=200, batch_duration_s=0.8)
                                        for b in (2, 3, 4)] + [_batch(5, batch_duration_s=9.0)]
    [row] = ledger_rows(decisions, batches, window_batches=3)
    assert set(row) == set(LEDGER_COLUMNS)
    assert (row["batch_id"], row["before"], row["after"], row["direction"]) == (1, "a=1", "a=2", "up")
    assert row["window_batches"] == 3
    assert row["realised_arrival_eps"] == pytest.approx(200.0)
    assert row["realised_batch_s"] == pytest.approx(0.8)
    assert row["realised_capacity_eps"] == pytest.approx(250.0)  # 600 events in 2.4 s of batches
    assert row["predicted_capacity_eps"] == pytest.approx(1000.0)
    assert row["arrival_error"] == pytest.approx(0.25)   # expected 250, came 200
    assert row["batch_error"] == pytest.approx(0.5 / 0.8 - 1)
    assert row["capacity_error"] == pytest.approx(3.0)   # predicted four times the capacity seen
    assert row["kept_up"] is True


def test_the_window_stops_at_the_next_action_and_a_vector_the_guards_changed_is_not_judged():
    proposed = {"predicted.arrival_eps": 100.0, "predicted.records": 100.0, "predicted.batch_s": 0.2,
                "predicted.vector": "a=4"}
    decisions = [_decision(0, {"a": 1}, {"a": 3}, proposed), _decision(1, {"a": 3}, {"a": 2})]
    batches = [_batch(0), _batch(1, arrivals=300, records_read=100, batch_duration_s=2.0),
               _batch(2, arrivals=300, records_read=100, batch_duration_s=2.0)]
    first, second = ledger_rows(decisions, batches, window_batches=5)
    assert first["window_batches"] == 1  # batch 1 only: from batch 2 the next action's vector is in force
    assert first["prediction_for_applied_vector"] is False
    assert first["predicted_batch_s"] is None and first["capacity_error"] is None
    assert first["arrival_error"] == pytest.approx(100 / 300 - 1)  # the rate is judged whatever the vector
    assert first["kept_up"] is False  # 50 ev/s of capacity against 300 arriving
    assert second["direction"] == "down" and second["window_batches"] == 1
    summary = ledger_summary([first, second])
    assert summary["ledger_actions"] == 2 and summary["ledger_predicted_actions"] == 1
    assert summary["ledger_fell_behind_share"] == 1.0
    assert summary["ledger_arrival_error_median_abs"] == pytest.approx(2 / 3)
    assert summary["ledger_capacity_error_median_abs"] is None


def test_executor_changes_are_actions_and_an_action_at_the_last_batch_has_an_empty_window():
    decisions = [_decision(0, {"a": 2}, {"a": 2}, executors=3, executors_before=1)]
    [row] = ledger_rows(decisions, [_batch(0)])
    assert row["direction"] == "executors up" and row["window_batches"] == 0
    assert row["realised_arrival_eps"] is None and row["kept_up"] is None
    assert ledger_summary([])["ledger_actions"] == 0 and ledger_rows([], []) == []
    with pytest.raises(ValueError, match="window_batches"):
        ledger_rows(decisions, [], window_batches=0)


def test_ds2_and_the_oracle_say_what_they_predict():
    from controllers import build_controller
    from controllers.types import OperatorMetrics, RunContext, Snapshot

    ops = ("parse", "sink")

    def snapshot(batch_id, rate, degrees):
        metrics = tuple(OperatorMetrics(op, degrees[op], rate, rate, rate * 0.001, degrees[op],
                                        rate * 0.001 / degrees[op], rate * 0.001 / degrees[op]) for op in ops)
        return Snapshot(batch_id, batch_id + 1.0, 1.0, 0.3 + sum(m.span_s for m in metrics), 1.0, rate, rate, 0,
                        None, None, None, metrics, 8)

    ds2 = build_controller("ds2", {"guards": False, "min_records": 1}, ops, max_degree=8)
    ds2.bind(RunContext(trigger_s=1.0, slo_latency_s=5.0))
    decision = ds2.decide(snapshot(0, 1500, {"parse": 1, "sink": 1}))
    d = decision.details
    assert d["predicted.arrival_eps"] == pytest.approx(1500.0)
    assert d["predicted.records"] >= 1500.0 and 0 < d["predicted.batch_s"] < 3
    assert d["predicted.vector"] == ",".join(f"{op}={p}" for op, p in decision.degrees.items())

    class Arrivals:  # 1000 events per second, evenly
        def count_due(self, t_us):
            return max(0, int(t_us // 1000))

        def arrival_us(self, first, stop):
            return [i * 1000 for i in range(first, stop)]

    oracle = build_controller("oracle", {"service_s": {"parse": 1e-4, "sink": 1e-4}}, ops, max_degree=8)
    oracle.bind(RunContext(trigger_s=1.0, slo_latency_s=5.0, schedule=Arrivals()))
    d = oracle.decide(snapshot(0, 1000, {"parse": 1, "sink": 1})).details
    assert d["predicted.arrival_eps"] == pytest.approx(1000.0)
    assert d["predicted.batch_s"] == d["predicted_s"] and not math.isnan(d["predicted.records"])
