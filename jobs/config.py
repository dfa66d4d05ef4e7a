"""One experiment run's configuration, validated in full before any Spark job starts.

`RunConfig.validate()` is where every bad input is caught — unknown controller or parameter, impossible values,
an unreadable workload or topology, a Spark master that cannot be reached, Java missing — so the command line,
spark-submit and Airflow all reject bad input the same way, with one line naming the culprit.
"""
from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

import controllers
from controllers.base import ConfigError
from controllers.types import RunContext
from params.declare import ParamError, flag
from params.run import RUN_SETTINGS
from jobs.errors import InputError  # noqa: F401 (re-exported: callers import it from here)
from jobs.paths import OUTPUT_MARKER, first_existing
from jobs.recording.machine import java_binary
from jobs.recording.tracking_check import check_tracking_store
from jobs.topology import Topology, TopologyError, load_topology
from jobs.trigger_grid import chosen_phase_s
from queries.api import Query
from workloads import WorkloadError, WorkloadSpec, load_workload


def param_value(text: str) -> Any:
    """A controller parameter's value as YAML, so 0.8 is a float, 3 an int, {enrich: 4} a mapping, words strings."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


@dataclass
class RunConfig:
    controller: str
    controller_params: dict[str, Any]
    workload: str | dict[str, Any]
    duration_s: float | None = None
    seed: int | None = None
    slo_latency_s: float = RUN_SETTINGS["slo_latency_s"].default
    slo_target: float = RUN_SETTINGS["slo_target"].default
    master: str | None = "local[4]"
    trigger_s: float = RUN_SETTINGS["trigger_s"].default
    max_degree: int = RUN_SETTINGS["max_degree"].default
    source: str = RUN_SETTINGS["source"].default
    source_partitions: int = RUN_SETTINGS["source_partitions"].default
    kafka_bootstrap: str = RUN_SETTINGS["kafka_bootstrap"].default
    max_events_per_batch: int = RUN_SETTINGS["max_events_per_batch"].default
    topology: str | None = "default"
    # what the run computes: None for the benchmark topology above, else MODULE:FUNCTION returning a queries.api.Query
    # (a user's own query, or nexmark:qN)
    query: str | None = None
    # or a native Structured Streaming query, MODULE:FUNCTION (jobs.native): its partitions steered by restart
    spark_query: str | None = None
    # operators at the same degree with no shuffle between them share a stage (jobs.operators.chains)
    chain_operators: bool = True
    tracking_uri: str | None = None
    experiment: str = "elastic-streaming"
    run_name: str | None = None
    parent_run_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    output_dir: str | None = None
    summary_json: str | None = None
    lead_in_s: float = RUN_SETTINGS["lead_in_s"].default
    trigger_phase: str = RUN_SETTINGS["trigger_phase"].default
    drain_timeout_s: float = RUN_SETTINGS["drain_timeout_s"].default
    keep_warm_s: float = RUN_SETTINGS["keep_warm_s"].default
    ledger_window_batches: int = RUN_SETTINGS["ledger_window_batches"].default
    # a placement controller (controllers.placement) hosted beside the parallelism controller, moving the keyed
    # operator's key groups between its partitions; None keeps Spark's hash placement
    placement: str | None = None
    placement_params: dict[str, Any] = field(default_factory=dict)
    key_groups: int = RUN_SETTINGS["key_groups"].default
    quiet: bool = False
    fail_at_batch: int | None = None
    # stop the run as soon as it can no longer meet the SLO target (tuning's confirmation runs: Spark minutes go to
    # candidates that can still win); the run ends KILLED with tag `pruned`, never compared as complete
    stop_when_slo_unreachable: bool = False
    policy_source: str | None = None  # the file a --policy was read from, so errors name it
    host_scaling: bool = False  # start/stop standalone workers when an executor target needs/frees cores
    host_provisioning_delay_s: float = 0.0  # waited before starting a worker: stands for a VM boot
    cluster_state: str | None = None  # the standalone cluster's state folder (default .local/spark-cluster)

    # filled by validate()
    spec: WorkloadSpec | None = None
    topo: Topology | None = None
    job_query: Query | None = None  # the operators the run executes: the topology's, or the --query's
    capacity_table: Any = None  # the multi-level controller's table, resolved in validate()
    query_module: Any = None  # a user's module, shipped to Spark's Python workers by value
    native_query: Any = None  # the loaded --spark-query (jobs.native.query.NativeQuery)
    predictor: Any = None  # a LoadedPredictor when the controller asks for a registered one
    # the calibrated costs (jobs.cost_prior) when this machine's calibration is of this master and topology
    cost_prior: Any = None
    phase_s: float | None = None  # where the trigger grid falls on the run's clock (trigger_phase); None: free
    warnings: list[str] = field(default_factory=list)  # what validate() found questionable but not wrong

    def validate(self) -> "RunConfig":
        try:
            spec = load_workload(self.workload)
            self.spec = spec.with_overrides(duration_s=self.duration_s, seed=self.seed)
        except WorkloadError as exc:
            raise InputError(f"workload: {exc}") from None
        try:
            self.topo = load_topology(self.topology)
        except TopologyError as exc:
            raise InputError(f"topology: {exc}") from None
        trace = self.spec.streams[0].trace
        if trace is not None and trace.records == "task_events":
            self.topo = replace(self.topo, payload_format="google_task_events_csv")
        self._load_query()
        self._check_run_settings()
        self._check_service_level()
        if self.query is None:  # a user's query has costs no calibration of the topology measured
            from jobs.cost_prior import calibrated_prior

            self.cost_prior = calibrated_prior(self.master, self.topo)
        if self.policy_source is not None:
            from controllers.policy import PolicyError, parse_policy

            try:
                parse_policy(str(self.controller_params.get("policy", "")), self.policy_source, self.job_query.names)
            except PolicyError as exc:
                raise InputError(str(exc)) from None
        try:
            controller = controllers.build_controller(self.controller, self.controller_params, self.job_query.names,
                                                      self.max_degree)
            controller.check_run(self.context())
        except ConfigError as exc:
            raise InputError(str(exc)) from None
        self._check_placement(controller)
        if controller.needs_cluster() and (self.master or "").startswith("local"):
            raise InputError(f"controller {self.controller!r} acts on executors and needs a cluster master "
                             f"(--master spark://host:port, see docs/guides/clusters.md); --master {self.master} "
                             "has none to add or remove")
        self._check_host_scaling(controller)
        for name, path in (("--output-dir", self.output_dir), ("--summary-json", self.summary_json)):
            if path:
                _check_writable(name, Path(path))
        check_java()
        if self.master:
            check_master(self.master)
        if self.source == "kafka":
            self._check_kafka()
        from jobs.recording.recorder import default_tracking_uri

        # last: the one check that waits on a service (up to its timeout); a registered predictor is read from it
        check_tracking_store(self.tracking_uri or default_tracking_uri())
        self.predictor = self._registered_predictor(controller.params)
        self.capacity_table = self._capacity_table(controller.params)
        if self.capacity_table is not None:
            try:
                controller.bind(self.context())
            except ConfigError as exc:
                raise InputError(str(exc)) from None
        return self

    def workload_label(self) -> str:
        """What runs are compared within: the workload, and the query when it is not the benchmark topology (the
        same controller on the same load is another case for another query)."""
        query = self.query or self.spark_query
        return self.spec.name if query is None else query_workload_label(self.spec.name, query)

    def _load_query(self) -> None:
        """The operators this run executes: the benchmark topology's, or a --query's (imported and checked here,
        before Spark starts)."""
        from jobs.operators import topology_query

        if self.spark_query is not None:
            self._load_native_query()
            return
        if self.query is None:
            self.job_query = topology_query(self.topo)
            return
        if self.topology not in (None, "default"):
            raise InputError(f"--topology {self.topology} declares the benchmark topology's costs; it cannot be "
                             f"combined with --query {self.query} (a query declares its own operators)")
        from queries.api import QueryError
        from queries.loading import load_query

        try:
            self.job_query, self.query_module = load_query(self.query)
        except QueryError as exc:
            raise InputError(str(exc)) from None

    def _load_native_query(self) -> None:
        """A --spark-query: its function imported and checked for shape here; what it builds is checked once
        Spark can (jobs.native.run), still before the stream starts. Controllers see it as one operator."""
        from jobs.native.query import NativeQueryError, load_native_query
        from jobs.native.query import NATIVE_OPERATOR
        from queries.api import Operator

        for flag_name, given in (("--query", self.query), ("--topology", self.topology not in (None, "default")),
                                 ("--placement", self.placement)):
            if given:
                raise InputError(f"--spark-query {self.spark_query} runs your own Structured Streaming query; it "
                                 f"cannot be combined with {flag_name}")
        try:
            self.native_query = load_native_query(self.spark_query)
        except NativeQueryError as exc:
            raise InputError(str(exc)) from None
        self.query_module = self.native_query.module
        self.job_query = Query(self.native_query.name, (Operator(NATIVE_OPERATOR, None, ""),))

    def _check_run_settings(self) -> None:
        """Each run setting against its one declaration (params.run), named by its flag."""
        for name, declared in RUN_SETTINGS.items():
            try:
                setattr(self, name, declared.check("run", flag(name), getattr(self, name)))
            except ParamError as exc:
                raise InputError(f"{flag(name)} {str(exc).split(repr(flag(name)) + ' ', 1)[-1]}") from None
        try:
            self.phase_s = chosen_phase_s(self.trigger_phase, self.spec.seed, self.trigger_s)
        except ValueError as exc:
            raise InputError(f"{flag('trigger_phase')} {exc}") from None

    def _check_kafka(self) -> None:
        """A run that reads Kafka: a query that reads through the batch function, Spark's Kafka connector resolved,
        the Python client installed, the broker answering; each named before anything starts."""
        if self.native_query is not None:
            raise InputError(f"--source kafka: --spark-query {self.spark_query} reads the replay source; a run on "
                             "Kafka runs the benchmark topology or a --query (docs/guides/kafka.md)")
        from deploy.jars import JarsError, classpath

        try:
            classpath("spark-kafka")
        except JarsError as exc:
            raise InputError(f"--source kafka: Spark's Kafka connector: {exc}") from None
        if importlib.util.find_spec("confluent_kafka") is None:
            raise InputError("--source kafka needs the Python Kafka client: pip install -r requirements.txt")
        servers = host_ports(self.kafka_bootstrap)
        if servers is None:
            raise InputError(f"--kafka-bootstrap {self.kafka_bootstrap!r}: expected host:port[,host:port]")
        reasons = [unreachable(host, port) for host, port in servers]
        if all(reasons):  # a client needs one bootstrap server that answers
            raise InputError(f"--kafka-bootstrap {self.kafka_bootstrap}: no broker answers ({reasons[-1]}); start "
                             "one with `elastic kafka start`")

    def _check_placement(self, controller) -> None:
        """The placement controller's name and settings, a keyed operator for it to place, and more than one
        partition of it to place key groups on."""
        if self.placement is None:
            if self.placement_params:
                raise InputError("--placement-param given without --placement")
            return
        from controllers.placement import build_placement

        try:
            build_placement(self.placement, self.placement_params)
        except ParamError as exc:
            raise InputError(f"--placement: {exc}") from None
        if self.query is not None:
            raise InputError(f"--placement {self.placement}: placement controllers place the benchmark topology's "
                             f"window key groups; --query {self.query} is not that topology")
        if not any(op.keyed for op in self.topo.operators):
            raise InputError(f"--placement {self.placement}: the topology has no keyed operator whose key groups it "
                             "could place")
        keyed = next(op.name for op in self.topo.operators if op.keyed)
        if self.max_degree < 2:
            raise InputError(f"--placement {self.placement}: --max-degree {self.max_degree} keeps the keyed operator "
                             f"{keyed!r} at one partition, with no other to move key groups to")
        if self.controller == "static" and controller.initial_degrees()[keyed] < 2:
            raise InputError(f"--placement {self.placement}: controller 'static' keeps the keyed operator {keyed!r} "
                             f"at degree 1, one partition with no other to move key groups to (e.g. --param "
                             f"'degrees={{{keyed}: 4}}')")

    def placement_label(self) -> str:
        """'sousa' or 'sousa:max_moves=2,sensitivity=0.25' (empty without a placement controller)."""
        if self.placement is None:
            return ""
        from controllers.placement import placement_label

        return placement_label(self.placement, self.placement_params)

    def _check_service_level(self) -> None:
        """An SLO no event can meet is an error; a trigger interval longer than the bound is a warning (an event
        arriving just after a batch started waits a whole interval before it is read)."""
        if self.trigger_s > self.slo_latency_s:
            self.warnings.append(f"--trigger {self.trigger_s:g} s is longer than --slo-latency "
                                 f"{self.slo_latency_s:g} s: events arriving early in an interval wait longer than "
                                 "the bound before their batch starts")
        from jobs.floor import measured_floor

        floor = measured_floor(self.master)
        if floor is not None and self.slo_latency_s < floor[0]:
            raise InputError(f"--slo-latency {self.slo_latency_s:g} s is below this machine's floor of "
                             f"{floor[0]:.2f} s ({floor[1]}): no event can meet it. Raise the bound, or run "
                             f"python -m jobs.calibrate --master {self.master} again if the machine or the code "
                             "changed")

    def context(self, schedule: Any = None) -> RunContext:
        """What the run tells its controller (Controller.bind): its settings, the workload's schedule (for the
        oracle), the registered load predictor when one was loaded."""
        predictor = self.predictor
        return RunContext(trigger_s=self.trigger_s, slo_latency_s=self.slo_latency_s, slo_target=self.slo_target,
                          max_degree=self.max_degree, schedule=schedule,
                          predictor=None if predictor is None else predictor.predictor,
                          predictor_warning="" if predictor is None else (predictor.warning or ""),
                          slots=local_slots(self.master), capacity_table=self.capacity_table,
                          duration_s=float(self.spec.duration_s) if self.spec is not None else 0.0,
                          cost_prior=self.cost_prior)

    def _check_host_scaling(self, controller) -> None:
        if self.host_provisioning_delay_s < 0:
            raise InputError(f"--host-provisioning-delay must be >= 0, got {self.host_provisioning_delay_s}")
        if not self.host_scaling:
            return
        if controller.initial_executors() is None:
            raise InputError(f"--host-scaling: controller {self.controller!r} does not manage executors, so no "
                             "executor target says when a host is missing (give it initial_executors)")
        from deploy.spark_cluster import STATE, StandaloneCluster

        state = Path(self.cluster_state) if self.cluster_state else STATE
        cluster = StandaloneCluster.load(state)
        if cluster is None:
            raise InputError(f"--host-scaling: no standalone cluster started by this project in {state} "
                             "(start one with `python -m deploy.spark_cluster start`, or give --cluster-state)")
        if self.master != cluster.master_url:
            raise InputError(f"--host-scaling: --master {self.master} is not the cluster in {state} "
                             f"({cluster.master_url})")

    def _registered_predictor(self, params: dict[str, Any]) -> Any:
        """Load and check the registered load predictor a controller asks for (predictor=registry), once."""
        if params.get("predictor") != "registry":
            return None
        from jobs.predictors import PredictorLoadError, load_registered_predictor
        from jobs.recording.recorder import default_tracking_uri

        from controllers.forecast import Horizon

        # the controller predicts one iteration (period_s) ahead in sub-intervals of one micro-batch
        steps = max(1, round(float(params.get("period_s", 10.0)) / self.trigger_s))
        try:
            return load_registered_predictor(self.tracking_uri or default_tracking_uri(), params["predictor_model"],
                                             params["predictor_alias"], params.get("eq2_reading", "extrapolated"),
                                             horizon=Horizon(self.trigger_s, steps))
        except PredictorLoadError as exc:
            raise InputError(f"controller {self.controller!r}: {exc}") from None


    def _capacity_table(self, params: dict[str, Any]) -> Any:
        """The multi-level controller's capacity table (jobs.capacity_table), read and checked once."""
        if self.controller != "multilevel":
            return None
        from jobs.capacity_table import TableNotFound, query_identity, resolve
        from jobs.recording.recorder import default_tracking_uri

        from controllers.multilevel import TableError

        try:
            identity = query_identity(self.query, self.topology, self.topo.payload_format)
            return resolve(str(params["table"]), identity, self.job_query.names,
                           self.tracking_uri or default_tracking_uri())
        except (TableError, TableNotFound) as exc:
            raise InputError(f"controller 'multilevel': parameter 'table': {exc}") from None


def query_workload_label(workload: str, query: str) -> str:
    """'step' with query 'nexmark:q5' -> 'step.nexmark-q5', with 'path/to/mine.py:build' -> 'step.mine-build': a
    short name for the runs' `workload` tag that MLflow accepts in a model name and that no machine's path is in."""
    module, _, function = query.rpartition(":")
    if module.endswith(".py"):
        query = f"{Path(module).stem}:{function}"
    return f"{workload}.{re.sub(r'[^A-Za-z0-9_-]+', '-', query).strip('-')}"


def _check_writable(name: str, path: Path) -> None:
    probe = first_existing(path if name == "--output-dir" else path.parent)
    if not probe.is_dir():
        raise InputError(f"{name}: cannot create {path}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK):
        raise InputError(f"{name}: cannot write under {probe}")
    if name == "--output-dir" and probe == path and any(path.iterdir()) and not (path / OUTPUT_MARKER).exists():
        raise InputError(f"{name}: {path} holds files that are not a run's output (no {OUTPUT_MARKER} in it); a run "
                         "replaces its output folder, so give a new or empty folder")


def check_java() -> None:
    """Spark needs a JVM; say so plainly instead of letting the gateway fail with a Java stack trace."""
    java_home = os.environ.get("JAVA_HOME")
    java = java_binary()
    if not java or not Path(java).exists():
        where = f"JAVA_HOME={java_home}" if java_home else "PATH"
        raise InputError(f"Java not found (looked in {where}); install Java 17 and/or set JAVA_HOME")
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"Java at {java} does not run: {exc}") from None


def host_ports(value: str) -> list[tuple[str, int]] | None:
    """`host:port[,host:port...]` as (host, port) pairs; None where one of them is not host:port."""
    pairs = []
    for item in value.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            return None
        pairs.append((host, int(port)))
    return pairs


def unreachable(host: str, port: int, timeout_s: float = 3.0) -> str | None:
    """Why host:port takes no TCP connection within `timeout_s`; None when it takes one."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


_LOCAL = re.compile(r"^local(\[(\d+|\*)(\s*,\s*\d+)?\])?$")  # as Spark reads it: local, local[N], local[*], local[N, F]


def check_master(master: str) -> None:
    """Accept local[N] and reachable spark://host:port masters; other managers (yarn, k8s) are passed through."""
    if master.startswith("local"):
        if not _LOCAL.match(master):
            raise InputError(f"--master {master!r} is not a valid local master (use local, local[N] or local[*])")
        return
    if master.startswith("spark://"):
        masters = host_ports(master.removeprefix("spark://"))
        if masters is None:
            raise InputError(f"--master {master!r}: expected spark://host:port")
        for host, port in masters:  # every master of a standby list must answer
            reason = unreachable(host, port)
            if reason:
                raise InputError(f"--master {master}: cannot reach {host}:{port} ({reason})")
        return
    if not master.startswith(("yarn", "k8s://", "mesos://")):
        raise InputError(f"--master {master!r} is not a Spark master URL (local[N], spark://host:port, yarn, k8s://...)")


def local_slots(master: str | None) -> int:
    """The task slots a local master gives (local: 1, local[N]: N, local[*]: the machine's cores), as Spark's
    defaultParallelism will be; 0 for a cluster master, whose executors are known only once they register (and may
    change during a run)."""
    match = _LOCAL.match((master or "").strip())
    if not match:
        return 0
    if match[2] is None:
        return 1
    return (os.cpu_count() or 1) if match[2] == "*" else int(match[2])
