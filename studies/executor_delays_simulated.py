"""What the plant model predicts for the executor-level controllers on the step, by an added executor's provisioning
delay (what a larger cluster would give, docs/multilevel.md).

    python -m studies.executor_delays_simulated [CALIBRATION.yaml]     seconds; no Spark

The plant is the cluster's calibration (default: the store's latest, .local/calibration/oracle.yaml, from
`python -m jobs.calibrate --master spark://...`) with 2 slots; the table is benchmark run 4's as derived today. The
plant models the delay, not an added executor's cold first batch nor cores shared with the driver: on this machine
those are what it misses (docs/multilevel.md).
"""
from dataclasses import replace
import sys
from pathlib import Path

import numpy as np

from controllers import ControlLoop, RunContext, build_controller
from controllers.multilevel import CapacityTable
from simulator.calibration import Calibration
from simulator.plant import simulate
from workloads import Schedule, load_workload

OPS = ("parse", "enrich", "aggregate", "sink")


def main(argv: list[str]) -> None:
    cal = Calibration.from_file(Path(argv[0] if argv else ".local/calibration/oracle.yaml"))
    base = cal.plant(OPS, 2.0, 8)
    table = CapacityTable.from_dict({"operators": list(OPS), "query": "topology:default", "rows": [
        {"rate_eps": 5000, "degrees": {op: 1 for op in OPS}, "executors": 1},
        {"rate_eps": 7993, "degrees": {"parse": 1, "enrich": 2, "aggregate": 2, "sink": 1}, "executors": 2,
         "level": "executors", "delay_s": 12.2}]})
    for delay in (0.0, 2.0, 6.5, 12.0):
        plant = replace(base, executor_delay_s=delay, slots=2)
        out = []
        for name, params in [("scripted", {"initial_executors": 2, "initial_degree": 2}),
                             ("executor-autoscaler", {"max_executors": 2}), ("multilevel", {}),
                             ("multilevel", {"guards": False})]:
            slo, cores = [], []
            for seed in (1, 2, 3):
                spec = load_workload("step").with_overrides(seed=seed)
                c = build_controller(name, params, OPS, 8)
                c.bind(RunContext(trigger_s=2.0, slo_latency_s=5.0, capacity_table=table))
                run = simulate(plant, Schedule(spec), ControlLoop(c), spec.duration_s)
                slo.append(float((run.latencies() <= 5.0).mean()))
                cores.append(run.executor_core_seconds)
            label = name + ("" if params.get("guards", True) else ":guards=false")  # the layer's on by default
            out.append(f"{label}: {np.mean(slo):.1%} {np.mean(cores):.0f} core-s")
        print(f"delay {delay:>4} s | " + " | ".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
