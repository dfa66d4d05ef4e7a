"""Rescaling a native query by restart: hold the source → the query at rest on a committed batch → stop →
repartition the checkpoint's state to n (Spark 4.2's StreamingCheckpointManager) → start from the same checkpoint
with `spark.sql.shuffle.partitions = n` → first batch. Each phase is measured; their sum is the downtime a
controller pays for a change (what Flink's autoscaler calls the restart time).

Why hold the source first: Spark stops a query by interrupting it, and a batch cut short leaves its offsets without
a commit, which the repartition refuses (STATE_REPARTITION_INVALID_CHECKPOINT.LAST_BATCH_FAILED). With the source
held, the batch in flight finishes, no new one starts, and the stop lands on a boundary. Should a batch still have
been cut (a no-data batch Spark runs to advance the watermark), the query is started again at its old partitions
to finish it, and the stop retried.

A restart that fails half-way leaves a checkpoint that the next start resumes: the repartition writes its batch
whole or not at all (Spark's offset and commit logs), and the sink is idempotent per batch (jobs.sink).
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from jobs.native import checkpoint as ck

STOP_ATTEMPTS = 3
REPARTITION_ATTEMPTS = 2  # a repartition that raised is retried once (Spark's own advice), then the rescale fails
REST_TIMEOUT_S = 120.0  # how long a held query may take to finish its batch in flight
FIRST_BATCH_TIMEOUT_S = 300.0


class RescaleFailed(RuntimeError):
    pass


@dataclass
class Restart:
    """One restart of the query, measured: phases in seconds, from the hold to the first batch committed after."""

    from_partitions: int
    to_partitions: int
    after_batch: int | None = None  # the last batch committed before the stop (Spark's id)
    hold_s: float = 0.0  # source held until the query rested on a committed batch
    stop_s: float = 0.0
    repartition_s: float = 0.0
    start_s: float = 0.0  # start() until the query was active
    first_batch_s: float = 0.0  # active until its first batch committed
    stop_attempts: int = 1
    repartition_attempts: int = 0
    started_at: float = field(default=0.0, repr=False)

    @property
    def downtime_s(self) -> float:
        return self.hold_s + self.stop_s + self.repartition_s + self.start_s + self.first_batch_s

    def record(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "started_at"}
        out["downtime_s"] = self.downtime_s
        out["repartitioned"] = self.from_partitions != self.to_partitions
        return out


def spark_reason(exc: BaseException) -> str:
    """The line that says why, from a Py4J error's text: the Java exception's message without its package, not
    "An error occurred while calling o297.repartition"."""
    for line in str(exc).splitlines():
        found = re.search(r"(?:[a-z]\w*\.)+(\w*(?:Exception|Error): .+)", line)
        if found:
            return found.group(1).strip()[:300]
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def interrupted_repartition(checkpoint: Path) -> int | None:
    """The partition count of a repartition that did not finish, or None. Its batch is planned but not committed,
    and copies the batch before it (same source offsets, batch time and watermark) with another partition count;
    Spark refuses to start the query on such a checkpoint until the repartition is retried to its end."""
    last, committed = ck.last_planned(checkpoint), ck.last_committed(checkpoint)
    if last is None or last == committed or not last:
        return None
    this, before = ck.read_offsets(checkpoint, last), ck.read_offsets(checkpoint, last - 1)
    if before is None or this.source != before.source or this.partitions == before.partitions:
        return None
    same_time = all(this.metadata.get(k) == before.metadata.get(k) for k in ("batchTimestampMs", "batchWatermarkMs"))
    return this.partitions if same_time else None


class RestartingQuery:
    """The running native query, restartable at a new partition count.

    `start_stream()` defines and starts the query (readStream ... writeStream.start()) under the session's current
    settings; `hold_file` is the replay source's hold; `last_batch()` says which batch the sink committed last (and
    waits for the next)."""

    def __init__(self, spark, start_stream: Callable[[], object], checkpoint: Path, hold_file: Path,
                 wait_for_batch_after: Callable[[int | None, float], tuple[int, float] | None],
                 total_events: int | None = None):
        self.spark = spark
        self.total_events = total_events  # the replay's length: once every event is read, no batch follows
        self.start_stream = start_stream
        self.checkpoint = Path(checkpoint)
        self.hold_file = Path(hold_file)
        self.wait_for_batch_after = wait_for_batch_after
        self.query = None
        self.partitions: int | None = None

    def start(self, partitions: int):
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, got {partitions}")
        self.spark.conf.set(ck.SHUFFLE_PARTITIONS, str(partitions))
        self.hold_file.unlink(missing_ok=True)
        self.query = self.start_stream()
        self.partitions = partitions
        return self.query

    def resume(self, default_partitions: int) -> int:
        """Start the query on whatever checkpoint is there: new (at `default_partitions`), left by a stop or a crash
        (at the partitions it ran with), or left by a repartition cut short (which is retried first: Spark's
        own instruction). Returns the partitions it runs at."""
        unfinished = interrupted_repartition(self.checkpoint)
        if unfinished is not None:
            # the state store's coordinator lives in the session's streaming query manager, which Spark makes on
            # first use; a repartition in a session that never started a query finds no coordinator without it
            self.spark.streams.active  # noqa: B018
            self.spark._streamingCheckpointManager.repartition(str(self.checkpoint), unfinished)
        partitions = ck.partitions_of(self.checkpoint) or default_partitions
        self.start(partitions)
        return partitions

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()

    def rescale(self, partitions: int, repartition: bool = True) -> Restart:
        """Restart the query at `partitions` (repartition=False and the same count: a plain restart, the
        baseline a rescale is compared with)."""
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, got {partitions}")
        restart = Restart(self.partitions, partitions, started_at=time.time())
        for attempt in range(1, STOP_ATTEMPTS + 1):
            restart.stop_attempts = attempt
            t0 = time.time()
            self._come_to_rest()
            t1 = time.time()
            self.query.stop()
            t2 = time.time()
            restart.hold_s += t1 - t0
            restart.stop_s += t2 - t1
            if ck.ends_on_a_commit(self.checkpoint):
                break
            # a batch was cut: run it to its end at the old partitions, then try again
            before = ck.last_committed(self.checkpoint)
            self.start(self.partitions)
            if self.next_batch(before, REST_TIMEOUT_S) is None:
                raise RescaleFailed("the query did not finish its interrupted batch after a restart")
        else:
            raise RescaleFailed(f"the query could not be stopped on a batch boundary in {STOP_ATTEMPTS} attempts")
        restart.after_batch = ck.last_committed(self.checkpoint)
        if repartition and partitions != self.partitions:
            t = time.time()
            for attempt in range(1, REPARTITION_ATTEMPTS + 1):
                restart.repartition_attempts = attempt
                try:
                    self.spark._streamingCheckpointManager.repartition(str(self.checkpoint), partitions)
                    break
                except Exception as exc:
                    if attempt == REPARTITION_ATTEMPTS:
                        raise RescaleFailed(f"the repartition to {partitions} failed {attempt} times; the "
                                            "checkpoint resumes once it is retried to its end (RestartingQuery."
                                            f"resume): {spark_reason(exc)}") from exc
            restart.repartition_s = time.time() - t
        before = ck.last_committed(self.checkpoint)  # the repartition's own batch, when it ran
        t = time.time()
        self.start(partitions)
        restart.start_s = time.time() - t
        if self.source_exhausted():  # every event was read before the stop: no batch will come, none is waited for
            return restart
        t = time.time()
        first = self.next_batch(before, FIRST_BATCH_TIMEOUT_S)
        if first is None:
            raise RescaleFailed(f"no batch committed {FIRST_BATCH_TIMEOUT_S:.0f} s after the restart")
        restart.first_batch_s = max(0.0, first[1] - t)  # a batch may commit before start() returns
        return restart

    def source_exhausted(self) -> bool:
        """Whether the batches committed so far read every event of the replay (a rescale at the stream's end)."""
        last = ck.last_committed(self.checkpoint)
        offsets = ck.read_offsets(self.checkpoint, last) if last is not None else None
        return self.total_events is not None and offsets is not None and offsets.events >= self.total_events

    def next_batch(self, after: int | None, timeout_s: float) -> tuple[int, float] | None:
        """The first batch committed with an id above `after`: (id, when), None after `timeout_s`; raises the
        query's exception if it fails meanwhile."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            found = self.wait_for_batch_after(after, min(0.25, max(0.0, deadline - time.time())))
            if found is not None:
                return found
            if not self.query.isActive:
                self.query.awaitTermination()
                raise RescaleFailed("the streaming query stopped")
        return None

    def settle(self, trigger_s: float, rounds: int = 5) -> None:
        """At the end of the stream: hold the source and let Spark run what it still runs without new data (a batch
        that advances the watermark and emits the windows it closes), until a trigger passes with no batch."""
        for _ in range(rounds):
            self._come_to_rest()
            last = ck.last_committed(self.checkpoint)
            time.sleep(trigger_s + 0.3)
            if ck.last_planned(self.checkpoint) == last and not self.query.status.get("isTriggerActive"):
                return

    def _come_to_rest(self) -> None:
        """Hold the source and wait until the last batch Spark planned is committed and no trigger runs."""
        self.hold_file.write_text("held for a restart")
        deadline = time.time() + REST_TIMEOUT_S
        while time.time() < deadline:
            if not self.query.isActive:
                self.query.awaitTermination()  # raises the query's exception
                raise RescaleFailed("the query stopped by itself while held")
            if not self.query.status.get("isTriggerActive") and ck.ends_on_a_commit(self.checkpoint):
                return
            time.sleep(0.01)
        raise RescaleFailed(f"the held query did not come to rest in {REST_TIMEOUT_S:.0f} s")
