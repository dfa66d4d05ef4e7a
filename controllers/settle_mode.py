"""The rules of the settle controller (controllers/settle_controller.py): hold one vector and change it rarely. The
vector held is the least one (found greedily) that, replayed over the arrivals of the last `settle_memory_s` on the
operators' observed costs (controllers/settle.py), keeps `settle_target` of them within the SLO. The rules, each with
its reason in its method's docstring:

- raise (`at_batch_start`; a review leaves the raise to the next batch start, which sees the events waiting) when
  the held vector, replayed over the arrivals since it was chosen, lets the error budget burn at twice its rate
  (`settle_act_share`); where no vector the slots allow keeps the target, the least one within `settle_late_ratio`
  and `settle_late_points` of the best, and no raise where the held one already keeps that (`settle_min_gain`);
  with `settle_rate_sizing`, a raise is also sized for the next batch at the last trigger interval's rate; with
  `settle_stage_share`, it takes degrees only for the long stages;
- trim once after a raise (`review_trim`, `trim`) where a vector held through the same arrivals needs less and
  that frees `settle_trim_share` of the slots; no raise the trim would take straight back (`trim_would_undo`);
- lower (`review`) once a lower vector has sufficed for `settle_down_s` and the change pays for itself;
- in a bounded run, the error budget is spent over the run, and no raise the rest of it cannot repay
  (`raise_can_pay`).
Slot bounds, ineffective-scaling blocks already set and excluded periods hold.

Pure like the controllers: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Mapping

from controllers.settle import arrival_segments
from controllers.settle_replay import SETTLE_SPREAD_TRIGGERS, SettleReplay, settle_act_share
from controllers.types import Decision, Snapshot, vector_text

if TYPE_CHECKING:
    from controllers.guards import Guards


class SettleMode(SettleReplay):
    """The settle controller's state in one run. It reads the guards' observations (the capacity curve, the per-task
    cost fit, the slots) and keeps its own: the arrivals and stage times of the last settle_memory_s, the vector it
    chose and when. `at_batch_start` may raise; `review`, after each batch, raises, trims, lowers or holds.
    `params`: the controller's (settle's options and the guard options it reads)."""

    def __init__(self, guards: Guards, params: Mapping[str, Any]):
        self.guards = guards
        self._params = dict(params)
        self.segments: deque[tuple[float, float, float]] = deque()  # (start, end, events) arrivals
        self.curve: deque[tuple[float, str, int, float, float]] = deque()  # (t, op, degree, busy, span)
        self.chosen: tuple[dict[str, int], float] | None = None  # the vector it last chose, and when
        self.anchor: tuple[float, int] | None = None  # (end, backlog) of the first batch after it
        self.no_raise: str | None = None  # which test held a raise the budget called for, if one did
        self.start_held: str | None = None  # the same at the last batch start, for the next review's record
        # the vector before a raise the review after its batch may still trim back towards (None: no trim due)
        self.trim_floor: dict[str, int] | None = None
        self.trimmed = False  # the vector held now is a trim's
        self.trims_off = False  # a trimmed vector had to be raised again: no more trims this run
        self.starts_seen = False  # the runner asks at batch starts, so raises wait for them
        self.sized_rate = 0.0  # the rate the last raise searched sized the next batch for (events/s)
        self._last_batch: int | None = None  # the last batch observed

    @property
    def params(self) -> dict[str, Any]:
        return self._params

    @property
    def operators(self) -> tuple[str, ...]:
        return self.guards.operators

    def observe(self, snapshot: Snapshot) -> None:
        """The batch's arrivals (by its profile) and stage times into the memory; the anchor of a chosen vector.
        Once per batch id."""
        if self._last_batch is not None and snapshot.batch_id <= self._last_batch:
            return
        self._last_batch = snapshot.batch_id
        self.segments.extend(arrival_segments(
            snapshot.time_s - snapshot.interval_s, snapshot.time_s, snapshot.arrivals, snapshot.arrival_profile,
            SETTLE_SPREAD_TRIGGERS * snapshot.trigger_interval_s))
        since = snapshot.time_s - self.params["settle_memory_s"]
        while self.segments and self.segments[0][1] < since:
            self.segments.popleft()
        self.curve.extend((snapshot.time_s, op.name, op.degree, op.busy_s, op.span_s)
                                  for op in snapshot.operators if op.records_in > 0 and op.span_s > 0)
        while self.curve and self.curve[0][0] < since:
            self.curve.popleft()
        if self.chosen is not None and self.anchor is None \
                and snapshot.time_s > self.chosen[1]:
            self.anchor = (snapshot.time_s, snapshot.backlog)

    def chose(self, vector: Mapping[str, int], time_s: float, raised_from: Mapping[str, int] | None = None,
                      trimmed: bool = False) -> None:
        """Settle holds `vector` from `time_s`: raised from the vector `raised_from`, or trimmed, or lowered."""
        if raised_from is not None and self.trimmed:
            self.trims_off = True  # the trim cost an action and a raise: it is not tried again
        self.chosen, self.anchor = (dict(vector), time_s), None
        self.trimmed = trimmed
        self.trim_floor = dict(raised_from) if raised_from is not None and not self.trims_off else None

    @property
    def trim_due(self) -> bool:
        """Whether the review after the last raise's batch may still trim it."""
        return self.trim_floor is not None

    def at_batch_start(self, pending: int, current: Mapping[str, int], trigger_s: float, time_s: float,
                         recent_arrivals: tuple[int, ...] | None) -> Decision | None:
        """At a batch start: raise to the covering vector when the current one, replayed over the arrivals in memory
        and the events now waiting (read at once by this batch), keeps less than `settle_act_share` of them on
        time. Only raises, and no return."""
        self.starts_seen = True
        act = settle_act_share(self.params["settle_target"])
        found = self.search(current, trigger_s, (time_s, pending, recent_arrivals), act_below=act)
        if found is None:
            return None
        vector, attainment, now_attainment, raise_due = found
        if not raise_due:
            if self.no_raise is not None:
                # a batch start that changes nothing makes no decision: the next review's record says what was held
                self.start_held = f"at {time_s:.1f} s, {pending} events waiting: {self.no_raise}"
            return None
        want = {op: max(current[op], vector[op]) for op in self.operators}
        if want == dict(current):
            return None
        self.chose(want, time_s, raised_from=current)
        rate = self.sized_rate
        return Decision(want, f"settle: {pending} events waiting; replayed, {vector_text(current)} keeps "
                              f"{now_attainment:.1%} on time < {act:.1%}, "
                              f"{vector_text(want)} {attainment:.1%}"
                              + (f" (with the next batch at {rate:.0f} ev/s)" if rate else ""),
                        details={"guard.settle_attainment_current": now_attainment,
                                 "guard.settle_attainment": attainment, "guard.settle_vector": vector_text(vector),
                                 "guard.settle_next_rate": rate,
                                 "predicted.records": float(pending), "predicted.vector": vector_text(want)})

    def review_trim(self, current: Mapping[str, int], t: float, trigger_s: float
                            ) -> tuple[dict[str, int], float, float, float] | None:
        """At the first review after a raise's batch (the raised vector in force): (the trimmed vector, its replayed
        attainment, the held one's, the share of slots it frees) when `trim` frees at least
        `settle_trim_share` of the held slots; else None, and no trim until the next raise. One trim per raise, and
        none after a trimmed vector had to be raised again: an action in this mode is a restart, and on a trace
        whose bursts recur (the held-out Alibaba LoRA trace in the plant) raise, trim, raise again took 6 actions
        where holding took 3.5."""
        chosen, floor = self.chosen, self.trim_floor
        if floor is None or chosen is None or chosen[1] >= t:
            return None
        self.trim_floor = None
        if chosen[0] != dict(current):
            return None
        found = self.trim(current, floor, trigger_s)
        if found is None:
            return None
        vector, attainment, held, freed = found
        self.guards.lower_since = None
        self.chose(vector, t, trimmed=True)
        return vector, attainment, held, freed

    def review(self, snapshot: Snapshot, details: dict[str, Any]) -> Decision:
        """The decision after a batch (`details`: what the guards observed). Up at once to the covering vector when
        the current one, replayed, keeps less than `settle_act_share` (where the runner asks at batch starts, left
        to the next one); down to it when it is lower and has been for settle_down_s, and the change pays for
        itself (the reconfiguration-cost test); else hold."""
        current = dict(snapshot.degrees)
        p, t = self.params, snapshot.time_s
        if self.start_held is not None:
            details["guard.settle_start_held"], self.start_held = self.start_held, None
        window = self.guards.excluded(t)
        trimmed = None if window is not None else self.review_trim(current, t, snapshot.trigger_interval_s)
        if trimmed is not None:
            vector, attainment, held, freed = trimmed
            details.update({"guard.settle_attainment": attainment, "guard.settle_attainment_current": held,
                            "guard.settle_trim": True, "guard.settle_vector": vector_text(vector)})
            return Decision(vector, f"settle: trim after the raise: replayed on the trigger grid, "
                                    f"{vector_text(vector)} keeps {attainment:.1%} on time where "
                                    f"{vector_text(current)} keeps {held:.1%}, {freed:.0%} fewer slots",
                            details=details)
        found = None if window is not None else self.search(current, snapshot.trigger_interval_s)
        if found is None:
            if window is not None:
                self.guards.lower_since = None
                self.trim_floor = None  # a trim is for the review right after the raise's batch, not later
            note = "excluded period" if window is not None else "too little observed to replay"
            return Decision(current, f"settle holds {vector_text(current)} ({note})", details=details)
        vector, attainment, now_attainment, raise_due = found
        details.update({"guard.settle_attainment_current": now_attainment, "guard.settle_attainment": attainment,
                        "guard.settle_vector": vector_text(vector)})
        act = settle_act_share(p["settle_target"])
        want = {op: max(current[op], vector[op]) for op in self.operators}
        if raise_due and want != current:
            self.guards.lower_since = None
            if self.starts_seen:
                return Decision(current, f"settle: replayed, {vector_text(current)} keeps "
                                         f"{now_attainment:.1%} on time < {act:.1%}; the raise is left to the next "
                                         f"batch start (it sees the events waiting)", details=details)
            self.chose(want, t, raised_from=current)
            return Decision(want, f"settle: replayed, {vector_text(current)} keeps "
                                  f"{now_attainment:.1%} on time < {act:.1%}; {vector_text(want)} "
                                  f"{attainment:.1%}", details=details)
        if vector == current or any(vector[op] > current[op] for op in self.operators):
            self.guards.lower_since = None
            why = ""
            if self.no_raise is not None:  # a raise was due by the budget and a test held it: say which
                details["guard.settle_no_raise"] = self.no_raise
                why = f"; no raise, {self.no_raise}"
            return Decision(current, f"settle holds {vector_text(current)} (replayed "
                                     f"{now_attainment:.1%} on time{why})", details=details)
        return self.lowered(current, vector, attainment, t, details)

    def lowered(self, current: Mapping[str, int], vector: Mapping[str, int], attainment: float, t: float,
                details: dict[str, Any]) -> Decision:
        """A review whose covering vector is lower than the one held: down to it once a lower one has sufficed for
        settle_down_s, and the change pays for itself (the reconfiguration-cost test over what is left of a
        bounded run); else hold."""
        p = self.params
        if self.guards.lower_since is None:
            self.guards.lower_since = t
        waited = t - self.guards.lower_since
        if waited < p["settle_down_s"]:
            details["guard.down_pending_s"] = waited
            return Decision(current, f"settle: {vector_text(vector)} would do, pending "
                                     f"({waited:.0f}/{p['settle_down_s']:g} s)", details=details)
        before, after = sum(current.values()), sum(vector.values())
        # in a bounded run, the freed slots count only over what is left of it: in the plant, settle lowered the
        # Alibaba trace's held vector 0.7 s after the run's end, an action that freed nothing
        horizon = p["benefit_horizon_s"] if self.guards.horizon_s <= 0 else min(p["benefit_horizon_s"],
                                                                               max(0.0, self.guards.horizon_s - t))
        benefit, cost = (before - after) * horizon, p["reconfig_cost_s"] * (before + after)
        details.update({"guard.benefit_slot_s": benefit, "guard.cost_slot_s": cost})
        if benefit <= cost:
            return Decision(current, f"settle: {vector_text(vector)} would do, not worth a change "
                                     f"({benefit:.0f} <= {cost:.0f} slot-s"
                                     + (f" over the {horizon:.0f} s left of the run)"
                                        if horizon < p["benefit_horizon_s"] else ")"), details=details)
        self.guards.lower_since = None
        self.chose(vector, t)
        return Decision(vector, f"settle: replayed, {vector_text(vector)} keeps {attainment:.1%} "
                                f"on time (target {p['settle_target']:.1%})", details=details)
