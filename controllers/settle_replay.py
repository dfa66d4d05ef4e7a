"""The few-actions mode's replays (a base of `SettleMode`, controllers/settle_mode.py): the stage model from the
guards' observations, the covering vector the arrivals in memory needed, and the tests a raise or a trim must pass.
The queue replay and the greedy search themselves are controllers/settle.py's.

Pure: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from controllers.settle import (Arrivals, Replay, StageModel, arrival_segments, covering_goal, covering_vector,
                               replay)
from controllers.types import Snapshot, vector_text

if TYPE_CHECKING:
    from controllers.guards import Guards

# settle, where the source gives no arrival profile: a snapshot's arrivals are replayed as arriving within this many
# trigger intervals before its end, not spread over a batch that overran: a burst read late is not a gentler load
# (spread evenly over a 6-s overrun, the Google trace's bursts replay as a load half the vector carries; the
# project's choice, conservative for sizing)
SETTLE_SPREAD_TRIGGERS = 1.0


def settle_act_share(target: float) -> float:
    """The replayed share below which settle raises the held vector: the error budget of `target` (its 1 - target
    of late events) burning at twice its rate. Settle sizes for `target` itself; the band between the two is
    hysteresis, so that a replay a few events short (on Spark, a noisy batch's fixed cost moves it by tenths of a
    point) does not buy a degree. The factor 2 is the project's choice (the slowest of the burn rates SRE alerts
    on)."""
    return 1.0 - 2.0 * (1.0 - target)


class SettleReplay:
    """What `SettleMode` replays and searches: reads the guards (`self.guards`) and the mode's memory (`segments`,
    `curve`, the vector `chosen` and its `anchor`)."""

    guards: Guards
    params: Mapping[str, Any]
    operators: tuple[str, ...]

    def stage_model(self, last: Snapshot) -> StageModel | None:
        """The replay's costs from the last batch and the observed curves: each operator's records per source event
        and its busy time per record and per task (`task_costs`, else the last batch's), its effective parallelism
        at each degree up to the slot bound (`speedup`), the batch's fixed cost as it was. None when the last batch
        read too few records to say."""
        if last.records_read < self.params["min_records"]:
            return None
        spans = sum(o.span_s for o in last.operators)
        ratio, per_record, per_task, speedups = {}, {}, {}, {}
        for op in last.operators:
            if op.records_in <= 0 or op.busy_s <= 0:
                ratio[op.name], per_record[op.name], per_task[op.name] = 0.0, 0.0, 0.0
            else:
                ratio[op.name] = op.records_in / last.records_read
                per_record[op.name], per_task[op.name] = (self.guards.task_costs(op.name)
                                                          or (op.busy_s / op.records_in, 0.0))
            speedups[op.name] = [self.speedup(op.name, p) for p in range(1, self.guards.cap + 1)]
        return StageModel(max(0.0, last.batch_duration_s - spans), ratio, per_record, per_task, speedups)

    def speedup(self, op: str, degree: int) -> float:
        """The operator's effective parallelism at `degree` over the whole settle memory (busy ÷ stage wall time,
        summed, so the long stages of the bursts weigh most), else `speedup`. The replay predicts burst batches; a
        speed-up read from the last few batches at a degree, all small once a burst's vector is held, is not theirs
        (on Spark, enrich at 4: 2.2 over small batches, 4.0 over the bursts, and a held vector raised for nothing)."""
        busy = span = 0.0
        for _, name, q, b, w in self.curve:
            if name == op and q == degree:
                busy, span = busy + b, span + w
        return min(float(degree), busy / span) if span > 0 else self.guards.speedup(op, degree)

    def inputs(self, trigger_s: float, pending: tuple[float, int, tuple[int, ...] | None] | None = None
                       ) -> tuple[StageModel, Arrivals, float | None] | None:
        """The replay's stage model, the arrivals in memory (plus, at a batch start, what arrived since the last
        batch ended: `pending` as in `search`) and when the events now waiting began to arrive; None before the
        replay can be trusted."""
        if not self.guards.recent or self.guards.slo_latency_s is None:
            return None
        last = self.guards.recent[-1]
        usable = next((snap for snap in reversed(self.guards.recent)
                       if snap.records_read >= self.params["min_records"]),
                      None)
        model = self.stage_model(usable) if usable else None  # a near-empty batch measures task start-up
        if model is None:
            return None
        segments, waiting_since = list(self.segments), None
        if pending is not None:
            now, waiting, profile = pending
            if now > last.time_s:
                segments.extend(arrival_segments(last.time_s, now, max(0, waiting - last.backlog), profile,
                                                 SETTLE_SPREAD_TRIGGERS * trigger_s))
        arrivals = Arrivals.from_segments(segments)
        if pending is not None:
            waiting_since = arrivals.time_of(arrivals.total - pending[1])
        return model, arrivals, waiting_since

    def search(self, current: Mapping[str, int], trigger_s: float,
                pending: tuple[float, int, tuple[int, ...] | None] | None = None, act_below: float | None = None
                ) -> tuple[dict[str, int], float, float, bool] | None:
        """(covering vector, its replayed share, the current vector's share, whether a raise is due) over the
        arrivals in memory and, at a batch start, what arrived since the last batch (`pending`: now, the events
        waiting, their profile); None before the replay can be trusted. The current vector's share counts the late
        events since settle chose it, replayed from the real queue at the first batch after the choice (`replay`'s
        anchor): the arrivals before were weighed then, and a replay of the same history drifts by tenths of a point
        as the cost estimates move. The covering vector is searched only below `act_below` when given (a batch start
        only raises). A raise is due below `settle_act_share` (and `min_gain`), sized on the late events it is judged
        on; a vector to lower to, never above the current one, on every arrival in memory."""
        inputs = self.inputs(trigger_s, pending)
        if inputs is None:
            return None
        model, arrivals, waiting_since = inputs
        chosen = self.chosen
        since = chosen[1] if chosen is not None and chosen[0] == dict(current) else None
        anchor = self.anchor if since is not None else None
        slo, target, window = self.guards.slo_latency_s, self.params["settle_target"], self.judged_window()
        held = replay(arrivals, lambda n: model.batch_s(current, n), trigger_s, slo, waiting_since, since, anchor)
        now_share = held.new_share(window)
        self.no_raise = None
        if act_below is not None and now_share >= act_below:
            return dict(current), now_share, now_share, False
        floor = {op: min(self.params["min_degree"], self.guards.max_useful(op, current[op])) for op in self.operators}
        top = {op: self.guards.max_useful(op, current[op]) for op in self.operators}
        ratio, points = self.params["settle_late_ratio"], self.params["settle_late_points"]
        raising, goal = now_share < settle_act_share(target), None
        if raising and self.params["settle_min_gain"]:
            best = replay(arrivals, lambda n: model.batch_s(top, n), trigger_s, slo, waiting_since, since, anchor)
            raising, goal = self.min_gain(now_share, best.new_share(window))
            if not raising and act_below is not None:
                return dict(current), now_share, now_share, False
        stage_share = self.params["settle_stage_share"]
        vector, result = covering_vector(model, arrivals, floor, top, trigger_s, slo, target, window, waiting_since,
                                         ratio, points, since if raising else None, goal if raising else None,
                                         anchor, stage_share=stage_share)
        at_start = raising and pending is not None
        self.sized_rate = self.next_rate(arrivals, trigger_s) if at_start else 0.0
        if self.sized_rate:
            vector = self.rate_sized(vector, (model, arrivals, waiting_since), top, trigger_s, since, anchor)
        if raising and not self.raise_can_pay(held, result, arrivals, since, target, pending is not None):
            left = max(0.0, self.guards.horizon_s - arrivals.times[-1])
            self.no_raise = (f"repay: a raise to {vector_text(vector)} would not save the error budget it is "
                             f"for in the {left:.0f} s left of the run")
            if act_below is not None:
                return dict(current), now_share, now_share, False
            raising = False  # a review: no raise, but a lower vector may still do
            vector, result = covering_vector(model, arrivals, floor, top, trigger_s, slo, target, window,
                                             waiting_since, ratio, points, stage_share=stage_share)
        if raising and pending is not None and held.late_last < 0.5 and self.trim_would_undo(current, vector,
                                                                                              trigger_s):
            self.no_raise = (f"undone: the batch about to start is on time at {vector_text(current)}, and "
                             f"the trim after a raise to {vector_text(vector)} would take it back")
            return dict(current), now_share, now_share, False
        if not raising:
            vector = {op: min(vector[op], current[op]) for op in self.operators}
        return vector, result.new_share(window), now_share, raising

    def rate_sized(self, vector: Mapping[str, int], inputs: tuple[StageModel, Arrivals, float | None],
                   top: Mapping[str, int], trigger_s: float, since: float | None,
                   anchor: tuple[float, int] | None) -> dict[str, int]:
        """`settle_rate_sizing`: from the vector the waiting events need, on up for the next batch as well, at
        `sized_rate`; its goal is the slot bound's on the same projection, so a burst beyond every vector neither
        drops the raise nor sends it to the bound. `sized_rate` is reset where it added nothing."""
        model, arrivals, waiting_since = inputs
        p = self.params
        sized, _ = covering_vector(model, arrivals, vector, top, trigger_s, self.guards.slo_latency_s,
                                   p["settle_target"], self.judged_window(), waiting_since, p["settle_late_ratio"],
                                   p["settle_late_points"], since, None, anchor, self.sized_rate,
                                   p["settle_stage_share"])
        if sized == vector:
            self.sized_rate = 0.0
        return sized

    def judged_window(self) -> float:
        """The seconds of arrivals the error budget is spent over: settle_memory_s, or a bounded run shorter than
        that, which is judged over itself (planned over the memory, a 60-s run's budget lets a sustained rise wait
        for late events the run never outlives: the nightly step kept 97.7 %)."""
        window = self.params["settle_memory_s"]
        return self.guards.horizon_s if 0 < self.guards.horizon_s < window else window

    def min_gain(self, now_share: float, best_share: float) -> tuple[bool, float]:
        """(whether a raise is still due, the covering goal) with `settle_min_gain`, where the best vector the slots
        allow keeps `best_share`: no raise where the held vector already keeps the covering goal (a raise there buys
        a point or two for slots held the rest of the run); `no_raise` says so."""
        p = self.params
        goal = covering_goal(best_share, p["settle_target"], p["settle_late_ratio"], p["settle_late_points"])
        if now_share >= goal:
            self.no_raise = (f"min gain: no vector the slots allow carries this load (the best keeps "
                             f"{best_share:.1%}) and the held one keeps the covering goal {goal:.1%}")
        return now_share < goal, goal

    def trim_would_undo(self, current: Mapping[str, int], vector: Mapping[str, int], trigger_s: float) -> bool:
        """Whether the trim at the review after a raise from `current` to `vector` (where `current` lacks some of
        it) would lower it back to `current`, on the arrivals seen so far (`trim`).
        Why: on Spark (2026-12-04, a machine whose batch overhead varied 0.79 on the log scale) a batch that ran slow
        left late events behind the held vector, the next batch start raised for them with 292-1,555 events
        waiting, and the trim took the raise back 0.6-1.1 s later: two actions for a batch that was on time at the
        held vector anyway (four such pairs in six settled runs on the Google traces)."""
        if self.trims_off or self.params["settle_trim_share"] >= 1.0:
            return False
        raised = {op: max(current[op], vector[op]) for op in self.operators}
        if raised == dict(current):
            return False
        found = self.trim(raised, current, trigger_s)
        return found is not None and found[0] == {op: current[op] for op in self.operators}

    def next_rate(self, arrivals: Arrivals, trigger_s: float) -> float:
        """The rate (events/s) a raise at a batch start sizes the next batch for (`settle_rate_sizing`): that of
        the last trigger interval's arrivals, the burst as it arrives now;
        0 with the option off."""
        if not self.params["settle_rate_sizing"] or len(arrivals.times) < 2:
            return 0.0
        now = arrivals.times[-1]
        span = min(trigger_s, now - arrivals.times[0])
        return (arrivals.total - arrivals.due(now - span)) / span if span > 0 else 0.0

    def raise_can_pay(self, held: Replay, raised: Replay, arrivals: Arrivals, since: float | None,
                       target: float, waiting: bool) -> bool:
        """In a bounded run, whether a raise can still move the run's attainment by the error budget it is taken for
        (1 - `settle_act_share`): the late events it saves in the batch about to start (at a batch start, `waiting`;
        a review's last replayed batch has run), plus those it would have saved per second since the held vector's
        choice, over what is left of the run, against the run's events. Always in a run that is not bounded. Why:
        judged on the history, a raise is as due in a run's last seconds as anywhere; on Spark the real-time Google
        trace's settled seed 2 raised three operators at 174 s of 180 for a peak whose batch had already run."""
        if self.guards.horizon_s <= 0 or held.judged <= 0:
            return True
        now, first = arrivals.times[-1], arrivals.times[0]
        held_for = max(1e-9, now - (first if since is None else max(first, since)))

        def past(r: Replay) -> float:  # late events of batches that have run (all of a review's)
            return r.late_since - (r.late_last if waiting else 0.0)

        now_saved = max(0.0, held.late_last - raised.late_last) if waiting else 0.0
        saved = now_saved + max(0.0, past(held) - past(raised)) * max(0.0, self.guards.horizon_s - now) / held_for
        return saved / held.window_events(self.guards.horizon_s) >= 1.0 - settle_act_share(target)

    def trim(self, current: Mapping[str, int], floor: Mapping[str, int], trigger_s: float
             ) -> tuple[dict[str, int], float, float, float] | None:
        """(the least vector between `floor` (the vector before the raise: a trim takes back only what the raise
        added, never what earlier bursts were judged to need) and `current`, found greedily, that replayed from an
        empty queue over every arrival in memory keeps the held vector's attainment less one error budget; its
        attainment; the held one's; the share of the held slots it frees) where it frees at least
        `settle_trim_share` of them; None otherwise, and before the replay can be trusted. Why: a raise is sized
        for the batch about to start, on events that may have waited long already (on a trace that opens on a
        burst, through the run's slow first batch), and
        rescuing them in time takes every operator; held, those degrees buy nothing the next bursts need. The
        replay on the trigger grid says which ones a vector held through the same arrivals would have needed.
        Judged on the attainment itself, not on the share of a window to come (`Replay.share`), which early in a
        run dilutes a burst's late events and would trim the degrees the burst needs as well."""
        inputs = self.inputs(trigger_s)
        if inputs is None:
            return None
        model, arrivals, _ = inputs
        slo = self.guards.slo_latency_s
        held = replay(arrivals, lambda n: model.batch_s(current, n), trigger_s, slo)
        goal = held.attainment - (1.0 - self.params["settle_target"])
        floor = {op: min(floor[op], current[op]) for op in self.operators}
        vector, result = covering_vector(model, arrivals, floor, dict(current), trigger_s, slo, goal, 0.0, goal=goal)
        held_slots = sum(current.values())
        freed = (held_slots - sum(vector.values())) / held_slots
        if freed <= 0 or freed < self.params["settle_trim_share"]:
            return None
        return vector, result.attainment, held.attainment, freed
