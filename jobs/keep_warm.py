"""Keeping Spark's Python workers alive through a silence in the load.

Spark's PythonWorkerFactory stops its pooled, idle Python workers once it has seen no activity for one minute
(`IDLE_WORKER_TIMEOUT_NS`, hard-coded, checked every 10 s; Spark 4.2 here). A streaming query runs no micro-batch
while nothing arrives, so after a silence of more than a minute the next batch starts its Python workers again.
On this machine that batch took 3.9 s for 3,396 events where the same batch takes about 0.8 s, and the one after
it, at degree 4, 4.1 s for 6,793 (the three workers it added started in its first stage): Alibaba LoRA, whose
runs skip 100 s of triggers, on 2026-12-02. No controller can size for that — it is neither the load nor the operators
— and burst sizing took the cold batch's fixed cost as the next one's.

So while no batch has run for `interval_s`, the driver runs a tiny batch job through the same query (the
warm-up's, on 100 events, at the warm-up's degree, so that on a cluster its tasks are spread over the executors,
each of whose factories times out on its own; not measured on a cluster): a task taking a pooled worker and
giving it back is activity, and the factory keeps every idle worker. Not when a batch is due within
`clearance_s` (the ping would take slots from it), nor when the controller changes executors (a job every half minute keeps an executor from ever being
idle, so Spark's dynamic allocation would never release one). The project's choice is 30 s: half the timeout,
so that the 10-s check and a ping skipped for a due batch still leave a margin.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

SPARK_IDLE_WORKER_TIMEOUT_S = 60.0  # PythonWorkerFactory.IDLE_WORKER_TIMEOUT_NS
SPARK_IDLE_CHECK_S = 10.0  # its MonitorThread's sleep


@dataclass
class KeepWarm:
    """When to ping (`due`), and the pings' record. `ping` runs the job; `tick` asks and runs it if due."""

    ping: Callable[[], None]
    interval_s: float
    clearance_s: float
    pings: int = 0
    ping_s: float = 0.0
    _last_ping: float | None = field(default=None, repr=False)

    def due(self, now: float, last_activity: float | None, batch_running: bool, next_batch_in_s: float | None
            ) -> bool:
        """Whether a ping is due at wall time `now`: the workers have been idle for `interval_s` (since the last
        batch's end or ping, `last_activity`; None before the first batch, when the warm-up's workers are fresh),
        no batch is running, and none is due within `clearance_s` (`next_batch_in_s`: None when no more events
        are scheduled)."""
        if self.interval_s <= 0 or batch_running or last_activity is None:
            return False
        since = max(last_activity, self._last_ping or last_activity)
        if now - since < self.interval_s:
            return False
        return next_batch_in_s is None or next_batch_in_s > self.clearance_s

    def tick(self, now: float, last_activity: float | None, batch_running: bool,
             next_batch_in_s: float | None) -> bool:
        if not self.due(now, last_activity, batch_running, next_batch_in_s):
            return False
        began = time.monotonic()
        self.ping()
        took = time.monotonic() - began
        self._last_ping = now + took  # the workers' last activity: the ping's end, on the caller's clock
        self.pings += 1
        self.ping_s += took
        return True

    def summary(self) -> dict[str, float]:
        return {"keep_warm_pings": float(self.pings), "keep_warm_ping_s": self.ping_s}
