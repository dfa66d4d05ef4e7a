"""Settling on a covering vector: the least degree vector (found greedily) that, held unchanged, would have kept the
SLO over the recent arrivals, replayed on the operators' observed costs. Pure: arrays in, numbers out.

Why: where a change of degrees restarts the job (Flink's autoscaler restarts it), each action is paid in downtime,
and a controller that meets every burst with a raise and a return takes two actions per burst. The action budget
(studies/action_budget.py) shows that a static vector meets the SLO target on the bursty traces at 1.3-1.6x the
oracle's cost with no action at all; a controller cannot know that vector in advance, but it can learn it from what
has arrived: replay the arrivals it has seen through a micro-batch queue at a candidate vector, count the events
that would have been on time, and hold the least vector that reaches the target. It changes the vector only when
the one it holds would not have reached the target (a burst larger than any seen), or when a lower one would have
(the bursts it was sized for have left the memory).

The replay (`replay`): the arrivals are segments (start, end, events) spread evenly over each segment, as a
snapshot reports them (the events due between two batch ends); batches start on the trigger, or at once after one
that overran it, and each reads everything due; a batch of n source events takes the fixed cost plus, per operator,
its stage time at its degree (`StageModel`); an event is on time when its batch ends within the SLO of its arrival.
The last batch starts at the end of the arrivals (the batch about to read what is waiting
now). Approximations, each stated: no backlog before the memory
window, arrivals even within a snapshot's interval, the trigger grid restarted after an overrun (Spark's
ProcessingTime trigger does the same).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from controllers.types import ARRIVAL_BIN_S


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float, find: Callable) -> float:
    """y at x on the piecewise-linear curve through (xs, ys), xs ascending, held flat beyond its ends; `find`
    (bisect_right or bisect_left) picks the segment where xs repeat. `Arrivals` reads it both ways round."""
    i = find(xs, x)
    if i == 0:
        return ys[0] if ys else 0.0
    if i == len(xs):
        return ys[-1]
    x0, x1 = xs[i - 1], xs[i]
    return ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (x1 - x0)


@dataclass(frozen=True)
class Arrivals:
    """Cumulative arrivals: `times` ascending, `counts[i]` events due by `times[i]` (linear in between). Plain
    lists: the replay reads them one point at a time, where bisect beats numpy's per-call overhead."""

    times: tuple[float, ...]
    counts: tuple[float, ...]

    @classmethod
    def from_segments(cls, segments: Sequence[tuple[float, float, float]]) -> "Arrivals":
        """From contiguous (start, end, events) segments in time order; a gap between two is taken as no arrivals."""
        times, counts, total = [], [], 0.0
        for start, end, events in segments:
            if not times or start > times[-1]:
                times.append(start)
                counts.append(total)
            total += max(0.0, events)
            times.append(max(end, times[-1] + 1e-9))
            counts.append(total)
        return cls(tuple(times), tuple(counts))

    def due(self, t: float) -> float:
        return _interpolate(self.times, self.counts, t, bisect_right)

    def time_of(self, count: float) -> float:
        """The earliest time by which `count` events were due (the first time when none were)."""
        return _interpolate(self.counts, self.times, count, bisect_left)

    @property
    def total(self) -> float:
        return self.counts[-1] if self.counts else 0.0


@dataclass(frozen=True)
class StageModel:
    """Per operator: records per source event, busy seconds per record and per task, and the effective parallelism
    at each degree 1..len(speedups) (the guards' observed capacity curve, up to the slot bound; a degree beyond it
    adds waves, not speed: it has the last one's); plus the fixed cost of a batch."""

    fixed_s: float
    ratio: Mapping[str, float]
    per_record_s: Mapping[str, float]
    per_task_s: Mapping[str, float]
    speedups: Mapping[str, Sequence[float]]

    def stage_s(self, op: str, degree: int, events: float) -> float:
        return ((events * self.ratio[op] * self.per_record_s[op] + degree * self.per_task_s[op])
                / max(1e-9, self.speedups[op][min(degree, len(self.speedups[op])) - 1]))

    def batch_s(self, vector: Mapping[str, int], events: float) -> float:
        return self.fixed_s + sum(self.stage_s(op, vector[op], events) for op in self.ratio)


@dataclass(frozen=True)
class Replay:
    on_time: float
    judged: float
    largest_batch: float  # source events of the largest batch the replay ran
    span_s: float = 0.0  # the arrivals' time span
    late_since: float = 0.0  # late events among those that arrived at or after the replay's `since`
    late_last: float = 0.0  # of those, the ones the last batch (the one about to start, on what waits now) read
    late_next: float = 0.0  # of those, the projected batch's after it (`replay`'s next_rate), counted in late_since

    @property
    def attainment(self) -> float:
        return self.on_time / self.judged if self.judged > 0 else 1.0

    def share(self, window_s: float, late: float | None = None) -> float:
        """The share of a `window_s` window's events on time, the late ones (all the replay's, or `late`) counted
        against the events such a window carries at the replay's mean rate: an SLO error budget. Over a window fully
        seen it is the attainment; early in a run, a burst's late events are weighed against the window to come, not
        against the few seconds seen, so the first burst does not set the vector for a whole window."""
        if self.judged <= 0:
            return 1.0
        return 1.0 - (self.judged - self.on_time if late is None else late) / self.window_events(window_s)

    def window_events(self, window_s: float) -> float:
        """The events a `window_s` window carries at the replay's mean rate (at least those judged)."""
        return self.judged * (max(1.0, window_s / self.span_s) if self.span_s > 0 else 1.0)

    def new_share(self, window_s: float) -> float:
        """`share` counting only the late events that arrived since the replay's `since`: what the arrivals seen
        after a vector was chosen say against it (the ones before were weighed when it was chosen)."""
        return self.share(window_s, self.late_since)


def arrival_segments(start_s: float, end_s: float, events: int, profile: Sequence[int] | None, spread_s: float
                     ) -> list[tuple[float, float, float]]:
    """(start, end, events) segments of what became due between start_s and end_s: by the source's profile
    (ARRIVAL_BIN_S bins from start_s) when it gives one, else all of it evenly over the last `spread_s` seconds."""
    if profile:
        edges = [min(end_s, start_s + i * ARRIVAL_BIN_S) for i in range(len(profile))] + [end_s]
        return [(a, max(b, a), float(n)) for a, b, n in zip(edges[:-1], edges[1:], profile) if b > a or n]
    return [(max(start_s, end_s - spread_s), end_s, float(events))]


def replay(arrivals: Arrivals, batch_s: Callable[[float], float], trigger_s: float, slo_s: float,
           waiting_since: float | None = None, since: float | None = None,
           anchor: tuple[float, float] | None = None, next_rate: float = 0.0) -> Replay:
    """The micro-batch queue of the module's doc over `arrivals`, with `batch_s(events)` the time of a batch.

    waiting_since: at a batch start, the time from which the events now waiting arrived (the real queue read up to
    it): the queue is replayed up to it, and then the batch about to start, at the end of the arrivals, reads all of
    them at once, as it will — a fast vector's replay would otherwise read a waiting burst in trigger-sized pieces,
    each on time, and judge enough a vector on which the real batch is late.
    since: count apart (`Replay.late_since`) the late events that arrived at or after this time.
    anchor: (time, events waiting then): start the queue from the real one at that time — every arrival read but
    the last `events waiting` ones, the next batch starting then — instead of from an empty queue at the start of
    the arrivals. The arrivals before it are counted as judged and on time (they ran as they ran; `late_since`
    judges what came after). Why: a vector judged on the arrivals since it was chosen must not be judged behind a
    re-run of a batch that already ran at it; on Spark the real-time Google trace's opening batch (53,600 events at
    the vector chosen for it) was re-run at each candidate, the arrivals after it looked late, and every operator
    was raised to the slot bound about 30 s in. Ignored where the anchor is outside the arrivals.
    next_rate: with `waiting_since`, also the batch after the one about to start, on what arrives meanwhile at this
    rate (events/s, evenly): it starts at the next trigger or when the batch before ends, and its late events are
    judged (and counted apart, `Replay.late_next`). Why: a burst still arriving when a batch starts is more than the
    events waiting then; a vector sized on those alone has the next batch late, and on Spark the Alibaba trace's
    burst at ~118 s took a second raise 3.5 s after the first."""
    if len(arrivals.times) < 2:
        return Replay(0.0, 0.0, 0.0)
    now = float(arrivals.times[-1])
    horizon = now if waiting_since is None else min(now, max(float(arrivals.times[0]), waiting_since))
    mark = float(arrivals.times[0]) if since is None else since
    read_until = float(arrivals.times[0])
    start = read_until + trigger_s
    on_time = judged = largest = late_since = late_last = 0.0
    if anchor is not None and read_until < anchor[0] < horizon:
        read_until = max(read_until, arrivals.time_of(max(0.0, arrivals.due(anchor[0]) - anchor[1])))
        start = anchor[0]
        on_time = judged = arrivals.due(read_until)
        mark = max(mark, anchor[0] - slo_s)  # those waiting longer then are late at any vector: none is judged on them

    def run(start: float, due: float, read_until: float, due_read: float) -> float:
        """One batch from `start` on what arrived since `read_until` (`due` and `due_read` the events due by each);
        returns its end."""
        nonlocal on_time, judged, largest, late_since, late_last
        events = due - due_read
        end = start + batch_s(events)
        cut = max(read_until, min(start, end - slo_s))  # events that arrived before it are late
        due_cut = arrivals.due(cut)
        on_time += due - due_cut
        late_last = max(0.0, due_cut - (due_read if mark <= read_until else arrivals.due(mark)))
        late_since += late_last
        judged += events
        largest = max(largest, events)
        return end

    due_read = arrivals.due(read_until)
    while read_until < horizon - 1e-9:
        start = min(start, horizon)  # the last batch starts at the horizon: it reads what is waiting now
        due = arrivals.due(start)
        if due - due_read < 0.5:  # nothing to read: no batch
            read_until, due_read, start = start, due, start + trigger_s
            continue
        end = run(start, due, read_until, due_read)
        read_until, due_read = start, due
        start = max(start + trigger_s, end)  # the next trigger, or at once after a batch that overran it
    late_next = 0.0
    if horizon < now - 1e-9:
        due_horizon, due_now = arrivals.due(horizon), arrivals.due(now)
        if due_now - due_horizon >= 0.5:
            end = run(now, due_now, horizon, due_horizon)  # the batch about to start, on everything waiting
            if next_rate > 0:  # and the next one, on what arrives meanwhile
                start = max(now + trigger_s, end)
                events = next_rate * (start - now)
                cut = max(now, min(start, start + batch_s(events) - slo_s))
                late_next = next_rate * (cut - now)
                on_time += events - late_next
                judged += events
                largest = max(largest, events)
                late_since += late_next
    return Replay(on_time, judged, largest, now - float(arrivals.times[0]), late_since, late_last, late_next)


def covering_goal(best: float, target: float, late_ratio: float = 1.0, late_points: float = 0.0) -> float:
    """The share a covering vector must keep when the best vector the slots allow keeps `best` (`covering_vector`)."""
    slack = min((late_ratio - 1.0) * (1.0 - best), late_points) if late_ratio > 1.0 else 0.0
    return target if best >= target else best - max(1.0 - target, slack)


def covering_vector(model: StageModel, arrivals: Arrivals, floor: Mapping[str, int], top: Mapping[str, int],
                    trigger_s: float, slo_s: float, target: float, window_s: float, waiting_since: float | None = None,
                    late_ratio: float = 1.0, late_points: float = 0.0, since: float | None = None,
                    goal: float | None = None, anchor: tuple[float, float] | None = None, next_rate: float = 0.0,
                    stage_share: float = 0.0) -> tuple[dict[str, int], Replay]:
    """The least vector found greedily from `floor` (each operator at most `top`) whose replay keeps at least
    `target` of the judged events on time: raise, one degree at a time, the operator whose raise keeps the most
    events on time (where none keeps more, the one whose stage is longest on the largest batch: a burst may need
    several degrees before any of its events is on time). Where even `top` cannot reach the target (peaks beyond
    any vector the slots allow), the goal lets more events be late than `top` does: at most `late_ratio` times as
    many and at most `late_points` (a share of the events) more, or one error budget (1 - target) more where that
    is more — the degrees that would buy the last few events of an infeasible load are not held. The ratio keeps a
    load just beyond the slots near the target (top 99 %: at most 2 % late with a ratio of 2); the points keep a
    load far beyond them within the issue's SLO tolerance of the best (top 50 %: at most 55 % late with 5 points).
    With a ratio of 1 the goal is what `top` reaches less the error budget.

    since: judge the vectors only on the late events among the arrivals since this time (`Replay.new_share`), as a
    raise of a held vector is judged: the late events of a peak before it (one no vector can now help, the opening
    peak of a trace beyond the slots) would otherwise size the raise, and on the real-time Google trace sent it to
    the slot bound for them. None: every arrival in memory (a vector searched to lower to, or not chosen by settle).
    goal: the `covering_goal` on these arrivals when the caller has it already (it replays `top` to know it).
    anchor: with `since`, the real queue to replay those arrivals from (`replay`).
    next_rate: with `waiting_since`, size for the batch after the one about to start as well (`replay`).
    stage_share: raise only operators whose stage, on the largest batch the replay ran at the vector so far, takes at
    least this share of the operators' stage time, and the one with the longest stage (0: any operator; 1: the
    longest alone, while it can be raised). Why: a degree is held for as long as the vector is, and an
    operator whose stage is a small part of the batch buys a few tenths of a second of a burst's batch with it; on
    Spark the real-time Google trace's raises took `parse` and `aggregate` beside `enrich` (whose records cost about
    25 times theirs in the calibration) and held them, at about 0.2x the oracle's cost each (2026-12-04)."""
    def run(vector: Mapping[str, int]) -> Replay:
        return replay(arrivals, lambda n: model.batch_s(vector, n), trigger_s, slo_s, waiting_since, since,
                      anchor if since is not None else None, next_rate)

    want = dict(floor)
    result = run(want)
    if result.new_share(window_s) >= target:
        return want, result
    if goal is None:
        goal = covering_goal(run(top).new_share(window_s), target, late_ratio, late_points)
    while result.new_share(window_s) < goal:
        stages = {op: model.stage_s(op, want[op], result.largest_batch) for op in want}  # on the largest batch
        least = min(stage_share * sum(stages.values()), max(stages.values()))
        trials = [({**want, op: want[op] + 1}, op) for op in want if want[op] < top[op] and stages[op] >= least]
        if not trials:
            break
        outcomes = [(run(trial), trial, op) for trial, op in trials]
        best_trial = min(outcomes, key=lambda o: o[0].late_since)
        if best_trial[0].late_since >= result.late_since:
            best_trial = max(outcomes, key=lambda o: stages[o[2]])
        result, want = best_trial[0], best_trial[1]
    return want, result
