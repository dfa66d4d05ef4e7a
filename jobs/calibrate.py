"""Measure the job's costs for the oracle: one short static run on a rising load, then a fit per operator.

    python -m jobs.calibrate --master local[4]            # writes .local/calibration/oracle.yaml and prints a variant

The oracle (controllers/oracle.py) plans with each operator's busy seconds per record, its selectivity, the fixed
cost of a task and of a batch. They depend on the machine, the master and the topology, so they are measured on
the same setup as the runs they bound, recorded as an MLflow run (tag kind=calibration, the fitted values as params
and `calibration/oracle.yaml`), and passed to the oracle as parameters, so every oracle run names its calibration.

The fit: over the calibration's batches, an operator's busy time is records_in × service + tasks × task overhead
(least squares; the load rises through the run so the two separate); selectivity = records out / records in; the
batch time outside the operators' spans is a + b x the stages the batch ran beyond the fewest: b the stage overhead
(least squares), a the batch overhead (the median of what b leaves). The degree sweep alternates every operator at
one degree (chained: the fewest stages) with vectors where neighbours differ (a stage each), or b would not show.

The noise (what the simulator draws around those costs, so screening sees runs vary as Spark's do): the log-scale
standard deviation of the batch overhead over the batches, and per operator that of measured ÷ modelled span.
The first batch is left out of both (it pays Spark's one-time start: JIT, Python workers, first shuffle); they are
written under the YAML's `calibration:` section (with where and when it was measured), not among the oracle's
parameters (the oracle plans on the medians; jobs.run reads the same file and leaves the section to the simulator).
So is the change slowdown: how much longer a batch runs right after its degrees changed (fit_change_slowdown; the
sweep changes the vector every third batch, so a third of the batches show it).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from controllers.cost_model import OperatorModel, extra_stages
from jobs.config import InputError, RunConfig
from jobs.cost_prior import operator_costs
from jobs.floor import CALIBRATION

DEFAULT_OUT = CALIBRATION  # .local/calibration/oracle.yaml, where jobs.run looks for the latency floor


def batch_extra_stages(batches: pd.DataFrame, operators: Sequence[str], keyed: Mapping[str, bool],
                       chaining: bool = True) -> np.ndarray:
    """Per batch, the stages its degree vector ran beyond the fewest (controllers.cost_model.extra_stages); zeros
    when the batches do not record their degrees."""
    if any(f"degree_{op}" not in batches for op in operators):
        return np.zeros(len(batches))
    models = [OperatorModel(op, 0.0, keyed=bool(keyed.get(op))) for op in operators]
    return np.array([extra_stages(models, {op: int(row[f"degree_{op}"]) for op in operators}, chaining)
                     for _, row in batches.iterrows()], dtype=float)


def fit_overheads(residual: np.ndarray, extra: np.ndarray) -> tuple[float, float]:
    """(batch overhead, stage overhead): the batch time outside the operators' spans as a + b x extra stages.
    b by least squares when the batches ran with different numbers of stages (else 0: it cannot be seen), never
    below 0; a as the median of what b leaves (a median: one slow batch must not move the floor)."""
    stage = 0.0
    if len(np.unique(extra)) > 1:
        X = np.column_stack([np.ones_like(extra), extra])
        (_, stage), *_ = np.linalg.lstsq(X, residual, rcond=None)
        stage = max(0.0, float(stage))
    return float(np.median(np.maximum(0.0, residual - stage * extra))), stage


def fit_costs(batches: pd.DataFrame, operators: Sequence[str], slots: int = 4,
              keyed: Mapping[str, bool] | None = None, chaining: bool = True) -> dict[str, Any]:
    service, selectivity, task_overheads = {}, {}, []
    for op in operators:
        rows = batches[batches[f"records_in_{op}"] > 0]
        if len(rows) < 3:
            raise ValueError(f"calibration: operator {op} processed records in only {len(rows)} batches")
        X = np.column_stack([rows[f"records_in_{op}"], rows[f"tasks_{op}"]]).astype(float)
        (per_record, per_task), *_ = np.linalg.lstsq(X, rows[f"busy_s_{op}"].to_numpy(float), rcond=None)
        if per_record <= 0:  # no measurable per-record cost: attribute everything to records
            per_record, per_task = float(rows[f"busy_s_{op}"].sum() / rows[f"records_in_{op}"].sum()), 0.0
        service[op] = float(per_record)
        task_overheads.append(max(0.0, float(per_task)))
        selectivity[op] = float(rows[f"records_out_{op}"].sum() / rows[f"records_in_{op}"].sum())
    spans = batches[[f"span_s_{op}" for op in operators]].sum(axis=1)
    keyed = dict(keyed or {})
    overhead, stage = fit_overheads((batches["batch_duration_s"] - spans).to_numpy(float),
                                    batch_extra_stages(batches, operators, keyed, chaining))
    costs = {"service_s": service, "selectivity": selectivity, "task_overhead_s": float(np.median(task_overheads)),
             "batch_overhead_s": overhead}
    return {**costs, "task_launch_s": fit_launch(batches, operators, costs, slots), "stage_overhead_s": stage,
            "keyed": {op: bool(keyed.get(op)) for op in operators}}


def fit_launch(batches: pd.DataFrame, operators: Sequence[str], costs: dict[str, Any], slots: int) -> float:
    """Stage time per task outside the tasks' busy time (controllers/cost_model.py): per operator, what its span
    has beyond waves x (work per task + task overhead), regressed on the tasks after the first through the origin;
    the median over the operators, never below 0. 0 when the batches ran at one degree (not identifiable then)."""
    if f"tasks_{operators[0]}" not in batches or batches[f"tasks_{operators[0]}"].nunique() < 2:
        return 0.0
    fits = []
    for op in operators:
        rows = batches[batches[f"records_in_{op}"] > 0]
        degree = rows[f"tasks_{op}"].to_numpy(float)
        waves = np.ceil(degree / slots)
        work = rows[f"records_in_{op}"].to_numpy(float) * costs["service_s"][op] / degree + costs["task_overhead_s"]
        beyond = rows[f"span_s_{op}"].to_numpy(float) - waves * work
        later = degree - 1  # the first task's launch is within what a one-task stage measures
        if np.dot(later, later) > 0:
            fits.append(float(np.dot(beyond, later) / np.dot(later, later)))
    return max(0.0, float(np.median(fits))) if fits else 0.0


MIN_SECONDS = 1e-3  # a residual below a millisecond is timer resolution, not a cost: left out of the log spreads
# spans modelled below 50 ms are left out of an operator's spread: there a few ms of jitter is a large ratio that
# the plant would then apply to the operator's long spans too (the project's choice)
MIN_SPAN_S = 0.05


def _log_sd(ratios: np.ndarray) -> float:
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    return float(np.std(np.log(ratios), ddof=1)) if len(ratios) >= 3 else 0.0


def modelled_span(batches: pd.DataFrame, op: str, costs: dict[str, Any], slots: int) -> np.ndarray:
    """An operator's span per batch as the plant models it: its work in waves of `slots` tasks plus the tasks'
    launches (0 where it read nothing)."""
    tasks = batches[f"tasks_{op}"].to_numpy(float).clip(min=1)
    records = batches[f"records_in_{op}"].to_numpy(float)
    work = records * costs["service_s"][op] / tasks + costs["task_overhead_s"]
    return (records > 0) * (np.ceil(tasks / slots) * work + tasks * costs.get("task_launch_s", 0.0))


def fit_noise(batches: pd.DataFrame, operators: Sequence[str], costs: dict[str, Any], slots: int = 4,
              chaining: bool = True) -> dict[str, Any]:
    """The spreads of the simulator's noise (module docstring), from the same batches as `costs`."""
    steady = batches[batches["batch_id"] > batches["batch_id"].min()] if "batch_id" in batches else batches.iloc[1:]
    spans = steady[[f"span_s_{op}" for op in operators]].sum(axis=1)
    extra = batch_extra_stages(steady, operators, costs.get("keyed", {}), chaining)
    residual = (steady["batch_duration_s"] - spans).to_numpy(float)
    # the plant draws one factor on the batch's whole fixed cost: its overhead and its extra stages'
    fixed = costs["batch_overhead_s"] + costs.get("stage_overhead_s", 0.0) * extra
    keep = (residual > MIN_SECONDS) & (fixed > MIN_SECONDS)
    overhead_sigma = _log_sd(residual[keep] / fixed[keep]) if costs["batch_overhead_s"] > MIN_SECONDS else 0.0
    service_sigma = {}
    for op in operators:  # on the span, the time the plant draws around (work in waves plus the tasks' launches)
        rows = steady[steady[f"records_in_{op}"] > 0]
        modelled = modelled_span(rows, op, costs, slots)
        span = rows[f"span_s_{op}"].to_numpy(float)
        keep = (span > MIN_SECONDS) & (modelled > MIN_SPAN_S)
        service_sigma[op] = _log_sd(span[keep] / modelled[keep])
    return {"batch_overhead_sigma": overhead_sigma, "service_sigma": service_sigma}


def fit_change_slowdown(batches: pd.DataFrame, operators: Sequence[str], costs: dict[str, Any], slots: int = 4,
                        chaining: bool = True) -> float:
    """How much longer a batch runs when its degrees differ from the batch before's (the plant's change_slowdown).

    Paired within each stretch of batches at one vector: the first batch's measured ÷ modelled time over the median
    of the same ratio for the stretch's later batches; the median over the stretches, less 1, never below 0. Paired,
    because the model's error depends on the vector (on this machine measured ÷ modelled ran from 0.65 at every
    operator at 8 to 0.95 at 1) and the load ramps, and both cancel within a stretch. Modelled as the simulator
    models a batch: the fixed costs plus each operator's span (fit_noise). The run's first stretch is left out
    (Spark's one-time start, and no change before it). 0 when the batches do not record their degrees or fewer than
    3 stretches follow a change: it cannot be seen then.

    Why measured: on Spark such a batch plans a new shuffle layout and starts tasks it has not run before, and burst
    sizing (controllers/burst_sizing.py) sizes exactly those batches; the plant charged a slowdown only where a study set
    one (8.5-13 %, read off the fidelity study's runs)."""
    if any(f"degree_{op}" not in batches for op in operators):
        return 0.0
    ordered = batches.sort_values("batch_id") if "batch_id" in batches else batches
    vectors = ordered[[f"degree_{op}" for op in operators]].to_numpy()
    stretch = np.r_[0, np.cumsum((vectors[1:] != vectors[:-1]).any(axis=1))]
    modelled = costs["batch_overhead_s"] + costs.get("stage_overhead_s", 0.0) * batch_extra_stages(
        ordered, operators, costs.get("keyed", {}), chaining)
    for op in operators:
        modelled = modelled + modelled_span(ordered, op, costs, slots)
    ratio = ordered["batch_duration_s"].to_numpy(float) / modelled
    paired = [ratio[stretch == k][0] / np.median(ratio[stretch == k][1:])
              for k in range(1, stretch[-1] + 1) if (stretch == k).sum() >= 2]
    return max(0.0, float(np.median(paired)) - 1.0) if len(paired) >= 3 else 0.0


def _number(value: float) -> str:
    """6 significant digits that YAML reads back as a float: '1e-05' is a string to YAML 1.1, '1.0e-05' a float."""
    text = f"{value:.6g}"
    return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text


def variant(params: dict[str, Any]) -> str:
    """The oracle's configuration as a suite variant string (controller:param=value,...)."""
    def flow(value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
        if isinstance(value, bool):
            return "true" if value else "false"
        return _number(value) if isinstance(value, float) else str(value)
    # an empty text (no calibration run recorded) is the parameter's default: written out it would read back as null
    return "oracle:" + ",".join(f"{k}={flow(v)}" for k, v in params.items() if v != "")


BATCHES_PER_DEGREE = 3  # the project's choice: each degree of the sweep holds for 3 batches, then the next


def unchained(degree: int, operators: Sequence[str], max_degree: int) -> dict[str, int]:
    """A vector around `degree` in which every other operator takes a neighbouring degree, so that no two
    neighbours chain: the batches that show what a stage of its own costs (controllers.cost_model)."""
    other = degree * 2 if degree * 2 <= max_degree else max(1, degree // 2)
    return {op: degree if i % 2 == 0 else other for i, op in enumerate(operators)}


def degree_sweep(degrees: Sequence[int], operators: Sequence[str], batches: int, max_degree: int = 8,
                 stages: bool = True) -> tuple[str, dict[str, Any]]:
    """The controller that holds each of `degrees` (every operator) for BATCHES_PER_DEGREE batches in turn, over
    the calibration's batches: static for one degree, scripted for several. Why several: at one degree every batch
    has the same number of tasks, so a task's fixed cost cannot be told from a batch's; a run at degree 8 on a
    bursty trace then took 2 s per batch where a calibration at degree 2 predicted 0.7 s (docs/tuning.md).
    With `stages`, each degree is followed by an unchained vector around it (`unchained`): with every operator at
    one degree the job runs the fewest stages, and a stage's own cost cannot be told from the batch's either."""
    if len(degrees) == 1 and not stages:
        return "static", {"degree": degrees[0]}
    steps = [{op: d for op in operators} for d in degrees]
    if stages:
        steps = [v for d, chained in zip(degrees, steps) for v in (chained, unchained(d, operators, max_degree))]
    changes, batch = {}, BATCHES_PER_DEGREE - 1
    step = 1
    while batch < batches:
        changes[batch] = steps[step % len(steps)]
        batch += BATCHES_PER_DEGREE
        step += 1
    return "scripted", {"initial_degree": degrees[0], "changes": changes}


def calibrate(master: str, trigger_s: float, max_degree: int, degree: int | Sequence[int], duration_s: float,
              peak_rate: float, tracking_uri: str | None, experiment: str, out: Path, stages: bool = True
              ) -> dict[str, Any]:
    from mlflow.tracking import MlflowClient

    from jobs.experiment import run_experiment

    workload = {"name": "calibration-ramp", "profile": "ramp",
                "params": {"start": peak_rate / 10, "end": peak_rate, "ramp_end_s": duration_s},
                "duration_s": duration_s, "seed": 1}
    with tempfile.TemporaryDirectory(prefix="calibration-") as scratch:
        from jobs.topology import load_topology

        degrees = [degree] if isinstance(degree, int) else list(degree)
        topology = load_topology("default")
        controller, params = degree_sweep(degrees, topology.names, int(duration_s / trigger_s) + 2, max_degree,
                                          stages)
        config = RunConfig(controller, params, workload, master=master, trigger_s=trigger_s,
                           max_degree=max_degree, tracking_uri=tracking_uri, experiment=experiment,
                           run_name=f"calibration {master}", tags={"kind": "calibration"},
                           output_dir=str(Path(scratch) / "run"), quiet=True).validate()
        result = run_experiment(config, log=lambda line: print(line, flush=True))
        batches = pd.read_parquet(Path(scratch) / "run" / "artifacts" / "batches.parquet")
    client = MlflowClient(result["tracking_uri"])
    run = client.get_run(result["run_id"])
    slots = int(run.data.params.get("spark.default_parallelism", max_degree))
    keyed = {op.name: op.keyed for op in config.topo.operators}
    costs = fit_costs(batches, config.topo.names, slots, keyed, config.chain_operators)
    noise = fit_noise(batches, config.topo.names, costs, slots, config.chain_operators)
    slowdown = fit_change_slowdown(batches, config.topo.names, costs, slots, config.chain_operators)
    params = {**costs, "slots": slots, "calibration_run": result["run_id"]}
    out.parent.mkdir(parents=True, exist_ok=True)
    measured = {"master": run.data.params.get("spark.master.effective", master), "at": run.info.start_time / 1000,
                # the operators the costs are of: a run of other operators takes no cost prior from them
                "topology": operator_costs(config.topo)}
    out.write_text(yaml.safe_dump({"controller": "oracle", "params": params,
                                   "calibration": {"noise": noise, "change_slowdown": slowdown,
                                                   "measured": measured}}, sort_keys=False))
    client.log_artifact(result["run_id"], str(out), "calibration")
    client.set_tag(result["run_id"], "calibration.variant", variant(params)[:5000])
    for key, value in {**costs, **{f"noise.{k}": v for k, v in noise.items()}, "change_slowdown": slowdown}.items():
        if isinstance(value, dict):
            for op, v in value.items():
                client.log_param(result["run_id"], f"calibration.{key}.{op}", f"{v:.6g}")
        else:
            client.log_param(result["run_id"], f"calibration.{key}", f"{value:.6g}")
    return params


def main(argv: list[str] | None = None) -> int:
    from jobs.recording.recorder import DEFAULT_EXPERIMENT

    p = argparse.ArgumentParser(prog="python -m jobs.calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--master", default="local[4]")
    p.add_argument("--trigger", type=float, default=2.0, help="trigger interval of the runs to bound (s)")
    p.add_argument("--max-degree", type=int, default=8)
    p.add_argument("--degrees", default="1,2,4,8",
                   help="degrees of every operator while measuring, each held for 3 batches in turn (one value: "
                        "a static run at that degree)")
    p.add_argument("--duration", type=float, default=96.0,
                   help="seconds of the rising load (96 s at a 2 s trigger: the degree sweep, each degree chained "
                        "and unchained, twice over)")
    p.add_argument("--no-stages", dest="stages", action="store_false",
                   help="every operator at one degree throughout (the fewest stages): no stage cost is measured")
    p.add_argument("--peak-rate", type=float, default=4000.0, help="events/s at the end of the rising load")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the oracle's controller config (YAML)")
    args = p.parse_args(argv)
    try:
        try:
            degrees = [int(d) for d in args.degrees.split(",") if d.strip()]
        except ValueError:
            raise InputError(f"--degrees {args.degrees!r}: expected integers separated by commas") from None
        if not degrees or any(not 1 <= d <= args.max_degree for d in degrees):
            raise InputError(f"--degrees {args.degrees!r}: each degree must be in [1, --max-degree {args.max_degree}]")
        params = calibrate(args.master, args.trigger, args.max_degree, degrees, args.duration, args.peak_rate,
                           args.tracking_uri, args.experiment, args.out, args.stages)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(params, indent=1))
    section = yaml.safe_load(args.out.read_text())["calibration"]
    print(f"noise, the log-scale spreads the simulator draws with: {json.dumps(section['noise'])}")
    print(f"a batch right after a degree change runs {section['change_slowdown']:.1%} longer (the simulator's "
          f"change_slowdown)")
    print(f"oracle config written to {args.out}: python -m jobs.run --controller-config {args.out} ...")
    print(f"as a suite variant: {variant(params)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
