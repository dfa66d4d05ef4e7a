"""Hosts as a scaling level (ARCHITECTURE step 5, host level): when an executor target needs more cores than the
standalone cluster has free, start worker processes; when workers this run added sit idle, stop them.

A worker here is a process on this machine, so its real start-up (JVM start, registration with the master) is
measured; `provisioning_delay_s` stands for what a cloud adds before that (a VM booting) and is waited first.
Only workers this actuator started are ever removed, and all of them are removed when the run ends, so a run
leaves the cluster as it found it.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from controllers.actuation import Outcome


@dataclass(frozen=True)
class HostEvent:
    action: str  # "added", "removed" or "add-failed"
    worker: str
    requested_s: float  # when the run asked for it (epoch seconds)
    done_s: float  # when the master saw it ALIVE, or when it was stopped
    start_s: float | None = None  # the worker process' own start-up, without the configured delay
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "worker": self.worker, "requested_s": round(self.requested_s, 3),
                "done_s": round(self.done_s, 3), "delay_s": round(self.done_s - self.requested_s, 3),
                "start_s": None if self.start_s is None else round(self.start_s, 3), "error": self.error}


class HostActuator:
    """Grows and shrinks a StandaloneCluster (deploy/spark_cluster.py) for one run.

    As an actuator (controllers.actuation) it follows the decisions' executor counts: placed before the executor
    actuator in the loop, it reads the free cores before the executors are requested (the master may hand free
    cores to them at once) and starts the workers that are missing; once the executors are at their target and
    no change is pending, it stops the workers this run added that sit idle."""

    name = "hosts"

    def __init__(self, cluster, provisioning_delay_s: float = 0.0, log: Callable[[str], None] = print,
                 executors=None):
        self.cluster = cluster
        self.provisioning_delay_s = provisioning_delay_s
        self.log = log
        self.executors = executors  # the ExecutorActuator whose targets this follows
        self.added: list[str] = []
        self.events: list[HostEvent] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._outcomes: list[tuple[Outcome, float]] = []  # (outcome, when requested: epoch seconds)
        self.anchor_s = 0.0  # epoch seconds of run time 0, to report run times

    def apply(self, record) -> Outcome | None:
        target, executors = record.executors, self.executors
        if target is None or executors is None:
            return None
        active = executors.last_active
        if target != executors.target:
            if target <= len(active):
                return None
            requested = time.time()
            workers = self.grow_for(target - len(active), self.cluster.free_cores(), requested)
            if not workers:
                return None
            outcome = Outcome(self.name, "applied", {"add_workers": workers}, record.time_s,
                              note=f"after --host-provisioning-delay {self.provisioning_delay_s:g} s")
            self._outcomes.append((outcome, requested))
            return outcome
        if self.added and len(active) <= target and not executors.ledger.pending():
            released = self.release_idle()
            if released:
                outcome = Outcome(self.name, "applied", {"remove_workers": released}, record.time_s,
                                  effective_s=time.time() - self.anchor_s)
                return outcome
        return None

    def settle(self) -> None:
        """Fill in when the workers asked for joined the cluster (ALIVE at the master)."""
        for outcome, requested in self._outcomes:
            joined = [e for e in self.events if e.action == "added" and e.requested_s == requested]
            failed = [e for e in self.events if e.action == "add-failed" and e.requested_s == requested]
            if joined:
                outcome.effective_s = max(e.done_s for e in joined) - self.anchor_s
                outcome.measured = {"workers": [e.worker for e in joined]}
            if failed:
                outcome.status = "failed" if not joined else outcome.status
                outcome.note = "; ".join(e.error or "" for e in failed)[:300]

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": True,
                "how": f"start/stop standalone workers ({self.cluster.worker_cores} core(s) each) after a "
                       f"provisioning delay of {self.provisioning_delay_s:g} s"}

    def grow_for(self, cores_needed: int, free_cores: int | None = None, requested_s: float | None = None) -> int:
        """Start enough workers (in the background) for `cores_needed` more cores than are free or already on
        their way; returns how many workers were asked for. Pass `free_cores` as read before the executors were
        requested: the master may already have given the free cores to them."""
        with self._lock:
            coming = sum(1 for t in self._threads if t.is_alive()) * self.cluster.worker_cores
        free = self.cluster.free_cores() if free_cores is None else free_cores
        missing = cores_needed - free - coming
        if missing <= 0:
            return 0
        workers = math.ceil(missing / self.cluster.worker_cores)
        requested = time.time() if requested_s is None else requested_s
        for _ in range(workers):
            thread = threading.Thread(target=self._add_one, args=(requested,), name="host-provisioning", daemon=True)
            with self._lock:
                self._threads.append(thread)
            thread.start()
        self.log(f"hosts: {workers} worker(s) requested for {missing} missing core(s)")
        return workers

    def _add_one(self, requested_s: float) -> None:
        time.sleep(self.provisioning_delay_s)
        try:
            with self._lock:  # one at a time: the cluster names workers by their count
                name, took = self.cluster.add_worker()
                self.added.append(name)
                self.events.append(HostEvent("added", name, requested_s, time.time(), took))
            self.log(f"hosts: {name} ALIVE {time.time() - requested_s:.1f} s after the request")
        except Exception as exc:  # noqa: BLE001 - a failed start is recorded, the run goes on short of cores
            with self._lock:
                self.events.append(HostEvent("add-failed", "", requested_s, time.time(), error=str(exc)[:300]))
            self.log(f"hosts: adding a worker failed: {exc}")

    def release_idle(self) -> list[str]:
        """Stop the workers this run added that run no executor any more (newest first)."""
        released = []
        with self._lock:
            for name in reversed(list(self.added)):
                worker = self.cluster.worker(name)
                if worker is not None and worker.get("coresused", 0) == 0:
                    requested = time.time()
                    self.cluster.remove_worker(name)
                    self.added.remove(name)
                    self.events.append(HostEvent("removed", name, requested, time.time()))
                    released.append(name)
        for name in released:
            self.log(f"hosts: idle {name} stopped")
        return released

    def close(self) -> None:
        """Wait for workers being started, then stop every worker this run added."""
        for thread in list(self._threads):
            thread.join(timeout=self.provisioning_delay_s + 120)
        with self._lock:
            for name in reversed(self.added):
                self.cluster.remove_worker(name)
                self.events.append(HostEvent("removed", name, time.time(), time.time()))
            self.added.clear()

    def summary(self) -> dict[str, float | None]:
        added = [e for e in self.events if e.action == "added"]
        delays = [e.done_s - e.requested_s for e in added]
        starts = [e.start_s for e in added if e.start_s is not None]
        return {
            "hosts_added": float(len(added)),
            "hosts_removed": float(sum(1 for e in self.events if e.action == "removed")),
            "host_add_failures": float(sum(1 for e in self.events if e.action == "add-failed")),
            "host_provisioning_delay_s_mean": sum(delays) / len(delays) if delays else None,
            "host_provisioning_delay_s_max": max(delays) if delays else None,
            "host_start_s_mean": sum(starts) / len(starts) if starts else None,
        }
