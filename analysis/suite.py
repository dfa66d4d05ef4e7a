"""A suite: configurations (variants) x workloads x seeds, validated as a whole before any Spark job starts, and run
as child runs of one parent MLflow run.

The experiment and nightly DAGs submit each case with SparkSubmitOperator; without Airflow, `run_suite` runs them as
`python -m jobs.run` processes, strictly one after another — two streaming runs on one small machine spoil each
other's timings. The demo and the reproduction page use it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from mlflow.tracking import MlflowClient

import controllers
from jobs.config import param_value, query_workload_label
from jobs.native.query import NATIVE_OPERATOR
from jobs.recording.machine import machine_tags
from jobs.recording.recorder import REPO_ROOT, ensure_experiment
from jobs.recording.tracking_check import check_tracking_store
from jobs.topology import TopologyError, load_topology
from params.declare import Param, ParamError
from params.run import RUN_SETTINGS
from queries.api import QueryError
from queries.loading import load_query
from workloads import WorkloadError, load_workload

# The run settings a suite sets for all its cases, declared in params.run (defaults, bounds, meaning) like the
# command line's and the DAGs' Params; a suite's own length setting is declared the same way.
SUITE_SETTINGS: dict[str, Param] = {
    "duration_s": Param(float, None, "seconds of workload per run (default: the workload's own length)",
                        minimum=0.0, open_minimum=True),
    **{key: RUN_SETTINGS[key] for key in ("slo_latency_s", "slo_target", "max_events_per_batch", "source",
                                          "kafka_bootstrap")},
}
# what a request (DAG params, a suite file) may hold; include_oracle adds the oracle calibrated on this store's
# latest calibration (analysis.orchestration.with_oracle), so every run gets its cost and regret against the oracle
REQUEST_FIELDS = ("controllers", "workloads", "seeds", *SUITE_SETTINGS, "include_oracle", "topology", "queries",
                  "spark_queries")
# what the fields that are not run settings hold (the documentation's suite reference is generated from these)
REQUEST_FIELD_DOCS = {
    "controllers": "configurations, each `controller[:param=value,...]` (values in YAML flow style)",
    "workloads": "catalogue names or workload files",
    "seeds": "one run per configuration × workload × seed",
    "include_oracle": "add the oracle, calibrated on the tracking store's latest `elastic calibrate` (cost ÷ oracle "
                      "and regret for every run)",
    "topology": "the benchmark topology: a named one (`jobs/topology.py`) or a YAML file of its operators' costs",
    "queries": "queries of the project's operator API (`nexmark:q5`, `MODULE:FUNCTION`); each case runs once per "
               "query",
    "spark_queries": "unmodified Structured Streaming queries (`native:windowed_count`, `MODULE:FUNCTION`), "
                     "rescaled by restart; each case runs once per query",
    "tolerance": "the nightly regression's tolerances per metric (a suite file only)",
    "description": "a line saying what the suite is for",
}


def parse_variant(text: str) -> tuple[str, list[str]]:
    """'name:k=v,k=v' -> (name, ['k=v', ...]); values may be YAML flow mappings containing commas in braces."""
    name, _, rest = text.partition(":")
    params, depth, current = [], 0, ""
    for ch in rest:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            params.append(current)
            current = ""
        else:
            current += ch
    if current:
        params.append(current)
    return name, [p.strip() for p in params if p.strip()]


def split_placement(variant: str) -> tuple[str, str | None]:
    """'threshold:cooldown_s=4+sousa:sensitivity=0.25' -> ('threshold:cooldown_s=4', 'sousa:sensitivity=0.25'): a
    variant may end with '+' and a placement controller (controllers.placement) hosted beside the parallelism one."""
    from controllers.placement import registered as placements

    depth = 0
    for i, ch in enumerate(variant):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "+" and depth == 0 and parse_variant(variant[i + 1:])[0] in placements():
            return variant[:i], variant[i + 1:]
    return variant, None


def _values(params: list[str]) -> dict:
    values = {}
    for p in params:
        key, sep, value = p.partition("=")
        if not sep:
            raise controllers.ConfigError(f"parameter {p!r}: expected NAME=VALUE")
        values[key.strip()] = param_value(value)
    return values


class SuiteError(ValueError):
    """Every problem of a suite request, one per line, each naming the field (and file and line when from a file)."""


@dataclass(frozen=True)
class Case:
    variant: str
    workload: str
    seed: int
    query: str | None = None  # MODULE:FUNCTION of the query (None: the benchmark topology)
    spark_query: str | None = None  # MODULE:FUNCTION of a native Structured Streaming query (jobs.native)

    def label(self) -> str:
        """The workload as the runs' `workload` tag names it (jobs.config.RunConfig.workload_label)."""
        query = self.query or self.spark_query
        return self.workload if query is None else query_workload_label(self.workload, query)

    def run_args(self, request: "SuiteRequest", *, experiment: str, tracking_uri: str, parent_run_id: str,
                 tags: dict[str, str] | None = None) -> list[str]:
        """The jobs/run.py arguments of this case (spark-submit jobs/run.py <these>)."""
        controller, placement = split_placement(self.variant)
        name, params = parse_variant(controller)
        args = ["--controller", name, "--workload", self.workload, "--seed", str(self.seed),
                "--slo-latency", str(request.slo_latency_s), "--slo-target", str(request.slo_target),
                "--experiment", experiment, "--tracking-uri", tracking_uri, "--parent-run-id", parent_run_id,
                "--run-name", f"{self.variant} | {self.label()} | seed {self.seed}", "--quiet"]
        if self.query is not None:
            args += ["--query", self.query]
        if self.spark_query is not None:
            args += ["--spark-query", self.spark_query]
        if request.duration_s is not None:
            args += ["--duration", str(request.duration_s)]
        if request.topology != "default":
            args += ["--topology", request.topology]
        if request.max_events_per_batch:
            args += ["--max-events-per-batch", str(request.max_events_per_batch)]
        if request.source != "replay":
            args += ["--source", request.source, "--kafka-bootstrap", request.kafka_bootstrap]
        for p in params:
            args += ["--param", p]
        if placement is not None:
            placement_name, placement_params = parse_variant(placement)
            args += ["--placement", placement_name]
            for p in placement_params:
                args += ["--placement-param", p]
        if request.stop_when_slo_unreachable:
            args.append("--stop-when-slo-unreachable")
        for key, value in {"variant": self.variant, **(tags or {})}.items():
            args += ["--tag", f"{key}={value}"]
        return args


def submit_jars(args: list[str]) -> str | None:
    """spark-submit's --jars for a case's arguments: Spark's Kafka connector when the case reads Kafka (on the
    driver's class path from its start), else none."""
    if "--source" not in args or args[args.index("--source") + 1] != "kafka":
        return None
    from deploy.jars import classpath

    return ",".join(map(str, classpath("spark-kafka")))


@dataclass(frozen=True)
class SuiteRequest:
    variants: tuple[str, ...]
    workloads: tuple[str, ...]
    seeds: tuple[int, ...]
    duration_s: float | None = SUITE_SETTINGS["duration_s"].default
    slo_latency_s: float = SUITE_SETTINGS["slo_latency_s"].default
    slo_target: float = SUITE_SETTINGS["slo_target"].default
    max_events_per_batch: int = SUITE_SETTINGS["max_events_per_batch"].default  # the source's admission cap; 0: none
    tolerance: dict[str, float] | None = None  # for regression checks: relative worsening allowed per metric
    topology: str = "default"  # a named topology (jobs.topology.NAMED_TOPOLOGIES) or a YAML file
    stop_when_slo_unreachable: bool = False  # tuning's confirmation: prune runs that can no longer meet the target
    include_oracle: bool = False  # add the calibrated oracle to the variants when the suite is opened
    queries: tuple[str, ...] = ()  # queries (MODULE:FUNCTION, nexmark:qN) run instead of the benchmark topology
    # native Structured Streaming queries (MODULE:FUNCTION, native:NAME), each rescaled by restart (jobs.native)
    spark_queries: tuple[str, ...] = ()
    source: str = SUITE_SETTINGS["source"].default  # replay, or kafka (the broker at kafka_bootstrap)
    kafka_bootstrap: str = SUITE_SETTINGS["kafka_bootstrap"].default

    def cases(self) -> list[Case]:
        """Every configuration on every workload and seed, for each query: the benchmark topology (or the `queries`)
        unless the suite names only native queries, then each native query."""
        laboratory = [Case(v, w, s, q) for q in (self.queries or (None,)) for w in self.workloads
                      for v in self.variants for s in self.seeds] if self.queries or not self.spark_queries else []
        native = [Case(v, w, s, spark_query=q) for q in self.spark_queries for w in self.workloads
                  for v in self.variants for s in self.seeds]
        return laboratory + native

    @classmethod
    def from_mapping(cls, raw: dict, where: str = "params", lines: dict[str, int] | None = None) -> "SuiteRequest":
        """Validate a request (DAG params or a suite file) in full; all problems are reported together."""
        problems: list[str] = []

        def at(field_path: str) -> str:
            line = (lines or {}).get(field_path)
            return f"{where}:{line}: {field_path}" if line else f"{where}.{field_path}"

        def strings(key: str) -> list[str]:
            value = raw.get(key)
            if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
                problems.append(f"{at(key)}: expected a non-empty list of names, got {value!r}")
                return []
            return [v.strip() for v in value]

        variants, workloads = strings("controllers"), strings("workloads")
        seeds = raw.get("seeds", [1])
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                               and s >= 0 for s in seeds):
            problems.append(f"{at('seeds')}: expected a non-empty list of integers >= 0, got {seeds!r}")
            seeds = []
        elif len(set(seeds)) != len(seeds):
            problems.append(f"{at('seeds')}: seeds repeat: {seeds}")
        numbers = {}
        for key, spec in SUITE_SETTINGS.items():
            value = raw.get(key, spec.default)
            if value is None and spec.default is None:
                numbers[key] = None
                continue
            try:
                numbers[key] = spec.check(at(key), key, value)
            except ParamError as exc:  # "<where>: parameter 'key' must be ..." -> "<where>: must be ..."
                problems.append(f"{at(key)}: {str(exc).removeprefix(f'{at(key)}: parameter {key!r} ')}")
                numbers[key] = spec.default
        tolerance = raw.get("tolerance")
        if tolerance is not None:
            from analysis.stats import HIGHER_IS_BETTER

            if not isinstance(tolerance, dict) or not all(
                    m in HIGHER_IS_BETTER and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                    for m, v in tolerance.items()):
                problems.append(f"{at('tolerance')}: expected {{metric: fraction >= 0}} with metrics among "
                                f"{', '.join(HIGHER_IS_BETTER)}, got {tolerance!r}")
                tolerance = None
        include_oracle = raw.get("include_oracle", False)
        if not isinstance(include_oracle, bool):
            problems.append(f"{at('include_oracle')}: expected true or false, got {include_oracle!r}")
            include_oracle = False
        topology = raw.get("topology", "default")
        try:
            load_topology(str(topology))
        except TopologyError as exc:
            problems.append(f"{at('topology')}: {exc}")
        unknown = sorted(set(raw) - {*REQUEST_FIELDS, "tolerance", "description"})
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}")
        queries = raw.get("queries") or []
        operator_sets = {"topology": load_topology("default").names}  # every topology has the same operator names
        if not isinstance(queries, list) or not all(isinstance(q, str) and q.strip() for q in queries):
            problems.append(f"{at('queries')}: expected a list of MODULE:FUNCTION references, got {queries!r}")
            queries = []
        elif queries:
            if include_oracle:
                problems.append(f"{at('include_oracle')}: the oracle is calibrated on the benchmark topology's "
                                "operators; a suite with queries cannot include it")
            if topology != "default":
                problems.append(f"{at('topology')}: declares the benchmark topology's costs; a suite with queries "
                                "runs those instead")
            operator_sets = {}
            for i, ref in enumerate(queries):
                try:
                    operator_sets[ref] = load_query(ref)[0].names
                except QueryError as exc:
                    problems.append(f"{at(f'queries[{i}]')}: {str(exc).removeprefix(f'--query {ref!r}: ')}")
        spark_queries = raw.get("spark_queries") or []
        if not isinstance(spark_queries, list) or not all(isinstance(q, str) and q.strip() for q in spark_queries):
            problems.append(f"{at('spark_queries')}: expected a list of MODULE:FUNCTION references, got "
                            f"{spark_queries!r}")
            spark_queries = []
        elif spark_queries:
            problems += _native_problems(spark_queries, at, include_oracle, topology, bool(queries))
            if not queries:
                operator_sets.pop("topology", None)
            operator_sets["native"] = (NATIVE_OPERATOR,)
        for i, variant in enumerate(variants):
            controller, placement = split_placement(variant)
            name, params = parse_variant(controller)
            try:
                for operators in operator_sets.values():
                    controllers.build_controller(name, _values(params), operators,
                                                 max_degree=RUN_SETTINGS["max_degree"].default)
                if placement is not None:
                    from controllers.placement import build_placement

                    placement_name, placement_params = parse_variant(placement)
                    build_placement(placement_name, _values(placement_params))
            except controllers.ConfigError as exc:
                problems.append(f"{at(f'controllers[{i}]')} {variant!r}: {exc}")
        for i, workload in enumerate(workloads):
            try:
                load_workload(workload).with_overrides(duration_s=numbers.get("duration_s"))
            except WorkloadError as exc:
                problems.append(f"{at(f'workloads[{i}]')} {workload!r}: {exc}")
        if problems:
            raise SuiteError("\n".join(problems))
        return cls(tuple(variants), tuple(workloads), tuple(seeds), numbers["duration_s"], numbers["slo_latency_s"],
                   numbers["slo_target"], numbers["max_events_per_batch"], tolerance, topology=str(topology),
                   include_oracle=include_oracle, queries=tuple(q.strip() for q in queries),
                   spark_queries=tuple(q.strip() for q in spark_queries), source=numbers["source"],
                   kafka_bootstrap=numbers["kafka_bootstrap"])

    @classmethod
    def from_file(cls, path: Path) -> "SuiteRequest":
        """A versioned suite file (YAML); errors give the file and line of the offending field."""
        try:
            text = path.read_text()
            node = yaml.compose(text)
            raw = yaml.safe_load(text)
        except OSError as exc:
            raise SuiteError(f"{path}: cannot be read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise SuiteError(f"{path}:{mark.line + 1 if mark else '?'}: not valid YAML") from None
        if not isinstance(raw, dict):
            raise SuiteError(f"{path}:1: expected a mapping with controllers, workloads, seeds")
        return cls.from_mapping(raw, str(path), _lines(node))


def _native_problems(refs: list[str], at, include_oracle: bool, topology: str, with_queries: bool) -> list[str]:
    """What keeps a suite's native queries from running, checked as `jobs.run --spark-query` checks them."""
    from jobs.native.query import NativeQueryError, load_native_query

    problems = []
    if include_oracle:
        problems.append(f"{at('include_oracle')}: the oracle is calibrated on the benchmark topology's operators; a "
                        "suite with spark_queries cannot include it")
    if topology != "default" and not with_queries:
        problems.append(f"{at('topology')}: declares the benchmark topology's costs; a suite of spark_queries runs "
                        "those instead")
    for i, ref in enumerate(refs):
        try:
            load_native_query(ref.strip())
        except NativeQueryError as exc:
            problems.append(f"{at(f'spark_queries[{i}]')}: {str(exc).removeprefix(f'--spark-query {ref!r}: ')}")
    return problems


def _lines(node) -> dict[str, int]:
    """'key' and 'key[i]' -> 1-based line in the YAML file, for error messages."""
    out: dict[str, int] = {}
    for key_node, value_node in getattr(node, "value", []):
        if not hasattr(key_node, "value") or not isinstance(key_node.value, str):
            continue
        out[key_node.value] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.SequenceNode):
            for i, item in enumerate(value_node.value):
                out[f"{key_node.value}[{i}]"] = item.start_mark.line + 1
    return out


@dataclass
class SuiteResult:
    parent_run_id: str
    summaries: list[dict] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def open_parent(tracking_uri: str, experiment: str, run_name: str, tags: dict[str, str],
                params: dict[str, object]) -> str:
    """The suite's parent run, tagged with the machine its runs are about to run on (jobs/recording/machine.py);
    TrackingUnreachable (one line) within seconds when the store is down, instead of MLflow's minutes of retries."""
    check_tracking_store(tracking_uri)
    if tracking_uri.startswith("sqlite:"):
        Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    client = MlflowClient(tracking_uri)
    experiment_id = ensure_experiment(client, experiment, tracking_uri)
    parent_id = client.create_run(experiment_id, run_name=run_name, tags={**machine_tags(), **tags}).info.run_id
    for key, value in params.items():
        client.log_param(parent_id, key, value)
    return parent_id


def run_suite(parent_run_id: str, request: SuiteRequest, *, tracking_uri: str, experiment: str, master: str,
              tags: dict[str, str] | None = None) -> SuiteResult:
    """Every case as a child run of parent_run_id, one after another; a failed run is recorded and the suite goes on
    (its MLflow run is FAILED with the reason, so the comparison and the promotion see it)."""
    result = SuiteResult(parent_run_id)
    cases = request.cases()
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            summary_path = Path(tmp) / f"{i}.json"
            args = case.run_args(request, experiment=experiment, tracking_uri=tracking_uri,
                                 parent_run_id=parent_run_id, tags=tags)
            cmd = [sys.executable, "-m", "jobs.run", *args, "--master", master, "--summary-json", str(summary_path)]
            print(f"\n=== [{i + 1}/{len(cases)}] {case.variant} on {case.label()}, seed {case.seed}", flush=True)
            code = subprocess.run(cmd, cwd=REPO_ROOT).returncode
            if code != 0 or not summary_path.exists():
                result.failed.append(f"{case.variant} on {case.label()} seed {case.seed}")
                continue
            summary = json.loads(summary_path.read_text())
            summary["variant"] = case.variant
            result.summaries.append(summary)
    return result


def timestamped(prefix: str) -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}"
