"""A native query: the user's function from `MODULE:FUNCTION`, given the replayed events as a streaming DataFrame.

The function is what a Spark team writes anyway:

    def build(events):                      # events: event_id, arrival_ts, key, payload (jobs.replay_source)
        return (events.withWatermark("arrival_ts", "2 seconds")
                .groupBy(F.window("arrival_ts", "5 seconds"), "key").count())

It returns the streaming DataFrame, or (DataFrame, output mode) when the mode is not "append". A function with a
second parameter also receives the run's `Workload` (spec, seed, schedule), for queries that derive their events
from the replayed ids (queries.native_nexmark). Everything wrong with it is a NativeQueryError naming the reference,
raised before the stream starts.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from queries.api import QueryError
from queries.loading import import_reference

OUTPUT_MODES = ("append", "update", "complete")
NATIVE_OPERATOR = "query"  # the one operator a controller sees: its degree is the query's partition count
SHORTHANDS = {"native": "queries.native"}


class NativeQueryError(QueryError):
    """A native query that cannot run, said in one line (exit 2)."""


@dataclass(frozen=True)
class Workload:
    """What the run replays, for a query function that asks for it: the spec, its seed, and the schedule's state
    (so Spark's workers rebuild the schedule without trace files: queries.api.ScheduleRef)."""

    spec: Any
    schedule_state: str

    @property
    def seed(self) -> int:
        return self.spec.seed


@dataclass(frozen=True)
class NativeQuery:
    ref: str
    function: Callable
    takes_workload: bool
    module: Any

    @property
    def name(self) -> str:
        return self.ref.rpartition(":")[2]

    def define(self, events, workload: Workload) -> tuple[Any, str]:
        """The user's streaming DataFrame and its output mode, checked."""
        try:
            result = self.function(events, workload) if self.takes_workload else self.function(events)
        except NativeQueryError:
            raise
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise NativeQueryError(f"--spark-query {self.ref}: {self.name}() failed: {type(exc).__name__}: "
                                   f"{first}") from None
        df, mode = result if isinstance(result, tuple) and len(result) == 2 else (result, "append")
        from pyspark.sql import DataFrame

        if not isinstance(df, DataFrame):
            raise NativeQueryError(f"--spark-query {self.ref}: {self.name}() returned {type(df).__name__}, not a "
                                   "streaming DataFrame (or a pair DataFrame, output mode)")
        if not df.isStreaming:
            raise NativeQueryError(f"--spark-query {self.ref}: {self.name}() returned a batch DataFrame; build it "
                                   "on the `events` it is given, which are a stream")
        if mode not in OUTPUT_MODES:
            raise NativeQueryError(f"--spark-query {self.ref}: output mode {mode!r} is not one of "
                                   f"{', '.join(OUTPUT_MODES)}")
        return df, mode


def load_native_query(ref: str) -> NativeQuery:
    """The function behind `MODULE:FUNCTION` (a module on the path, a .py file, or native:NAME for the shipped
    examples in queries.native)."""
    module_name, sep, function = ref.rpartition(":")
    if not sep or not module_name or not function:
        raise NativeQueryError(f"--spark-query {ref!r}: expected MODULE:FUNCTION (e.g. my_job:build, "
                               "path/to/my_job.py:build or native:windowed_count)")
    try:
        module = import_reference(SHORTHANDS.get(module_name, module_name), ref, flag="--spark-query")
    except QueryError as exc:
        raise NativeQueryError(str(exc)) from None
    build = getattr(module, function, None)
    if build is None or not callable(build):
        listed = getattr(module, "QUERIES", None)
        choices = f"; it has {', '.join(listed)}" if listed else ""
        raise NativeQueryError(f"--spark-query {ref!r}: module {module.__name__!r} ({module.__file__}) has no "
                               f"function {function!r}{choices}")
    try:
        params = [p for p in inspect.signature(build).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if not 1 <= len(params) <= 2:
        raise NativeQueryError(f"--spark-query {ref!r}: {function}() must take the events DataFrame (and optionally "
                               f"the workload), it takes {len(params)} parameter(s)")
    return NativeQuery(ref, build, len(params) == 2, module)
