"""Burst sizing (`burst_sizing`, with guards on): a batch about to start is sized for the events it will read.

When a batch starts, the events it is about to read are known (arrived, not yet read: a consumer's lag). If the
current vector would take longer than the catch-up time on them (and, with `burst_wait_aware`, longer than the SLO
less how long the oldest of them has waited), the batch runs with degrees raised, operator by operator where the
predicted stage is longest, until it fits (`batch_start`, called through `Controller.at_batch_start`). The review
after that batch returns to the vector before it at once (`BurstReturn`, controllers/guard_stages/bursts.py): a
burst shorter than a trigger interval is met by the batch that reads it, and paid for that batch only; not where
the events already waiting would need more than the vector it returns to (a burst longer than its batch).

A batch at other degrees than the last one's runs longer than the last batch's costs predict (on Spark it plans a
new shuffle layout and starts new tasks: 8.5-13 % measured), so a raised vector, and a current one the last review
changed, must fit the budget with `burst_headroom` to spare. Before any batch large enough to measure
(`min_records`) — the run's first, which on a trace that opens on a burst reads it — the costs come from the run's
calibration where it has one (`RunContext.cost_prior`, jobs/cost_prior.py, written as a
nominal batch, `prior_batch`); without one such a batch runs at the vector it has.

Pure: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from controllers.cost_model import CostPrior
from controllers.types import Decision, OperatorMetrics, Snapshot, vector_text

# the source events of the nominal batch a calibration's costs are written as (`prior_batch`): large enough that its
# integer record counts round off nothing that matters
PRIOR_BATCH_RECORDS = 100_000


def prior_batch(prior: CostPrior, operators: Sequence[str], max_degree: int) -> Snapshot:
    """The calibrated costs written as the batch burst sizing predicts from (`Guards._batch_model`): a nominal batch
    of PRIOR_BATCH_RECORDS events at degree 1, each operator's records and busy time as the calibration's per-record
    cost, selectivity and per-task cost make them, the batch's fixed cost the calibrated one. Never observed (it
    would enter the capacity curve as a measurement): burst sizing reads it only where no measured batch precedes."""
    models = {op.name: op for op in prior.operators}
    records, metrics = float(PRIOR_BATCH_RECORDS), []
    for name in operators:
        model = models[name]
        busy = records * model.service_s + model.task_overhead_s
        out = records * model.selectivity
        metrics.append(OperatorMetrics(name, 1, int(round(records)), int(round(out)), busy, 1, busy, busy))
        records = out
    duration = prior.batch_overhead_s + sum(op.busy_s for op in metrics)
    return Snapshot(batch_id=-1, time_s=0.0, trigger_interval_s=0.0, batch_duration_s=duration, interval_s=0.0,
                    arrivals=PRIOR_BATCH_RECORDS, records_read=PRIOR_BATCH_RECORDS, backlog=0, latency_p50_s=None,
                    latency_p95_s=None, latency_p99_s=None, operators=tuple(metrics), max_degree=max_degree)


class BurstSizing:
    """Burst sizing's part of `Guards` (a base of it): the vector before a raise, which the review after the burst's
    batch returns to (controllers/guard_stages/bursts.py)."""

    def _init_bursts(self) -> None:
        self._before_burst: dict[str, int] | None = None  # the vector a batch-start burst sizing raised
        self._prior: Snapshot | None = None  # bind: the calibrated costs as a nominal batch

    def controllers_vector(self, current: Mapping[str, int]) -> dict[str, int]:
        """The vector the controller itself last chose: after a batch run at a vector burst sizing raised for it,
        the vector before the burst (the one the review returns to), else `current`. A controller that steps from
        the degrees in force (a policy's +2, the detector's +1) steps from its own, not from the burst's, which the
        review takes back (and a step past the burst's degrees at the slot bound would be lost with it)."""
        base = self._before_burst
        return dict(base) if self.enabled and base is not None else dict(current)

    def batch_start(self, pending: int, current: Mapping[str, int], trigger_s: float,
                    oldest_wait_s: float | None = None) -> Decision | None:
        """The decision for a batch about to read `pending` events when the current vector would take longer than
        the budget on them: the catch-up time (`catch_up_s()`), and with `burst_wait_aware` at most the SLO less
        `oldest_wait_s` (after a batch that overran its trigger, the next one reads events older than one interval:
        on Spark the Google trace's second batch, sized for 3 s, ended 0.18 s past the bound without it). None when it
        fits, or too little was observed. Stages as `_batch_model` predicts them; degrees raised one at a time on the
        longest stage, within the slot bound and any ineffective-scaling block, until the batch fits."""
        if not (self.enabled and self.params["burst_sizing"]) or pending <= 0:
            return None
        last = self.recent[-1] if self.recent else None
        # per-record costs from a handful of records measure task start-up, not the operators
        measured = last is not None and last.records_read >= self.params["min_records"]
        if not measured:
            last = self._prior
            if last is None:
                return None
        budget = self.catch_up_s(trigger_s)
        if oldest_wait_s is not None and self.slo_latency_s is not None and self.params["burst_wait_aware"]:
            budget = min(budget, max(0.0, self.slo_latency_s - oldest_wait_s))
        work, batch_s = self._batch_model(last, pending)
        if not work:
            return None
        # a batch at other degrees than the last one's runs longer than its costs predict (a new shuffle layout, new
        # tasks): the margin applies to a raise, and to the current vector where the last review changed it
        margin = 1.0 + self.params["burst_headroom"]
        if batch_s(current) * (margin if dict(current) != last.degrees else 1.0) <= budget:
            return None
        want = dict(current)
        while batch_s(want) * margin > budget:
            raisable = [op for op in work if want[op] < self.max_useful(op, current[op])]
            if not raisable:
                break
            slowest = max(raisable, key=lambda op: self.stage_s(op, want[op], *work[op]))
            want[slowest] += 1
        if want == dict(current):
            return None
        if self._before_burst is None:  # a burst vector held over a review (a return it would undo) keeps its base
            self._before_burst = dict(current)
        predicted = batch_s(want)
        return Decision(want, f"burst: {pending} events waiting, predicted {predicted:.2f} s at {vector_text(want)} "
                              f"(budget {budget:.2f} s, headroom {self.params['burst_headroom']:.0%})"
                              + ("" if measured else "; no batch measured yet: on the calibrated costs"),
                        details={"guard.burst_pending": pending, "guard.burst_budget_s": budget,
                                 "guard.burst_calibrated": 0.0 if measured else 1.0,
                                 "guard.burst_headroom": self.params["burst_headroom"],
                                 **({} if oldest_wait_s is None else {"guard.burst_oldest_wait_s": oldest_wait_s}),
                                 "guard.burst_predicted_s": predicted,
                                 "guard.burst_predicted_current_s": batch_s(current),
                                 "predicted.records": float(pending), "predicted.batch_s": predicted,
                                 "predicted.vector": vector_text(want)})

    def _batch_model(self, last: Snapshot, pending: int
                     ) -> tuple[dict[str, tuple[float, float]], Callable[[Mapping[str, int]], float]]:
        """Burst sizing's prediction of a batch of `pending` events from the last batch: per operator (records, busy
        seconds per record), and the batch's seconds at a vector (its fixed cost as the last batch's, the stages by
        `stage_s`)."""
        spans = sum(o.span_s for o in last.operators)
        fixed = max(0.0, last.batch_duration_s - spans)
        work = {}
        for op in last.operators:
            if op.records_in <= 0 or op.busy_s <= 0:
                continue
            work[op.name] = (pending * op.records_in / last.records_read, op.busy_s / op.records_in)

        def batch_s(vector: Mapping[str, int]) -> float:
            return fixed + sum(self.stage_s(op, vector[op], n, c) for op, (n, c) in work.items())

        return work, batch_s

    def return_undone(self, snapshot: Snapshot, back: Mapping[str, int]) -> bool:
        """Whether burst sizing would raise `back` again at the next batch start on the events already waiting now:
        they alone, at `back` (a changed vector: with `burst_headroom`), would take longer than the catch-up time.
        The next batch reads at least them, and its budget is at most that (less the oldest one's wait), so such a
        return is certain to be undone: two actions for nothing. Only with burst sizing on, on a batch large enough
        to measure."""
        if not self.params["burst_sizing"] or snapshot.backlog <= 0 \
                or snapshot.records_read < self.params["min_records"]:
            return False
        work, batch_s = self._batch_model(snapshot, snapshot.backlog)
        margin = 1.0 + self.params["burst_headroom"]
        return bool(work) and batch_s(back) * margin > self.catch_up_s(snapshot.trigger_interval_s)

    def burst_over(self) -> None:
        """No burst sizing's raise is to be taken back any more (the vector was released)."""
        self._before_burst = None

    def take_burst_base(self) -> dict[str, int] | None:
        """The vector before the last batch start's burst sizing, if one raised it; a review takes it once."""
        before, self._before_burst = self._before_burst, None
        return before

    def keep_burst_base(self, before: Mapping[str, int]) -> None:
        """The burst goes on: the vector before it stays the one a later review returns to."""
        self._before_burst = dict(before)
