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

import datetime as dt
import os
from pathlib import Path
from typing import Any, Mapping

import yaml

from controllers.cost_model import CostPrior, OperatorModel
from jobs.floor import CALIBRATION, CALIBRATION_ENV
from jobs.topology import DEFAULT_TOPOLOGY, Topology


def operator_costs(topology: Topology) -> list[dict[str, Any]]:
    """What a calibration's costs depend on in a topology: its operators and their declared costs (not the payload
    format, which a run sets from its workload), as jobs.calibrate records it under `calibration.measured`."""
    return [{"name": op.name, "kind": op.kind, "cpu_us": float(op.cpu_us), "wait_us": float(op.wait_us)}
            for op in topology.operators]


def calibrated_prior(master: str | None, topology: Topology | None, path: Path | None = None) -> CostPrior | None:
    """The calibration at `path` ($ELASTIC_CALIBRATION, else jobs.calibrate's default file) as a CostPrior, when it
    was measured on `master` for `topology`'s operators (a calibration that does not record them was measured on the
    default topology); None when there is none, it is unreadable, or it was measured for another master or query."""
    if topology is None:
        return None
    path = Path(path or os.environ.get(CALIBRATION_ENV) or CALIBRATION)
    try:
        raw: Any = yaml.safe_load(path.read_text())
        params: Mapping[str, Any] = raw["params"]
        measured: Mapping[str, Any] = (raw.get("calibration") or {}).get("measured") or {}
        where = str(measured.get("master") or "").strip()
        calibrated_ops = measured.get("topology", operator_costs(DEFAULT_TOPOLOGY))
        if not where or where != (master or "").strip() or calibrated_ops != operator_costs(topology):
            return None
        service, selectivity, keyed = params["service_s"], params.get("selectivity") or {}, params.get("keyed") or {}
        models = tuple(OperatorModel(op.name, float(service[op.name]), float(selectivity.get(op.name, 1.0)),
                                     float(params.get("task_overhead_s", 0.0)), float(params.get("task_launch_s", 0.0)),
                                     bool(keyed.get(op.name, op.keyed))) for op in topology.operators)
        overhead = float(params["batch_overhead_s"])
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError, AttributeError):
        return None
    at = measured.get("at")
    when = (dt.datetime.fromtimestamp(float(at), dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            if isinstance(at, (int, float)) else "an unknown time")
    run = params.get("calibration_run") or "?"
    return CostPrior(models, overhead, source=f"calibration run {run} on {where} at {when} ({path})")
