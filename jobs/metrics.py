"""Metric collection through Spark's own means: accumulators per operator, the streaming query listener per
batch, the status tracker for the degrees Spark actually ran, and psutil for the processes' CPU and memory.

Nothing here parses logs or guesses: the degree an operator ran with is the task count Spark reports for its
stage, which is how the reconfiguration delay is measured rather than assumed.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import psutil
from pyspark import AccumulatorParam, SparkContext
from pyspark.sql.streaming import StreamingQueryListener

from controllers.types import OperatorMetrics
from jobs.operators import EMPTY_STATS, merge_key_group_stats, merge_stats


class OperatorStatsParam(AccumulatorParam):
    """Merges per-task tuples (sums, counts, max task time, first start, last end) into per-operator totals."""

    def zero(self, value):
        return EMPTY_STATS

    def addInPlace(self, a, b):
        return merge_stats(a, b)


class OperatorStats:
    """One accumulator per operator, reset before each micro-batch and read after it."""

    def __init__(self, sc: SparkContext, operators: tuple[str, ...]):
        self.accumulators = {op: sc.accumulator(EMPTY_STATS, OperatorStatsParam()) for op in operators}
        self.observations: dict[str, Any] = {}  # DataFrame operators' input counts (jobs.operators.apply_query)
        self._inputs: dict[str, tuple[int, int]] = {}

    def reset(self) -> None:
        for acc in self.accumulators.values():
            acc.value = EMPTY_STATS
        self.observations = {}
        self._inputs = {}

    def absorb(self) -> None:
        """After the batch's action: each DataFrame operator's input rows (and, for a first operator, the sum of the
        event ids it read), as Spark's Observation counted them, in place of what its end-of-stage pass saw."""
        for op, observation in self.observations.items():
            got = observation.get
            self._inputs[op] = (int(got.get("records") or 0), int(got.get("event_id_sum") or 0))

    def read(self, degrees: dict[str, int], observed_tasks: dict[str, int] | None = None) -> tuple[OperatorMetrics, ...]:
        out = []
        for op in self.accumulators:
            r_in, r_out, _, _, busy, tasks, max_task, first, last = self.raw(op)
            span = (last - first) if tasks else 0.0
            out.append(OperatorMetrics(op, degrees[op], r_in, r_out, busy, tasks, max_task, span))
        return tuple(out)

    def raw(self, op: str) -> tuple:
        value = self.accumulators[op].value
        if op in self._inputs:
            records, id_sum = self._inputs[op]
            value = (records, *value[1:3], id_sum, *value[4:])
        return value


class KeyGroupStatsParam(AccumulatorParam):
    """Merges the keyed operator's per-task partition and key-group figures (jobs.operators.key_group_stats)."""

    def zero(self, value):
        return {"partitions": {}, "groups": {}, "where": {}}

    def addInPlace(self, a, b):
        return merge_key_group_stats(a, b)


class PlacementStats:
    """The keyed operator's figures per partition and key group, reset before each micro-batch and read after."""

    def __init__(self, sc: SparkContext):
        self.accumulator = sc.accumulator({"partitions": {}, "groups": {}, "where": {}}, KeyGroupStatsParam())

    def reset(self) -> None:
        self.accumulator.value = {"partitions": {}, "groups": {}, "where": {}}

    def read(self) -> dict:
        return self.accumulator.value


class StageTasks:
    """Task counts of the stages a micro-batch ran, read from Spark's status tracker by job group.

    The operators' stages are the last stages of the batch's job, one per chain of operators, in order (the first
    stage reads the source and shuffles for the first operator)."""

    def __init__(self, sc: SparkContext):
        self.sc = sc
        self.tracker = sc.statusTracker()
        # The lookups (a dozen JVM calls, ~20 ms) run on their own thread: the next batch must not wait for them.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stage-tasks")
        self._pending: list[Future] = []

    def start(self, batch_id: int) -> str:
        group = f"replay-batch-{batch_id}"
        self.sc.setJobGroup(group, f"micro-batch {batch_id}", interruptOnCancel=False)
        return group

    def per_operator(self, group: str, stages_of: list[tuple[str, ...]]) -> dict[str, int]:
        """Each operator's task count; `stages_of` lists the operators each of the batch's last stages ran (one
        per stage, more when operators were chained into one stage: jobs.operators.chains)."""
        stages = []
        for job_id in sorted(self.tracker.getJobIdsForGroup(group)):
            job = self.tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in sorted(job.stageIds):
                info = self.tracker.getStageInfo(stage_id)
                if info is not None and info.numTasks > 0:
                    stages.append((stage_id, info.numTasks))
        stages = sorted(set(stages))[-len(stages_of):]
        if len(stages) < len(stages_of):
            return {}
        return {op: tasks for chain, (_, tasks) in zip(stages_of, stages) for op in chain}

    def per_operator_later(self, group: str, stages_of: list[tuple[str, ...]],
                           done: Callable[[dict[str, int]], None]) -> None:
        """Look the task counts up in the background and hand them to `done`; `wait()` collects them all."""
        self._pending.append(self._pool.submit(lambda: done(self.per_operator(group, stages_of))))

    def wait(self) -> None:
        for future in self._pending:
            future.result()
        self._pending.clear()


class ProgressListener(StreamingQueryListener):
    """Keeps each batch's progress (durations, offsets, rows) as Spark reports it, keyed by batch id."""

    def __init__(self):
        self.progress: dict[int, dict[str, Any]] = {}
        self.terminated_exception: str | None = None
        self._lock = threading.Lock()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        p = event.progress
        durations = dict(p.durationMs or {})
        source = p.sources[0] if p.sources else None
        row = {f"spark_{k}_ms": float(v) for k, v in durations.items()}
        row["spark_num_input_rows"] = float(p.numInputRows)
        if source is not None:
            row["source_end_offset"] = _offset_events(source.endOffset)
        with self._lock:
            self.progress[int(p.batchId)] = row

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        self.terminated_exception = event.exception

    def snapshot(self) -> dict[int, dict[str, Any]]:
        with self._lock:
            return dict(self.progress)


def _offset_events(offset: Any) -> float | None:
    import json

    try:
        value = json.loads(offset) if isinstance(offset, str) else offset
        return float(value["events"])
    except (TypeError, ValueError, KeyError):
        return None


class ProcessSampler:
    """CPU (percent of one core, summed) and resident memory of this driver and every process it started
    (the JVM, the Python workers)."""

    REFRESH_S = 5.0  # how often the process tree is walked again (new Python workers appear on scale-up)

    def __init__(self):
        self.root = psutil.Process()
        self.cores = psutil.cpu_count() or 1  # cpu percent is summed over processes: up to 100 x cores
        self._known: dict[int, psutil.Process] = {}
        self._tree: list[psutil.Process] = []
        self._tree_at = float("-inf")

    def sample(self) -> tuple[float, float]:
        now = time.monotonic()
        if now - self._tree_at >= self.REFRESH_S:
            try:
                self._tree = self.root.children(recursive=True)
            except psutil.Error:
                self._tree = []
            self._tree_at = now
        procs = [self.root] + self._tree
        cpu = mem = 0.0
        alive = {}
        for proc in procs:
            cached = self._known.get(proc.pid, proc)
            try:
                cpu += cached.cpu_percent(None)
                mem += cached.memory_info().rss
                alive[proc.pid] = cached
            except psutil.Error:
                continue
        self._known = alive
        return cpu, mem / 2**20
