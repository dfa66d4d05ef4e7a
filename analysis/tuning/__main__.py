"""Search a controller's settings for a workload in the plant model, before spending Spark minutes on them.

    python -m analysis.tuning space threshold                          # what a study of threshold searches
    python -m analysis.tuning space threshold --range cooldown_s=2:30 --set guards=false
    python -m jobs.calibrate                                           # the job's costs (once per machine/topology)
    python -m analysis.tuning screen threshold --workload step --calibration .local/calibration/oracle.yaml
    python -m analysis.tuning screen ds2 --workload autoscale-paper --calibration <calibration run id> \\
        --trials 80 --seeds 1,2,3 --sampler both

`screen` prints the best configurations it found (as suite variants: paste them into `--variant`, a suite file or
the experiment DAG's controllers to confirm them on Spark), the controller's defaults and the oracle on the same
plant for reference. Exit codes: 0 done, 2 bad input (nothing ran).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from analysis.tuning.calibrations import load_calibration
from analysis.tuning.screening import (NOISE_DRAWS, RECHECK_DRAWS, RECHECK_TOP, RELIABLE_QUANTILE, SAMPLERS,
                                       SCREEN_HEADROOM, Screened, best_so_far, evaluate, headroom_problem,
                                       noise_problems, ranked, recheck, screen)
from analysis.tuning.space import SearchSpace, SpaceError, build_space
from jobs.topology import load_topology
from params.run import RUN_SETTINGS
from simulator.calibration import CalibrationError
from simulator.evaluate import simulate_configuration
from workloads import Schedule, WorkloadError, load_workload

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one line per download otherwise
def _space(args) -> SearchSpace:
    return build_space(args.controller, args.range, args.set)


def cmd_space(args) -> int:
    space = _space(args)
    print(f"{args.controller}: {len(space.dimensions)} searched parameter(s)")
    print("\n".join(space.describe()))
    return 0


def _row(s: Screened, oracle_cost: float, slo_target: float) -> str:
    ratio = f"{s.cost_slot_seconds / oracle_cost:5.2f}" if oracle_cost > 0 else "    —"
    mark = "" if s.feasible(slo_target) else "  (misses the SLO target)"
    return (f"  {s.cost_slot_seconds:9.1f}  {ratio}  {100 * s.slo_attainment:6.1f}%  "
            f"{100 * s.judged_attainment:6.1f}%  {s.latency_p95_s:6.2f}  {s.scaling_actions:6.1f}  {s.label}{mark}")


def cmd_screen(args) -> int:
    space = _space(args)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise SpaceError(f"--seeds {args.seeds!r}: expected integers separated by commas") from None
    if not seeds:
        raise SpaceError("--seeds: at least one seed")
    for flag, value in (("--trials", args.trials), ("--top", args.top)):
        if value < 1:
            raise SpaceError(f"{flag} must be >= 1, got {value}")
    for key in ("slo_latency_s", "slo_target", "trigger_s", "max_degree"):
        RUN_SETTINGS[key].check("run settings", key, getattr(args, key))
    if headroom_problem(args.screen_headroom):
        raise SpaceError(f"--screen-headroom {headroom_problem(args.screen_headroom)}")
    if noise_problems(args.noise_draws, args.noise_quantile):
        raise SpaceError("; ".join(f"--noise-{p}" for p in noise_problems(args.noise_draws, args.noise_quantile)))
    if args.recheck_draws < 0:
        raise SpaceError(f"--recheck-draws must be >= 0 (0: no recheck), got {args.recheck_draws}")
    spec = load_workload(args.workload)
    schedules = [Schedule(spec.with_overrides(duration_s=args.duration, seed=seed)) for seed in seeds]
    topology = load_topology(args.topology)
    operators = topology.names
    keyed = next(op.name for op in topology.operators if op.keyed)  # every topology has one (jobs.topology)
    calibration = load_calibration(args.calibration, args.tracking_uri)
    plant = calibration.plant(operators, args.trigger_s, args.max_degree)
    settings = dict(slo_latency_s=args.slo_latency_s, slo_target=args.slo_target)

    oracle_costs = [simulate_configuration("oracle", calibration.oracle_params(), s, plant, knows_schedule=True,
                                           **settings).cost_slot_seconds for s in schedules]
    settings.update(headroom=args.screen_headroom, draws=args.noise_draws, quantile=args.noise_quantile,
                    keyed_operator=keyed)
    noise = (f"; noise: {args.noise_draws} draws per seed (batch overhead sigma {plant.batch_overhead_sigma:.2f}, "
             f"service sigma up to {max(plant.service_sigma.values()):.2f}), feasibility judged on their "
             f"{args.noise_quantile:g} quantile; the best {RECHECK_TOP} rechecked with {args.recheck_draws} draws"
             if plant.noisy else "; no noise (the calibration measured none)")
    oracle_cost = sum(oracle_costs) / len(oracle_costs)
    judged = {**settings, "draws": args.recheck_draws or args.noise_draws}  # as run_study names candidates
    defaults = evaluate(args.controller, dict(space.fixed), schedules, plant, **judged)
    print(f"screening {args.controller} on {spec.name} ({spec.duration_s if args.duration is None else args.duration:g}"
          f" s, seeds {','.join(map(str, seeds))}) in the plant model calibrated by {calibration.source}"
          f"{' (run ' + calibration.run_id + ')' if calibration.run_id else ''}: trigger {args.trigger_s:g} s, "
          f"{plant.slots} slots, batch overhead {plant.batch_overhead_s:.3f} s (+{plant.stage_overhead_s:.3f} s per "
          f"unchained stage); SLO {args.slo_latency_s:g} s for "
          f"{100 * args.slo_target:g} % of events, judged in the plant within {args.screen_headroom:g} x "
          f"{args.slo_latency_s:g} s{noise}")
    header = "  cost slot-s  ÷orac     SLO  judged   p95 s  actions  configuration"
    curves, results = {}, {}
    for sampler in (SAMPLERS if args.sampler == "both" else (args.sampler,)):
        started = time.perf_counter()
        name = args.study_name if args.study_name is None or args.sampler != "both" else f"{args.study_name}-{sampler}"
        study = screen(space, schedules, plant, trials=args.trials, sampler=sampler, seed=args.seed,
                       storage=args.storage, study_name=name, **settings)
        took = time.perf_counter() - started
        curves[sampler] = best_so_far(study, args.slo_target)
        results[sampler] = recheck(args.controller, ranked(study, space, args.slo_target)[:max(RECHECK_TOP, args.top)],
                                   schedules, plant, **{**judged, "draws": args.recheck_draws})
        print(f"\n{sampler}: {len(study.trials)} trials in {took:.1f} s; the best {args.top}:")
        if args.record:
            from analysis.tuning.records import record_study, tuning_experiment
            from jobs.recording.recorder import default_tracking_uri

            reference = calibration.run_id or calibration.source
            run_id = record_study(study, space, tracking_uri=args.tracking_uri or default_tracking_uri(),
                                  experiment=args.experiment, slo_target=args.slo_target,
                                  params={"controller": args.controller, "workload": spec.name, "sampler": sampler,
                                          "seeds": ",".join(map(str, seeds)), "calibration": reference,
                                          "screen.headroom": args.screen_headroom,
                                          "screen.noise_draws": args.noise_draws if plant.noisy else 0,
                                          "screen.noise_quantile": args.noise_quantile},
                                  tags={"controller": args.controller, "workload": spec.name,
                                        "tuning.calibration": reference})
            print(f"  (recorded: MLflow run {run_id} in experiment {tuning_experiment(args.experiment)}, its trials "
                  "nested)")
        print(header)
        for s in results[sampler][:args.top]:
            print(_row(s, oracle_cost, args.slo_target))
    print("\nreference:")
    print(header)
    print(_row(defaults, oracle_cost, args.slo_target).replace(defaults.label, f"{defaults.label} (defaults)"))
    print(f"  {oracle_cost:9.1f}   1.00  (oracle: knows the schedule and the plant's costs; the least cost)")
    if len(curves) == 2:
        print("\nleast feasible cost after n trials (tpe / random):")
        for n in sorted({min(args.trials, k) for k in (10, 20, 40, args.trials)}):
            print(f"  {n:4d}: " + " / ".join(f"{curves[s][n - 1]:.1f}" for s in SAMPLERS))
    # the best feasible configurations whichever search found them (a baseline's find is still a find)
    pooled = sorted({s.label: s for found in results.values() for s in found if s.feasible(args.slo_target)}.values(),
                    key=lambda s: s.cost_slot_seconds)
    chosen = [s.label for s in pooled[:args.top]]
    if chosen:
        conf = {"controllers": [*chosen, defaults.label], "workloads": [spec.name], "seeds": seeds}
        print("\nconfirm on Spark (the experiment DAG's trigger form, or airflow dags trigger elastic_experiment "
              f"--conf ...):\n  {json.dumps(conf)}")
    else:
        print("\nno configuration met the SLO target in the plant model: widen the space or raise --trials")
    return 0


def cmd_tune(args) -> int:
    """The tuning DAG's pipeline without Airflow: screen, confirm on Spark one run at a time, analyse, promote."""
    import subprocess

    from analysis.budget import gate
    from analysis.orchestration import analyse, close, promote
    from analysis.suite import timestamped
    from analysis.tuning.pipeline import TuningError, open_confirmation, screen_all, validate
    from jobs.recording.recorder import REPO_ROOT, default_tracking_uri

    tracking_uri = args.tracking_uri or default_tracking_uri()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    try:
        request = validate({"controllers": args.controllers.split(","), "workloads": args.workloads.split(","),
                            "calibration": args.calibration or "", "trials": args.trials, "k": args.top,
                            "seeds": seeds, "spark_minutes": args.spark_minutes, "duration_s": args.duration,
                            "slo_latency_s": args.slo_latency_s, "slo_target": args.slo_target,
                            "sampler": args.sampler, "screen_headroom": args.screen_headroom,
                            "noise_draws": args.noise_draws, "noise_quantile": args.noise_quantile,
                            "recheck_draws": args.recheck_draws, "master": args.master}, tracking_uri)
    except TuningError as exc:
        raise SpaceError(str(exc)) from None
    for warning in request["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    name = args.study_name or timestamped("tune")
    storage = args.storage or f"sqlite:///{REPO_ROOT / '.local' / 'tuning' / 'optuna.db'}"
    if storage.startswith("sqlite:///"):
        os.makedirs(os.path.dirname(storage.removeprefix("sqlite:///")), exist_ok=True)
    started = time.perf_counter()
    screened = screen_all(request, prefix=name, storage=storage, tracking_uri=tracking_uri,
                          experiment=args.experiment)
    print(f"screened {len(screened['studies'])} studies in {time.perf_counter() - started:.0f} s "
          f"(MLflow experiment {args.experiment}-tuning):")
    for c in screened["candidates"]:
        print(f"  {c['workload']:<20} {c['role']:<9} cost {c['simulated_cost']:8.1f}  SLO "
              f"{100 * c['simulated_slo']:5.1f}%  {c['label']}")
    suite = open_confirmation(request, screened, tracking_uri=tracking_uri, experiment=args.experiment,
                              dag_id="analysis.tuning", run_id=name, include_champions=not args.no_champions,
                              with_oracle=args.with_oracle)
    parent = suite["parent_run_id"]
    print(f"\nconfirming {suite['case_count']} Spark runs (about {suite['planned_minutes']:.0f} min) as children of "
          f"run {parent}" + "".join(f"\n  left out: {x}" for x in suite["left_out"]))
    for i, case in enumerate(suite["cases"]):
        print(f"=== [{i + 1}/{suite['case_count']}] {case[case.index('--run-name') + 1]}", flush=True)
        over = gate(tracking_uri, parent, i, suite["case_minutes"][i], suite["budget_minutes"])
        if over:
            print(f"    {over}", flush=True)
            continue
        subprocess.run([sys.executable, "-m", "jobs.run", *case, "--master", args.master], cwd=REPO_ROOT)
    print(analyse(tracking_uri, parent, suite["case_count"]))
    if args.promote:
        print("\n".join(promote(tracking_uri, parent)))
    status = close(tracking_uri, parent, suite["case_count"])
    print(f"confirmation suite {parent}: {status}; compare with python -m analysis.compare --parent-run-id {parent}")
    return 0 if status == "FINISHED" else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m analysis.tuning", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (("space", "print the search space of a controller"),
                            ("screen", "search a controller's settings in the calibrated plant model")):
        s = sub.add_parser(name, help=help_text)
        s.add_argument("controller")
        s.add_argument("--range", action="append", default=[], metavar="NAME=LOW:HIGH[:log] | NAME=A|B",
                       help="search NAME over this range or these values instead of its declared range")
        s.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="fix NAME at VALUE in every trial")
    s = sub.choices["screen"]
    s.add_argument("--workload", required=True, help="catalogue name or YAML file")
    s.add_argument("--calibration", required=True,
                   help="the YAML python -m jobs.calibrate wrote, or the MLflow run id of a calibration")
    s.add_argument("--tracking-uri", default=None, help="where the calibration run is (default: the project's store)")
    s.add_argument("--topology", default="default", help="the topology the calibration measured")
    s.add_argument("--seeds", default="1,2,3", help="workload seeds every trial runs, comma-separated (1,2,3)")
    s.add_argument("--duration", type=float, default=None, help="seconds of workload (default: its own length)")
    s.add_argument("--trials", type=int, default=60)
    s.add_argument("--sampler", default="tpe", choices=(*SAMPLERS, "both"),
                   help="Optuna's TPE, random search, or both with the same budget (a comparison)")
    s.add_argument("--seed", type=int, default=1, help="the sampler's seed")
    s.add_argument("--top", type=int, default=3, help="configurations to print (and to confirm on Spark)")
    s.add_argument("--storage", default=None,
                   help="Optuna storage URL (e.g. sqlite:///.local/tuning.db): a study of the same --study-name resumes")
    s.add_argument("--study-name", default=None)
    s.add_argument("--record", action="store_true",
                   help="record the study in MLflow (a run in <experiment>-tuning, every trial a nested run, figures)")
    s.add_argument("--experiment", default="elastic-streaming", help="with --record: the MLflow experiment's stem")
    for key, flag in (("slo_latency_s", "--slo-latency"), ("slo_target", "--slo-target"), ("trigger_s", "--trigger"),
                      ("max_degree", "--max-degree")):
        declared = RUN_SETTINGS[key]
        s.add_argument(flag, dest=key, type=declared.kind, default=declared.default,
                       help=f"{declared.doc} (default {declared.default})")
    headroom_help = (f"events count as on time in the plant within this fraction of the SLO latency: a margin for "
                     f"what the simulator does not model (default {SCREEN_HEADROOM:g}; 1 = none)")
    s.add_argument("--screen-headroom", type=float, default=SCREEN_HEADROOM, help=headroom_help)
    draws_help = (f"noisy runs per seed and trial, when the calibration measured Spark's spread (default "
                  f"{NOISE_DRAWS})")
    quantile_help = (f"a trial is feasible when this lower quantile of its runs' SLO attainment meets the target "
                     f"(default {RELIABLE_QUANTILE:g}; 0.5 = the median)")
    s.add_argument("--noise-draws", type=int, default=NOISE_DRAWS, help=draws_help)
    s.add_argument("--noise-quantile", type=float, default=RELIABLE_QUANTILE, help=quantile_help)
    recheck_help = (f"noisy runs per seed of the {RECHECK_TOP} best configurations, simulated again before they are "
                    f"ranked and named (default {RECHECK_DRAWS}; 0 = none)")
    s.add_argument("--recheck-draws", type=int, default=RECHECK_DRAWS, help=recheck_help)
    t = sub.add_parser("tune", help="screen, confirm on Spark and promote (the elastic_tuning DAG without Airflow)")
    t.add_argument("--controllers", required=True, help="comma-separated controller names, e.g. ds2,threshold")
    t.add_argument("--workloads", required=True, help="comma-separated catalogue names or YAML files")
    t.add_argument("--calibration", default=None, help="calibration YAML or run id (default: the store's latest)")
    t.add_argument("--tracking-uri", default=None)
    t.add_argument("--experiment", default="elastic-streaming")
    t.add_argument("--seeds", default="1,2,3")
    t.add_argument("--duration", type=float, default=None, help="seconds of workload (default: its own length)")
    t.add_argument("--trials", type=int, default=60)
    t.add_argument("--top", type=int, default=3, help="k: screened configurations confirmed per controller")
    t.add_argument("--sampler", default="tpe", choices=SAMPLERS)
    t.add_argument("--screen-headroom", type=float, default=SCREEN_HEADROOM, help=headroom_help)
    t.add_argument("--noise-draws", type=int, default=NOISE_DRAWS, help=draws_help)
    t.add_argument("--noise-quantile", type=float, default=RELIABLE_QUANTILE, help=quantile_help)
    t.add_argument("--recheck-draws", type=int, default=RECHECK_DRAWS, help=recheck_help)
    t.add_argument("--spark-minutes", type=float, default=60.0, help="budget of the Spark confirmation")
    t.add_argument("--master", default="local[4]")
    t.add_argument("--storage", default=None, help="Optuna storage (default sqlite:///.local/tuning/optuna.db)")
    t.add_argument("--study-name", default=None, help="prefix of the studies' names (a second call resumes them)")
    t.add_argument("--with-oracle", action="store_true", help="confirm the calibrated oracle too (cost ÷ oracle)")
    t.add_argument("--no-champions", action="store_true", help="do not run the current champions alongside")
    t.add_argument("--promote", action="store_true", help="apply the champion/challenger rule afterwards")
    for key, flag in (("slo_latency_s", "--slo-latency"), ("slo_target", "--slo-target")):
        declared = RUN_SETTINGS[key]
        t.add_argument(flag, dest=key, type=declared.kind, default=declared.default,
                       help=f"{declared.doc} (default {declared.default})")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"space": cmd_space, "screen": cmd_screen, "tune": cmd_tune}[args.command](args)
    except (SpaceError, CalibrationError, WorkloadError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a run setting out of its declared bounds (params.declare.ParamError)
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
