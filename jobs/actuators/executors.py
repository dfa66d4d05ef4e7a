"""Executors as a scaling level (ARCHITECTURE step 5, process level): set their number through Spark's executor
request and kill API, and measure what each change cost from Spark's own record of its executors.

Spark's record is its status store, which its listener events (executor added and removed, task start and end)
feed and the driver's REST API serves: every executor with the time it registered, the time it was removed and
its task counts. Reading it through the REST API gives the same view for our controllers' runs and for Spark's
dynamic allocation, so the executor count over time is recorded the same way whoever decides it.

Delays of a change decided at time d (the driver's clock, like Spark's own timestamps):
- provisioning delay: d -> the last executor added for it registered with the driver (Spark's addTime);
- first-task delay: d -> each of them has run a task (seen by polling every POLL_S while a change is pending, so
  it is an upper bound within POLL_S plus one REST call);
- release delay: d -> the last executor removed for it is gone (Spark's removeTime).
The ledger that pairs decisions with executors is pure and unit-tested; the actuator is its Spark half.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from controllers.actuation import Outcome

POLL_S = 0.25


def spark_time(text: str | None) -> float | None:
    """Spark's REST timestamps ('2026-11-24T21:30:00.123GMT') as epoch seconds."""
    if not text:
        return None
    stamp = datetime.strptime(text.removesuffix("GMT"), "%Y-%m-%dT%H:%M:%S.%f")
    return stamp.replace(tzinfo=timezone.utc).timestamp()


@dataclass(frozen=True)
class ExecutorView:
    """One executor as Spark's status store records it."""
    id: str
    add_time_s: float
    remove_time_s: float | None
    active: bool
    cores: int
    total_tasks: int  # tasks it has run or is running
    host_port: str = ""

    @classmethod
    def from_rest(cls, raw: dict[str, Any]) -> "ExecutorView":
        return cls(id=str(raw["id"]), add_time_s=spark_time(raw.get("addTime")) or 0.0,
                   remove_time_s=spark_time(raw.get("removeTime")), active=bool(raw.get("isActive")),
                   cores=int(raw.get("totalCores", 0)), host_port=str(raw.get("hostPort", "")),
                   total_tasks=int(raw.get("totalTasks", 0)) + int(raw.get("activeTasks", 0)))


@dataclass
class Change:
    """A decided executor count and the executors Spark added or removed for it."""
    batch_id: int
    decided_s: float
    before: int
    target: int
    executors: list[str] = field(default_factory=list)
    registered_s: float | None = None  # scale-out: the last of its executors registered
    first_task_s: float | None = None  # scale-out: the last of its executors ran a task
    released_s: float | None = None  # scale-in: the last of its executors was removed

    @property
    def direction(self) -> str:
        return "out" if self.target > self.before else "in"

    @property
    def complete(self) -> bool:
        if self.target == self.before:
            return True
        return self.first_task_s is not None if self.direction == "out" else self.released_s is not None

    def to_dict(self) -> dict[str, Any]:
        def delay(t):
            return None if t is None else round(t - self.decided_s, 3)

        return {"batch_id": self.batch_id, "decided_s": round(self.decided_s, 3), "before": self.before,
                "target": self.target, "direction": self.direction, "executors": self.executors,
                "provisioning_delay_s": delay(self.registered_s), "first_task_delay_s": delay(self.first_task_s),
                "release_delay_s": delay(self.released_s), "complete": self.complete}


class ExecutorLedger:
    """Pairs each decided change with the executors Spark added (scale-out) or removed (scale-in) after it, in
    order, and keeps the time each executor was first seen running a task. Executors Spark started or lost on its
    own (a crash, a replacement) are counted but attributed to no decision."""

    def __init__(self):
        self.changes: list[Change] = []
        self.views: dict[str, ExecutorView] = {}
        self.first_task_s: dict[str, float] = {}
        self._added_for: set[str] = set()
        self._removed_for: set[str] = set()
        self.started_s: float | None = None  # when the measured part of the run began (start-up changes excluded)
        self.unasked_kills: list[str] = []  # executors above the target that no decision asked for, killed

    def decided(self, batch_id: int, decided_s: float, before: int, target: int) -> Change:
        change = Change(batch_id, decided_s, before, target)
        self.changes.append(change)
        return change

    def observe(self, views: Iterable[ExecutorView], now_s: float) -> None:
        for view in views:
            self.views[view.id] = view
            if view.total_tasks > 0 and view.id not in self.first_task_s:
                self.first_task_s[view.id] = now_s
        self._attribute()

    def pending(self) -> bool:
        return any(not c.complete for c in self.changes)

    def active(self) -> list[ExecutorView]:
        return sorted((v for v in self.views.values() if v.active), key=lambda v: (v.add_time_s, v.id))

    def _attribute(self) -> None:
        for change in self.changes:
            if change.complete:
                continue
            if change.direction == "out":
                if self._claim(change, lambda v: v.add_time_s, self._added_for):
                    change.registered_s = max(self.views[e].add_time_s for e in change.executors)
                    if all(e in self.first_task_s for e in change.executors):
                        change.first_task_s = max(self.first_task_s[e] for e in change.executors)
            elif self._claim(change, lambda v: v.remove_time_s, self._removed_for):
                change.released_s = max(self.views[e].remove_time_s for e in change.executors)

    def _claim(self, change: Change, event_s: Callable[[ExecutorView], float | None], claimed: set[str]) -> bool:
        """Give `change` the unclaimed executors whose event (added, or removed) came first after its decision;
        True once it has as many as it changed."""
        needed = abs(change.target - change.before)
        candidates = sorted((v for v in self.views.values() if v.id not in claimed and event_s(v) is not None
                             and event_s(v) >= change.decided_s), key=lambda v: (event_s(v), v.id))
        for view in candidates[: needed - len(change.executors)]:
            change.executors.append(view.id)
            claimed.add(view.id)
        return len(change.executors) == needed

    def summary(self) -> dict[str, float | None]:
        """The run's executor metrics (MLflow summary): delays per direction, counts, unattributed changes."""
        out_changes = [c for c in self.changes if c.direction == "out" and c.target != c.before]
        in_changes = [c for c in self.changes if c.direction == "in"]

        def stats(name: str, values: list[float]) -> dict[str, float | None]:
            return {f"{name}_mean": sum(values) / len(values) if values else None,
                    f"{name}_max": max(values) if values else None}

        since = self.started_s if self.started_s is not None else float("-inf")
        views = list(self.views.values())
        return {
            "executor_changes": float(len(out_changes) + len(in_changes)),
            "executor_changes_incomplete": float(sum(1 for c in self.changes if not c.complete)),
            **stats("executor_provisioning_delay_s",
                    [c.registered_s - c.decided_s for c in out_changes if c.registered_s is not None]),
            **stats("executor_first_task_delay_s",
                    [c.first_task_s - c.decided_s for c in out_changes if c.first_task_s is not None]),
            **stats("executor_release_delay_s",
                    [c.released_s - c.decided_s for c in in_changes if c.released_s is not None]),
            "executors_added": float(sum(1 for v in views if v.add_time_s >= since)),
            "executors_removed": float(sum(1 for v in views if v.remove_time_s is not None
                                           and v.remove_time_s >= since)),
            "executors_killed_unasked": float(len(self.unasked_kills)),
        }


def read_executors(sc) -> list[ExecutorView]:
    """Every executor of the application as Spark's status store records it (the driver's REST API)."""
    if not sc.uiWebUrl:
        raise RuntimeError("executor observation needs the Spark UI (spark.ui.enabled=true): its REST API "
                           "serves the executors' record")
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/allexecutors"
    with urllib.request.urlopen(url, timeout=10) as response:
        raw = json.load(response)
    return [ExecutorView.from_rest(e) for e in raw if e.get("id") != "driver"]


class ExecutorActuator:
    """Sets the number of executors of a running application (Spark's developer API: requestTotalExecutors and
    killExecutor, which a cluster manager honours without dynamic allocation) and observes them through the
    driver's REST API. Scale-in removes the newest executors: on a grown cluster they sit on the hosts that were
    added last, so those hosts empty first and can be released."""

    name = "executors"

    def __init__(self, sc):
        self.sc = sc
        self.jsc = sc._jsc.sc()
        self.ledger = ExecutorLedger()
        self.target: int | None = None
        self._lock = threading.Lock()
        self._poller: threading.Thread | None = None
        self._closed = threading.Event()
        self._outcomes: list[tuple[Outcome, Change]] = []
        self.last_active: list[ExecutorView] = []  # as observed after the last batch

    def observe(self) -> list[ExecutorView]:
        """Read Spark's record now; returns the active executors, oldest first. Executors above the target that
        no pending change explains are killed (see _kill_unasked)."""
        views = read_executors(self.sc)
        with self._lock:
            self.ledger.observe(views, time.time())
            self.last_active = self.ledger.active()
            surplus = ([v for v in self.last_active[self.target:] if v.id not in self.ledger.unasked_kills]
                       if self.target is not None and not self.ledger.pending() else [])
            self.ledger.unasked_kills.extend(v.id for v in surplus)  # claimed under the lock: the poller observes too
        if surplus:
            self._kill_unasked(surplus)
        return self.last_active

    def _kill_unasked(self, surplus: list[ExecutorView]) -> None:
        """A standalone master grants every free core when the application starts; an executor of that first
        grant can register after the start-up's count looked settled (seen in CI: the second worker's JVM came up
        ~2 s after the first on a loaded machine) and would then run the whole measurement above the
        controller's count. Killed newest first, like a scale-in, and once (observe claims them in the ledger's
        unasked removals first: Spark lists a killed executor as active until it is gone)."""
        for view in reversed(surplus):
            self.jsc.killExecutor(view.id)
        self._request_total(self.target)  # each kill lowered the target by one: set it back

    def _request_total(self, n: int) -> None:
        empty = self.sc._jvm.PythonUtils.toScalaMap(self.sc._jvm.java.util.HashMap())
        if not self.jsc.requestTotalExecutors(n, 0, empty):
            raise RuntimeError(f"Spark refused to set the executor target to {n} (is dynamic allocation on, or "
                               "the master local?)")

    # the actuator contract (controllers.actuation): a decision's executor count, applied and measured

    def apply(self, record) -> Outcome | None:
        """Apply the decision's executor count when it differs from the current target; the outcome takes effect
        when Spark registered (scale-out) or removed (scale-in) the executors, as its status store records."""
        if record.executors is None or record.executors == self.target:
            return None
        try:
            change = self.set_total(record.executors, record.batch_id)
        except RuntimeError as exc:
            return Outcome(self.name, "failed", record.executors, record.time_s, note=str(exc)[:300])
        outcome = Outcome(self.name, "applied", record.executors, record.time_s)
        self._outcomes.append((outcome, change))
        return outcome

    def settle(self) -> None:
        """Fill in when each change took effect (run time), now that the run is over."""
        anchor = self.ledger.started_s or 0.0
        for outcome, change in self._outcomes:
            done = change.registered_s if change.direction == "out" else change.released_s
            outcome.effective_s = None if done is None else done - anchor
            outcome.measured = change.to_dict()
            if not change.complete:
                outcome.note = "incomplete: Spark did not register or remove every executor before the run ended"

    def describe(self) -> dict[str, Any]:
        return {"actuator": self.name, "available": True,
                "how": "requestTotalExecutors / killExecutor (newest surplus first), measured from Spark's status "
                       "store"}

    def set_total(self, n: int, batch_id: int = -1, record: bool = True) -> Change | None:
        """Ask for n executors: raise the target, or lower it and kill the newest surplus executors now."""
        active = self.observe()
        change = None
        with self._lock:
            if record:
                change = self.ledger.decided(batch_id, time.time(),
                                             self.target if self.target is not None else len(active), n)
            self.target = n
        self._request_total(n)
        surplus = active[n:] if len(active) > n else []
        for view in reversed(surplus):
            self.jsc.killExecutor(view.id)
        if surplus:
            self._request_total(n)  # each kill lowered the target by one: set it back to n
        if record:
            self._poll_while_pending()
        return change

    def _poll_while_pending(self) -> None:
        """Watch at POLL_S while a change is pending, so a new executor's first task is seen when it happens,
        not at the next batch's end."""
        if self._poller is not None and self._poller.is_alive():
            return

        def poll():
            while not self._closed.is_set():
                try:
                    self.observe()
                except OSError:
                    pass
                with self._lock:
                    if not self.ledger.pending():
                        return
                self._closed.wait(POLL_S)

        self._poller = threading.Thread(target=poll, name="executor-poller", daemon=True)
        self._poller.start()

    def wait_for(self, n: int, timeout_s: float, stable_s: float = 1.0) -> list[ExecutorView]:
        """Block until exactly n executors (the target, set before) are active for stable_s, killing late extras
        the cluster manager started before the target reached it; raise TimeoutError with what was there
        otherwise."""
        if self.target != n:
            raise ValueError(f"wait_for({n}) with the target at {self.target}: set the target first")
        deadline = time.monotonic() + timeout_s
        since = None
        while time.monotonic() < deadline:
            active = self.observe()  # kills extras above the target (n, set before this wait)
            if len(active) > n:
                since = None
            elif len(active) == n:
                since = since or time.monotonic()
                if time.monotonic() - since >= stable_s:
                    return active
            else:
                since = None
            time.sleep(POLL_S)
        raise TimeoutError(f"{len(self.observe())} executor(s) active instead of {n} after {timeout_s:.0f} s")

    def close(self) -> None:
        self._closed.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
