"""Run one elasticity experiment: a controller steering a query (the benchmark topology, a Nexmark query or the
user's own) on a replayed workload.

The single entry point for every way of running the job:
    python -m jobs.run --controller threshold --workload step --duration 60 --seed 1
    spark-submit --py-files <zip> jobs/run.py --controller static --param degree=2 --workload step
(Airflow's SparkSubmitOperator uses the second form.) Exit codes: 0 finished (an SLO miss is a result), 1 the run
failed (its MLflow run is FAILED with the reason), 2 bad input (nothing was started), 3 Spark itself failed
(JVM, master, lost executors: the one case a scheduler should retry).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script (spark-submit jobs/run.py): make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

import controllers  # noqa: E402
import controllers.policy  # noqa: E402
from jobs.config import InputError, RunConfig, param_value  # noqa: E402
from jobs.recording.tracking_check import TrackingUnreachable  # noqa: E402
from params.declare import flag  # noqa: E402
from controllers.placement import registered as placement_controllers  # noqa: E402
from params.run import RUN_SETTINGS  # noqa: E402
from workloads import catalogue_names  # noqa: E402

EPILOG = """controllers:
{controllers}

workloads in the catalogue: {workloads} (or a path to a YAML spec)

examples:
  python -m jobs.run --controller static --param degree=2 --workload step
  python -m jobs.run --controller threshold --param cooldown_s=6 --workload ramp --duration 40 --seed 3 \\
      --slo-latency 4 --summary-json out/summary.json
  python -m jobs.run --controller-config my_controller.yaml --workload my_workload.yaml --master spark://127.0.0.1:7077
  python -m jobs.run --champion step        # the configuration promoted for workload class 'step'
  python -m jobs.run --policy my_policy.yaml --workload seep-periodic --topology seep-mu10
  python -m jobs.run --controller ds2 --workload step --query nexmark:q5      # a Nexmark query
  python -m jobs.run --controller threshold --workload step --query my_query.py:build   # your own query
  python -m jobs.run --controller scripted --param changes='{{5: {{query: 4}}}}' --spark-query native:windowed_count
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jobs.run",
        description="Run one elasticity experiment on Spark and record it in MLflow.",
        epilog=EPILOG.format(
            controllers="\n".join("  " + controllers.describe(n).replace("\n", "\n  ") for n in controllers.registered()),
            workloads=", ".join(catalogue_names()),
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c = p.add_argument_group("controller")
    c.add_argument("--controller", help="controller name (see below)")
    c.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="controller parameter (repeatable)")
    c.add_argument("--placement", metavar="NAME", help="a placement controller beside the parallelism controller: "
                   "moves the keyed operator's key groups between its partitions (sousa, sousa-random, souravlas)")
    c.add_argument("--placement-param", action="append", default=[], metavar="NAME=VALUE",
                   help="placement controller parameter (repeatable)")
    _setting(c, "key_groups")
    c.add_argument("--controller-config", metavar="FILE", help="YAML/JSON file {controller: NAME, params: {...}}")
    c.add_argument("--policy", metavar="FILE|NAME|TEXT",
                   help="a scaling policy (controller seep-policy): a YAML/JSON file, a catalogue name "
                        f"({', '.join(controllers.policy.catalogue_names())}) or the policy's text")
    c.add_argument("--champion", metavar="WORKLOAD_CLASS",
                   help="use the configuration promoted as champion for this workload class (MLflow registry); with "
                        "--spark-query, the one promoted for that query on the workload")
    _setting(c, "max_degree")
    c.add_argument("--describe", metavar="CONTROLLER",
                   choices=sorted(controllers.registered()) + sorted(placement_controllers()),
                   help="print the controller's parameters (type, default, bounds, search range, meaning), its rules "
                        "and the run settings, then exit")
    w = p.add_argument_group("workload")
    w.add_argument("--workload", help="catalogue name or YAML file (default: the --champion class, else step)")
    w.add_argument("--duration", type=float, help="override the workload's duration, seconds")
    w.add_argument("--seed", type=int, help="override the workload's seed")
    w.add_argument("--topology", default="default", help="'default', 'zero-cost' or a YAML file of operator costs")
    w.add_argument("--query", metavar="MODULE:FUNCTION",
                   help="run this query instead of the benchmark topology: a function returning a queries.api.Query "
                        "(my_query:build, path/to/my_query.py:build) or a Nexmark query (nexmark:q0 ... nexmark:q8; "
                        "docs/guides/queries.md)")
    w.add_argument("--spark-query", metavar="MODULE:FUNCTION",
                   help="run your own Structured Streaming query: a function given the replayed events as a "
                        "streaming DataFrame, returning the DataFrame (or DataFrame, output mode); its state stays in "
                        "Spark's state store and the controller changes its partitions by restart "
                        "(native:windowed_count, native:q5, native:q7, native:q8; docs/guides/native-queries.md)")
    s = p.add_argument_group("service level and Spark")
    for name in ("slo_latency_s", "slo_target"):
        _setting(s, name)
    s.add_argument("--master", default=None, help="Spark master (default local[4]; under spark-submit: its --master)")
    for name in ("trigger_s", "source", "source_partitions", "kafka_bootstrap", "max_events_per_batch", "lead_in_s",
                 "trigger_phase",
                 "drain_timeout_s", "keep_warm_s", "ledger_window_batches"):
        _setting(s, name)
    s.add_argument("--no-chaining", dest="chain_operators", action="store_false",
                   help="give every operator its own stage, even where a shuffle would change nothing (by default "
                        "an operator at its predecessor's degree, not keyed, runs in its predecessor's tasks, as "
                        "Flink chains operators; saves about 0.1 s per batch and stage, docs/benchmarks.md)")
    k = p.add_argument_group("cluster (process and host levels)")
    k.add_argument("--host-scaling", action="store_true",
                   help="start a standalone worker when an executor target needs more cores than are free, stop "
                        "idle ones it started (needs a cluster from `python -m deploy.spark_cluster start`)")
    k.add_argument("--host-provisioning-delay", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long before starting a worker, standing for a VM boot (default 0)")
    k.add_argument("--cluster-state", metavar="DIR", help="that cluster's state folder (default .local/spark-cluster)")
    r = p.add_argument_group("recording")
    r.add_argument("--tracking-uri", help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI or .local/mlflow.db)")
    r.add_argument("--experiment", default="elastic-streaming", help="MLflow experiment name")
    r.add_argument("--run-name", help="MLflow run name (default controller-workload-seedN)")
    r.add_argument("--parent-run-id", help="make this run a child of that MLflow run")
    r.add_argument("--tag", action="append", default=[], metavar="KEY=VALUE", help="extra MLflow tag (repeatable)")
    r.add_argument("--output-dir", help="checkpoint and sink folder (default .local/runs/<run id>)")
    r.add_argument("--summary-json", metavar="PATH", help="write the run's summary as JSON here")
    r.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
    r.add_argument("--stop-when-slo-unreachable", action="store_true",
                   help="stop as soon as so many events were late that the SLO target cannot be met any more; the "
                        "run ends KILLED with tag pruned (a partial result, never compared as complete), exit 0")
    # failure injection for tests; the environment variable reaches a job started by Airflow's SparkSubmitOperator
    r.add_argument("--fail-at-batch", type=int, default=_env_int("ELASTIC_FAIL_AT_BATCH"), help=argparse.SUPPRESS)
    return p


def _setting(group, name: str) -> None:
    """A run setting as a flag, with the default and meaning declared once in params.run."""
    declared = RUN_SETTINGS[name]
    group.add_argument(flag(name), dest=name, type=declared.kind, default=declared.default,
                       help=f"{declared.doc} (default {declared.default:{'' if declared.kind is str else 'g'}})")


def describe_run(controller: str) -> str:
    """What `--describe CONTROLLER` prints: the controller's declarations (a parallelism or a placement controller)
    and the run's settings."""
    from controllers.placement import describe_placement, registered as placements

    described = describe_placement(controller) if controller in placements() else controllers.describe(controller)
    lines = [described, "", "run settings (python -m jobs.run flags):"]
    lines += ["  " + spec.describe(flag(name)) for name, spec in RUN_SETTINGS.items()]
    return "\n".join(lines)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else None


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"{flag} {item!r}: expected NAME=VALUE")
        out[key.strip()] = value
    return out


def _champion(args: argparse.Namespace) -> tuple[str, dict, dict[str, str]]:
    """The promoted configuration, exactly: no other controller option may change it."""
    clashing = [flag for flag, value in (("--controller", args.controller), ("--controller-config",
                args.controller_config), ("--param", args.param)) if value]
    if clashing:
        raise InputError(f"--champion {args.champion} loads the promoted configuration as it is; drop "
                         f"{', '.join(clashing)}")
    from jobs.champion import ChampionNotFound, champion_class, load_champion
    from jobs.recording.recorder import default_tracking_uri

    try:
        champion = load_champion(args.tracking_uri or default_tracking_uri(),
                                 champion_class(args.champion, args.spark_query))
    except ChampionNotFound as exc:
        raise InputError(f"--champion {args.champion}: {exc}") from None
    tags = {"champion.model": champion.model, "champion.version": champion.version}
    return champion.controller, champion.params, tags


def config_from_args(args: argparse.Namespace) -> RunConfig:
    name, params, tags = args.controller, {}, {}
    if args.champion:
        name, params, tags = _champion(args)
    if args.controller_config:
        path = Path(args.controller_config)
        try:
            raw = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise InputError(f"--controller-config {path}: cannot be read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise InputError(f"--controller-config {path}:{at} is not valid YAML") from None
        if not isinstance(raw, dict) or "controller" not in raw:
            raise InputError(f"--controller-config {path}: expected a mapping with 'controller' and optional 'params'")
        # `calibration`: what jobs.calibrate measured beyond the oracle's parameters (noise, where and when), for the
        # simulator; a run has no use for it
        extra = sorted(set(raw) - {"controller", "params", "calibration"})
        if extra:
            raise InputError(f"--controller-config {path}: unknown field(s) {', '.join(extra)}")
        if name and name != raw["controller"]:
            raise InputError(f"--controller {name!r} contradicts {path} (controller {raw['controller']!r})")
        name = raw["controller"]
        params = dict(raw.get("params") or {})
    policy_source = None
    if args.policy:
        if name and name != "seep-policy":
            raise InputError(f"--policy is for controller 'seep-policy', not {name!r}")
        name = "seep-policy"
        path = Path(args.policy)
        if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
            try:
                params["policy"], policy_source = path.read_text(), str(path)
            except OSError as exc:
                raise InputError(f"--policy {path}: cannot be read: {exc.strerror}") from None
        else:
            params["policy"] = args.policy
    if not name:
        raise InputError("no controller given: use --controller NAME, --controller-config FILE or --policy FILE")
    params.update({k: param_value(v) for k, v in _pairs(args.param, "--param").items()})
    return RunConfig(
        controller=name, controller_params=params, workload=args.workload or args.champion or "step",
        duration_s=args.duration,
        seed=args.seed, slo_latency_s=args.slo_latency_s, slo_target=args.slo_target,
        master=args.master or (None if _under_spark_submit() else "local[4]"), trigger_s=args.trigger_s,
        max_degree=args.max_degree, source=args.source, source_partitions=args.source_partitions,
        kafka_bootstrap=args.kafka_bootstrap,
        max_events_per_batch=args.max_events_per_batch, topology=args.topology, query=args.query,
        spark_query=args.spark_query,
        chain_operators=args.chain_operators,
        tracking_uri=args.tracking_uri, experiment=args.experiment, run_name=args.run_name,
        parent_run_id=args.parent_run_id, tags={**tags, **_pairs(args.tag, "--tag")}, output_dir=args.output_dir,
        summary_json=args.summary_json, lead_in_s=args.lead_in_s, trigger_phase=args.trigger_phase,
        drain_timeout_s=args.drain_timeout_s,
        keep_warm_s=args.keep_warm_s,
        ledger_window_batches=args.ledger_window_batches,
        placement=args.placement, key_groups=args.key_groups,
        placement_params={k: param_value(v) for k, v in _pairs(args.placement_param, "--placement-param").items()},
        quiet=args.quiet, fail_at_batch=args.fail_at_batch,
        stop_when_slo_unreachable=args.stop_when_slo_unreachable, policy_source=policy_source,
        host_scaling=args.host_scaling, host_provisioning_delay_s=args.host_provisioning_delay,
        cluster_state=args.cluster_state,
    )


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.describe:
        print(describe_run(args.describe))
        return 0
    try:
        config = config_from_args(args).validate()
    except TrackingUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from jobs.console_noise import DaemonNoiseFilter
    from jobs.experiment import run_experiment  # heavy imports only once the input is known to be good

    noise = DaemonNoiseFilter()
    noise.start()  # before Spark starts: its JVM and Python workers inherit the filtered stderr
    try:
        if config.native_query is not None:
            from jobs.native.run import run_native

            summary = run_native(config, log=lambda line: print(line, flush=True))
        else:
            summary = run_experiment(config, log=lambda line: print(line, flush=True))
    except KeyboardInterrupt as exc:  # a stop signal (jobs.stopping) or Ctrl-C before the stream ran
        print(f"{str(exc) or 'interrupted'}: the MLflow run is marked FAILED", file=sys.stderr)
        return 1
    except Exception as exc:
        from jobs.experiment import failure_reason, is_infrastructure_failure
        from jobs.native.query import NativeQueryError

        if isinstance(exc, NativeQueryError):  # found by Spark's analysis as the query started: bad input
            print(f"error: {exc}; the MLflow run is marked FAILED", file=sys.stderr)
            return 2

        infrastructure = is_infrastructure_failure(exc)
        recorded = getattr(exc, "failure_line", None)  # set once the MLflow run was marked FAILED with it
        print(f"run failed{' (Spark infrastructure)' if infrastructure else ''}: {recorded or failure_reason(exc)}"
              + ("; the MLflow run is marked FAILED" if recorded else ""), file=sys.stderr)
        return 3 if infrastructure else 1
    finally:
        noise.stop()
    keys = ("latency_p50_s", "latency_p95_s", "latency_p99_s", "slo_attainment", "cost_slot_seconds",
            "scaling_actions", "records_in", "records_out", "records_lost", "records_duplicated")
    print("summary: " + json.dumps({k: summary.get(k) for k in keys}))
    if summary.get("pruned_reason"):
        print(f"stopped early (pruned, MLflow run KILLED with tag pruned): {summary['pruned_reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
