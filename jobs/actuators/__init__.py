"""Where a decision is applied: one actuator per scaling level, behind one contract (controllers.actuation).

- degrees (thread level, live): `DegreeActuator`, read by the batch function when a micro-batch starts;
- executors (process level): `ExecutorActuator`, Spark's executor request / kill API, on a cluster master;
- hosts: `HostActuator`, standalone workers started and stopped for the run (--host-scaling);
- placement (live): `KeyGroupRouting`, the keyed operator's key-group -> partition table (--placement), applied by
  the placement controller's own step (jobs.batch), after the parallelism controller's.

`build_actuators` assembles the ones the backend has, in the order the loop applies them (hosts read the free
cores before the executors are requested), and records the others as unavailable, with the reason, once.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from controllers.actuation import Unavailable
from controllers.base import Controller
from jobs.actuators.degrees import DegreeActuator
from jobs.actuators.executors import ExecutorActuator
from jobs.actuators.hosts import HostActuator
from jobs.actuators.placement import KeyGroupRouting
from jobs.errors import RunFailed

__all__ = ["DegreeActuator", "ExecutorActuator", "HostActuator", "KeyGroupRouting", "RunActuators",
           "build_actuators"]


@dataclass
class RunActuators:
    degrees: DegreeActuator
    executors: ExecutorActuator | None = None
    hosts: HostActuator | None = None
    placement: KeyGroupRouting | None = None
    unavailable: list[Unavailable] = field(default_factory=list)

    @property
    def chain(self) -> list[Any]:
        """The actuators in the order the loop applies a decision."""
        return [a for a in (self.degrees, self.hosts, self.executors) if a is not None]

    def describe(self) -> list[dict[str, Any]]:
        described = [a.describe() for a in self.chain] + [u.describe() for u in self.unavailable]
        if self.placement is not None:
            described.append(self.placement.describe())
        if self.hosts is not None:
            described[self.chain.index(self.hosts)]["events"] = [e.to_dict() for e in self.hosts.events]
        return described

    def anchor(self, anchor_s: float) -> None:
        """Run time 0 (epoch seconds): the actuators report when things took effect in run time."""
        if self.executors is not None:
            self.executors.ledger.started_s = anchor_s
        if self.hosts is not None:
            self.hosts.anchor_s = anchor_s

    def wind_down(self, timeout_s: float = 30.0) -> None:
        """After the last batch: give pending executor changes time to complete (an executor decided in the last
        batch may register after the stream ended) so their delays are measured, not reported missing; release
        idle hosts; fill in when each outcome took effect."""
        if self.executors is not None:
            deadline = time.monotonic() + timeout_s
            while self.executors.ledger.pending() and time.monotonic() < deadline:
                self.executors.observe()
                time.sleep(0.25)
            if self.hosts is not None:
                self.hosts.release_idle()
            self.executors.settle()
        if self.hosts is not None:
            self.hosts.settle()

    def summary(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        if self.executors is not None:
            out.update(self.executors.ledger.summary())
        if self.hosts is not None:
            out.update(self.hosts.summary())
        if self.placement is not None:
            out["placement_moves"] = float(self.placement.moves_applied)
        return out

    def stop_watching(self) -> None:
        """Stop polling Spark's executor record (before Spark stops)."""
        if self.executors is not None:
            self.executors.close()

    def release_hosts(self) -> None:
        """Stop every worker this run added, whatever happened (after Spark stopped)."""
        if self.hosts is not None:
            self.hosts.close()


def build_actuators(config, sc, controller: Controller, log: Callable[[str], None], degrees=None) -> RunActuators:
    """The actuators this backend has for this run; brings the executors to the controller's initial count.
    `degrees`: what carries out the operators' degrees when it is not the laboratory's per-batch repartition (a
    native query's partitions, changed by restart: jobs.native.run.PartitionsActuator)."""
    actuators = RunActuators(degrees or DegreeActuator(controller.initial_degrees()))
    if sc.master.startswith("local"):
        actuators.unavailable.append(Unavailable("executors", f"master {sc.master}: one local JVM, no executors "
                                                              "to add or remove"))
        actuators.unavailable.append(Unavailable("hosts", f"master {sc.master}: no cluster to grow"))
        return actuators
    actuators.executors = ExecutorActuator(sc)  # executors exist: recorded, and set if the controller does
    if config.host_scaling:
        from deploy.spark_cluster import STATE, StandaloneCluster

        cluster = StandaloneCluster.load(Path(config.cluster_state) if config.cluster_state else STATE)
        actuators.hosts = HostActuator(cluster, config.host_provisioning_delay_s, log, actuators.executors)
    else:
        actuators.unavailable.append(Unavailable("hosts", "not asked for (--host-scaling)"))
    initial = controller.initial_executors()
    if initial is not None:
        start_executors(actuators.executors, actuators.hosts, initial, log)
    return actuators


# How long the start-up count must hold before the clock starts. The master's first grant launches an executor on
# every free worker at once, but on a loaded machine their JVMs register seconds apart (CI saw the second ~2 s
# after a 1 s window had closed); one arriving later still is killed at the first batch's observation.
START_STABLE_S = 5.0


def start_executors(executors: ExecutorActuator, hosts: HostActuator | None, n: int,
                    log: Callable[[str], None], timeout_s: float = 120.0) -> None:
    """Bring the application to the controller's initial executor count before the clock starts (a standalone
    master grants every free core at first; surplus executors are killed, missing ones come from new hosts)."""
    deadline = time.monotonic() + timeout_s
    while not (active := executors.observe()):  # the first executors register shortly after the application starts
        if time.monotonic() > deadline:
            raise RunFailed(f"no executor registered within {timeout_s:.0f} s: does the cluster have a free "
                                "core?")
        time.sleep(0.25)
    free = hosts.cluster.free_cores() if hosts is not None else 0
    have = len(active)
    executors.set_total(n, record=False)
    if hosts is not None and n > have:
        hosts.grow_for(n - have, free)
    try:
        active = executors.wait_for(n, timeout_s, stable_s=START_STABLE_S)
    except TimeoutError as exc:
        raise RunFailed(f"initial executors: {exc} (the cluster has too few free cores; add workers or use "
                            "--host-scaling)") from None
    log(f"executors: {len(active)} active ({', '.join(v.id for v in active)}), set by the controller")
