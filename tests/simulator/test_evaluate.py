"""simulate_configuration: the plant's figures for one configuration, with what a Spark run hands its controller."""
from __future__ import annotations

from controllers.forecast import Forecast
from simulator.evaluate import simulate_configuration
from studies.guards_simulated import PLANT
from workloads import Schedule, parse_workload

STEADY = Schedule(parse_workload({"name": "steady", "profile": "constant", "params": {"rate": 1500},
                                  "duration_s": 60, "seed": 1}, source="test"))


class Alarmist:
    """A load predictor that always foresees ten times what came, rising; counts its calls."""

    name = "alarmist"

    def __init__(self):
        self.calls = 0

    def forecast(self, times_s, counts, intervals_s, period_s, last_n) -> Forecast:
        self.calls += 1
        rate = counts[-1] / intervals_s[-1] if counts else 0.0
        return Forecast(10 * rate * period_s, 1.0, self.name)


def test_autoscale_forecasts_with_the_predictor_handed_over_as_a_spark_run_hands_a_registered_one():
    alarmist = Alarmist()
    # the paper's AUTOSCALE: the guard layer's band would hold the alarmist's scale-outs on a load the vector carries
    own = simulate_configuration("autoscale", {"guards": False}, STEADY, PLANT, slo_latency_s=5.0)
    handed = simulate_configuration("autoscale", {"guards": False}, STEADY, PLANT, slo_latency_s=5.0,
                                    predictor=alarmist)
    assert alarmist.calls > 0
    # the paper's OLS sees a steady load it can carry; the alarmist's forecasts drive scale-outs
    assert handed.scaling_actions > own.scaling_actions and handed.cost_slot_seconds > own.cost_slot_seconds
