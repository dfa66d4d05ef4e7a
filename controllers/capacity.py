"""What the guards size with: the sustained arrival rate and the lag to drain, and each operator's observed
capacity.

- Catch-up (`catch_up_s`): size for the sustained arrival rate — the median of the last GUARD_WINDOW batches' rates,
  so a spike the last batch already read is not taken for a new level — plus the lag (the backlog beyond what
  arrives in one trigger interval, or while a shorter batch ran) drained within the catch-up time (`target_rate`).
  In a micro-batch job the next batch reads the whole backlog, so "drain within C" means that batch takes about C:
  once the controller is bound to a run, C is capped at the run's latency bound less one trigger (`catch_up_s()`).
- Observed scalability: what each operator has shown at each degree it ran at — its effective parallelism (busy
  time ÷ stage wall time: the degree when its tasks all run at once, less with waves beyond the slots, skew,
  stragglers) over its last CURVE_BATCHES batches at that degree, and its busy seconds per record and per task (a
  least-squares fit over its last COST_BATCHES batches). `stage_s(op, p, records)` predicts its stage time from
  them; `speedup` interpolates between observed degrees, continues the last observed slope beyond them (flat once
  it saturated) and is linear (the degree itself) where nothing was observed. Its capacity curve, rate vs degree,
  is records ÷ stage_s.

Pure: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Mapping

from controllers.types import Snapshot

# batches whose arrival rates make the sustained rate (their median) and the offered load (their mean)
GUARD_WINDOW = 3
# most recent batches per (operator, degree) the capacity curve keeps: recent enough to follow a change of
# per-record cost, long enough to average a few noisy batches
CURVE_BATCHES = 10
# most recent batches per operator (any degree) the per-record and per-task cost fit uses
COST_BATCHES = 20


def catch_up_rate(arrival_rate: float, backlog: float, batch_duration_s: float, catch_up_s: float
                  ) -> tuple[float, float]:
    """(target rate, lag): the arrival rate plus the lag drained within catch_up_s. What arrives while a batch runs
    is always waiting when it ends; only the rest of the backlog is lag."""
    lag = max(0.0, backlog - arrival_rate * batch_duration_s)
    return arrival_rate + lag / catch_up_s, lag


class ObservedCapacity:
    """The observations of one run the guards size with (a base of `Guards`): the last GUARD_WINDOW batches, each
    operator's curve per degree and its cost points. `record` takes one batch; the rest reads them."""

    params: Mapping[str, Any]
    slo_latency_s: float | None

    def _init_capacity(self) -> None:
        self._curve: dict[tuple[str, int], deque] = {}
        self._costs: dict[str, deque] = {}
        self.recent: deque[Snapshot] = deque(maxlen=GUARD_WINDOW)

    def record(self, snapshot: Snapshot) -> None:
        """The batch into the window and each operator's curve and cost points."""
        self.recent.append(snapshot)
        for op in snapshot.operators:
            if op.records_in > 0 and op.span_s > 0:
                self._curve.setdefault((op.name, op.degree), deque(maxlen=CURVE_BATCHES)).append(
                    (op.records_in, op.busy_s, op.span_s))
                self._costs.setdefault(op.name, deque(maxlen=COST_BATCHES)).append(
                    (op.records_in, op.degree, op.busy_s))

    def catch_up_s(self, trigger_s: float) -> float:
        """The catch-up time the guards size with: catch_up_s, but no longer than the run's latency bound less one
        trigger interval (at least one interval). In a micro-batch job the next batch reads the whole backlog, so
        draining it "within C seconds" makes that batch take about C: a C beyond the SLO plans to miss it."""
        c = self.params["catch_up_s"]
        if self.slo_latency_s is not None:
            c = min(c, max(trigger_s, self.slo_latency_s - trigger_s))
        return c

    def target_rate(self, snapshot: Snapshot) -> tuple[float, float, float]:
        """(target rate, lag, sustained rate) for sizing, events/s: the sustained arrival rate — the median of the
        last GUARD_WINDOW batches' rates, so a spike the last batch already read is not taken for a new level — plus
        the lag drained within the catch-up time (`catch_up_s()`, `catch_up_rate`)."""
        self.observe(snapshot)
        rates = sorted(s.arrivals / s.interval_s for s in self.recent if s.interval_s > 0)
        if not rates:
            sustained = 0.0
        elif len(rates) % 2:
            sustained = rates[len(rates) // 2]
        else:
            sustained = (rates[len(rates) // 2 - 1] + rates[len(rates) // 2]) / 2
        # the next batch reads what arrived over one trigger interval in the steady state; a batch that overran the
        # interval leaves the rest of what arrived while it ran as lag
        trigger = snapshot.trigger_interval_s
        target, lag = catch_up_rate(sustained, snapshot.backlog, min(snapshot.batch_duration_s, trigger),
                                    self.catch_up_s(trigger))
        return target, lag, sustained

    def utilization(self, snapshot: Snapshot) -> tuple[float, float]:
        """(batch ratio, utilisation of the next batch): the last batch's duration ÷ trigger interval, and the share
        of the trigger the current degrees would take on the load the next batch will read — the backlog plus the
        sustained rate until the next trigger — with the last batch's stages scaled to that load and its fixed cost
        as it was. A spike the last batch already read does not count; one waiting in the backlog does."""
        trigger = snapshot.trigger_interval_s
        ratio = snapshot.batch_duration_s / trigger
        if snapshot.records_read <= 0:
            return ratio, ratio
        _, _, sustained = self.target_rate(snapshot)
        load = snapshot.backlog + sustained * max(0.0, trigger - snapshot.batch_duration_s)
        stages = sum(o.span_s for o in snapshot.operators)
        fixed = max(0.0, snapshot.batch_duration_s - stages)
        return ratio, (fixed + stages * load / snapshot.records_read) / trigger

    def offered_load(self) -> float:
        """Mean arrival rate (events/s) over the last GUARD_WINDOW batches."""
        interval = sum(s.interval_s for s in self.recent)
        return sum(s.arrivals for s in self.recent) / interval if interval > 0 else 0.0

    def _sums(self, op: str, degree: int) -> tuple[int, float, float] | None:
        """(records, busy_s, span_s) of the operator's recent batches at this degree; None below min_records."""
        points = self._curve.get((op, degree))
        if not points:
            return None
        records, busy, span = (sum(x) for x in zip(*points))
        return (records, busy, span) if records >= self.params["min_records"] and span > 0 else None

    def observed_rate(self, op: str, degree: int) -> float | None:
        """Records per second of stage wall time at this degree, from its recent batches (None: too few records)."""
        sums = self._sums(op, degree)
        return sums[0] / sums[2] if sums else None

    def speedup(self, op: str, degree: int) -> float:
        """The operator's effective parallelism at `degree`: observed busy time ÷ stage wall time (`degree` when its
        tasks all run at once; less with waves beyond the slots, skew or stragglers), interpolated linearly between
        observed degrees, beyond the highest two with the slope between them (clipped to [0, 1]: flat once it
        saturated), else degree × s(q) / q from the one observed degree q, `degree` (linear speed-up) when the
        operator was never observed. Its capacity curve is this times its busy-time rate per task (DS2's
        true processing rate)."""
        known = {}
        for (name, q) in self._curve:
            sums = self._sums(op, q) if name == op else None
            if sums:
                known[q] = min(float(q), sums[1] / sums[2])
        if degree in known:
            return known[degree]
        below = [q for q in known if q < degree]
        above = [q for q in known if q > degree]
        if below and above:
            lo, hi = max(below), min(above)
            value = known[lo] + (known[hi] - known[lo]) * (degree - lo) / (hi - lo)
        elif len(below) >= 2:  # beyond what was observed: the last segment's slope (0 once it saturated, <= 1)
            hi, lo = sorted(below)[-1], sorted(below)[-2]
            slope = min(1.0, max(0.0, (known[hi] - known[lo]) / (hi - lo)))
            value = known[hi] + slope * (degree - hi)
        elif below or above:
            q = max(below) if below else min(above)
            value = known[q] * degree / q
        else:
            value = float(degree)
        return min(float(degree), value)

    def task_costs(self, op: str) -> tuple[float, float] | None:
        """(busy seconds per record, busy seconds per task) of the operator, fitted by least squares on its recent
        batches (busy = records × c + tasks × o, both >= 0); None before min_records, when the batches cannot tell
        the two apart, or when they show no per-task cost (then the caller's per-record cost, measured at the
        current degree, with no per-task cost, is the linear model: an average over every degree seen would let
        cheaper degrees predict the current one faster than it ran)."""
        points = self._costs.get(op)
        if not points or sum(n for n, _, _ in points) < self.params["min_records"] or len(points) < 3:
            return None
        snn = sum(n * n for n, _, _ in points)
        spp = sum(p * p for _, p, _ in points)
        snp = sum(n * p for n, p, _ in points)
        snb = sum(n * b for n, _, b in points)
        spb = sum(p * b for _, p, b in points)
        det = snn * spp - snp * snp
        if det <= 1e-9 * snn * spp:
            return None
        c = (snb * spp - spb * snp) / det
        o = (spb * snn - snb * snp) / det
        if o < 0 or c <= 0:  # the batches show no per-task cost: the caller's per-record cost, at its degree
            return None
        return c, o

    def stage_s(self, op: str, degree: int, records: float, per_record_s: float) -> float:
        """Predicted wall time of the operator's stage on `records` at `degree`: its busy time (records × cost per
        record + degree × cost per task, fitted; `per_record_s` and no per-task cost before that) ÷ its speedup at
        that degree. With a per-task cost, tasks beyond some degree lengthen the stage instead of shortening it."""
        fitted = self.task_costs(op)
        c, o = fitted if fitted else (per_record_s, 0.0)
        return (records * c + degree * o) / self.speedup(op, degree)
