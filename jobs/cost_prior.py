"""The run's calibration as its controllers' prior: what the job's operators cost before any batch has been measured.

A controller that sizes a batch from the batches before it (the guards' burst sizing) has nothing to size the run's
first batch with, and a replayed trace that opens on a burst reads it at degree 1: on the held-out Azure LLM code
trace the first batch read 30,000-35,000 events at degree 1, took about 6 s, and every event of it and of the next
batch was late (docs/bursty.md). `python -m jobs.calibrate` has measured those costs on this machine and master (the
oracle plans with them); handed over as `RunContext.cost_prior` they size that first batch. Only a calibration of
the same master and of the same operators counts: costs of another machine or another query would size wrongly with
confidence, which is worse than sizing late.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from controllers.cost_model import CostPrior, calibrated_models
from jobs.floor import this_masters_calibration
from jobs.topology import DEFAULT_TOPOLOGY, Topology


def operator_costs(topology: Topology) -> list[dict[str, Any]]:
    """What a calibration's costs depend on in a topology: its operators and their declared costs (not the payload
    format, which a run sets from its workload), as jobs.calibrate records it under `calibration.measured`."""
    return [{"name": op.name, "kind": op.kind, "cpu_us": float(op.cpu_us), "wait_us": float(op.wait_us)}
            for op in topology.operators]


def calibrated_prior(master: str | None, topology: Topology | None, path: Path | None = None) -> CostPrior | None:
    """This master's calibration (jobs.floor.this_masters_calibration) as a CostPrior, when it was measured for
    `topology`'s operators (a calibration that does not record them was measured on the default topology); None
    when there is none, it is unreadable, or it was measured for another master or query."""
    found = None if topology is None else this_masters_calibration(master, path)
    if found is None:
        return None
    params, measured, path, when = found
    if measured.get("topology", operator_costs(DEFAULT_TOPOLOGY)) != operator_costs(topology):
        return None
    try:
        models, overhead = calibrated_models(params, topology.names), float(params["batch_overhead_s"])
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    return CostPrior(models, overhead, source=f"calibration run {params.get('calibration_run') or '?'} on "
                                             f"{measured['master']} at {when} ({path})")
