"""The guard layer shared by parallelism controllers: one set of options, declared once, between a controller's
proposal and the degrees it hands to the loop.

A controller proposes a degree vector (DS2 from rates, threshold from the batch-time ratio); the guards decide what
of it is applied, and two of them help the controller size the proposal. Flink's autoscaler (the production
descendant of DS2) grew the same set for the same reasons: churn, wrong capacity estimates, backlog spirals. Every
guard is an option in `GUARD_PARAMS`, which a controller merges into its PARAMS (so `--describe` lists them, a
configuration is checked against them and a tuning study searches them), with the cross-field `GUARD_RULES`.
`guards=off` turns them all off: the controller is then exactly what its paper describes. They are on by default,
with scale-downs not stabilised (`stabilisation_s=0`): measured on bursty real traces and the nightly workloads,
holding a burst's capacity for 30 s cost 1.5-2x the oracle, and here a degree change is live and cheap, so the
capacity a burst needs is met by burst sizing at the batch that reads it instead (docs/bursty.md).

Sizing (the controller asks; `Guards` keeps what it needs):

- **Catch-up** (`catch_up_s`): size for the sustained arrival rate — the median of the last GUARD_WINDOW batches'
  rates, so a spike the last batch already read is not taken for a new level — plus the lag (the backlog beyond
  what arrives in one trigger interval, or while a shorter batch ran) drained within the catch-up time
  (`target_rate`). In a micro-batch job the next
  batch reads the whole backlog, so "drain within C" means that batch takes about C: once the controller is bound
  to a run, C is capped at the run's latency bound less one trigger interval (`catch_up_s()`).
- **Observed scalability**: what each operator has shown at each degree it ran at — its effective parallelism
  (busy time ÷ stage wall time: the degree when its tasks all run at once, less with waves beyond the slots,
  skew, stragglers) over its last CURVE_BATCHES batches at that degree, and its busy seconds per record and per
  task (a least-squares fit over its last COST_BATCHES batches). `stage_s(op, p, records)` predicts its stage time
  from them; `speedup` interpolates between observed degrees, continues the last observed slope beyond them (flat
  once it saturated) and is linear (the degree itself) where nothing was observed. Its capacity curve, rate vs
  degree, is records ÷ stage_s.

- **Burst sizing** (`burst_sizing`, with guards on): when a batch starts, the events it is about to read are known
  (arrived, not yet read: a consumer's lag). If the current vector would take longer than the catch-up time on them
  (and, with `burst_wait_aware`, longer than the SLO less how long the oldest of them has waited), the batch runs
  with degrees raised, operator by operator where the predicted stage is longest, until it fits (`batch_start`,
  called through `Controller.at_batch_start`). The review after that batch returns to the vector before it at once
  (or to the proposal, if higher), without stabilisation, band or cost test: a burst shorter than a trigger interval
  is met by the batch that reads it, and paid for that batch only. Not where the events already waiting would need
  more than the vector it returns to (a burst longer than its batch): the next start would raise again, so the
  burst's vector stays until a batch leaves little waiting. A batch at
  other degrees than the last one's runs longer than the last batch's costs predict (on Spark it plans a new shuffle
  layout and starts new tasks: 8.5-13 % measured), so a raised vector, and a current one the last review changed,
  must fit the budget with `burst_headroom` to spare. Before any batch large enough to measure (`min_records`) —
  the run's first, which on a trace that opens on a burst reads it — the costs come from the run's calibration
  where it has one (`calibrated_start`; `RunContext.cost_prior`, jobs/cost_prior.py: the costs `python -m
  jobs.calibrate` measured on this master for these operators, written as a nominal batch, `prior_batch`); without
  one such a batch runs at the vector it has.
- **Idle release** (`idle_release`): after a batch during which nothing arrived and that left nothing waiting, every
  operator goes to `min_degree` at once, before any other review but excluded periods. Spark runs no batch until
  events arrive, and burst sizing sizes that batch as it starts; a vector held until then is charged through the
  silence for nothing (on the held-out Azure code trace DS2 held a burst's vector through a 25-s silence: the
  sustained rate, a median of three batches, still remembered the burst). Load without silences rarely has such a
  batch. A review stage (controllers/guard_stages.py).

- **Settle** (`settle`, off by default): the few-actions mode (controllers/settle_mode.py). It replaces burst
  sizing and the controller's proposal with the least vector the recent arrivals needed, held.

Review (`Guards.review`): the proposal goes through the stages of controllers/guard_stages.py in the order
`REVIEW_STAGES` declares — idle release, the burst's return, step factors, bounds from slots, the ineffective-scaling
block, scale-down stabilisation, excluded periods, the utilisation band, the reconfiguration-cost test — each a small
class with its own options, documented there.

Everything a guard saw or did is in the Decision's `details` under ``guard.*`` keys (the loop writes them to
decisions.jsonl), and a guard that blocks or changes an action says so in the reason, after "guards:". Pure: no
I/O, no clock but the snapshots' times.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from controllers.common_params import MIN_DEGREE, PARALLEL_SLOTS
from controllers.cost_model import CostPrior, within_budget
from controllers.guard_stages import (BURST_RETURN, REVIEW_STAGES, ExcludedPeriods, IdleRelease, IneffectiveScaling,
                                     ReconfigurationCost, Review, Stabilisation, Stage, StepFactors, excluded_window,
                                     parse_periods, run_review)
from controllers.settle_mode import SettleMode
from controllers.types import Decision, OperatorMetrics, Snapshot, vector_text
from params.declare import Choices, Param, Rule, SearchRange

# batches whose arrival rates make the sustained rate (their median) and the offered load (their mean)
GUARD_WINDOW = 3
# burst sizing's margin for a batch run at changed degrees (the project's choice, between the two readings of Spark's
# slower batch after a change, 8.5 % and 13 %): in the noisy plant with that slowdown, +0.15 SLO points for DS2 at
# 1.004x the cost and +0.6 for threshold, over 16 bursty and nightly cases, none worse (docs/bursty.md; 0: as before)
BURST_HEADROOM = 0.10
# the source events of the nominal batch a calibration's costs are written as (`prior_batch`): large enough that its
# integer record counts round off nothing that matters
PRIOR_BATCH_RECORDS = 100_000
# most recent batches per (operator, degree) the capacity curve keeps: recent enough to follow a change of
# per-record cost, long enough to average a few noisy batches
CURVE_BATCHES = 10
# most recent batches per operator (any degree) the per-record and per-task cost fit uses
COST_BATCHES = 20



def _band_holds(values, context):
    return values["utilization_band"] < values["target_utilization"]


def _slots_hold(values, context):
    slots = values["parallel_slots"]
    return not slots or values["min_degree"] <= slots


GUARD_PARAMS: dict[str, Param] = {
    "guards": Param(bool, True, "the guard layer (controllers/guards.py: catch-up and burst sizing, observed "
                                "scalability, and the review's stages in controllers/guard_stages.py); false: the "
                                "controller exactly as published (the papers' reproductions run it so)",
                    search=Choices((True, False))),
    "target_utilization": Param(float, 0.7, "fraction of the trigger interval a batch should take: the band's "
                                            "centre, and what sizing aims at", 0.05, 1.0,
                                search=SearchRange(0.3, 0.95)),
    "utilization_band": Param(float, 0.2, "no action while utilisation is within target_utilization ± this band",
                              0.0, 1.0, open_minimum=True, open_maximum=True, search=SearchRange(0.05, 0.4)),
    "catch_up_s": Param(float, 10.0, "size for the arrival rate plus the backlog drained within this many seconds "
                                     "(guards on: at most the run's SLO less one trigger)",
                        0.0, open_minimum=True, search=SearchRange(2.0, 60.0, log=True)),
    **Stabilisation.PARAMS,
    **IneffectiveScaling.PARAMS,
    **ReconfigurationCost.PARAMS,
    **ExcludedPeriods.PARAMS,
    "burst_sizing": Param(bool, True, "guards: when a batch starts, size its vector for the events it is about to "
                                      "read if the current one would take longer than the catch-up time, and return "
                                      "after that batch (Guards.batch_start)", search_when=("guards", True),
                          search=Choices((True, False))),
    "burst_headroom": Param(float, BURST_HEADROOM, "guards: burst sizing fits a batch at changed degrees (a raise, "
                                                   "or the vector the last review set) into the budget with this "
                                                   "share of its predicted time to spare: such a batch runs longer "
                                                   "than the last batch's costs predict",
                            0.0, 1.0, search_when=("guards", True), search=SearchRange(0.0, 0.3)),
    "burst_wait_aware": Param(bool, True, "guards: burst sizing's budget is also at most the SLO less how long the "
                                          "oldest waiting event has waited (after a batch that overran its trigger)",
                              search_when=("guards", True), search=Choices((True, False))),
    **IdleRelease.PARAMS,
    "calibrated_start": Param(bool, True, "guards: burst sizing sizes a batch that no measured batch comes before "
                                          "(the run's first; or after batches too small to measure) on the costs "
                                          "the run's calibration measured, where the run has one (RunContext."
                                          "cost_prior); false, or no calibration: such a batch runs as the vector "
                                          "is", search_when=("guards", True), search=Choices((True, False))),
    "settle": Param(bool, False, "guards: hold the least vector (found greedily) that would have kept settle_target "
                                 "of the recent arrivals within the SLO, replayed on the operators' observed costs; "
                                 "change it only when it would not have, or when a lower one has for "
                                 "settle_down_s (controllers/settle_mode.py). Replaces burst sizing and the "
                                 "controller's proposal: few actions, paid in held slots, for engines where a change "
                                 "restarts the job", search_when=("guards", True), search=Choices((True, False))),
    "settle_target": Param(float, 0.995, "guards, settle: share of the replayed events the held vector must keep "
                                         "within the SLO (an error budget over settle_memory_s, or over a bounded "
                                         "run shorter than that)", 0.5, 1.0,
                           open_maximum=True, search_when=("settle", True), search=SearchRange(0.95, 0.999)),
    "settle_down_s": Param(float, 60.0, "guards, settle: a lower covering vector must have sufficed this long before "
                                        "the vector is lowered (after a burst, hindsight says less than the burst "
                                        "needed live)", 0.0, search_when=("settle", True),
                           search=SearchRange(0.0, 180.0)),
    "settle_memory_s": Param(float, 300.0, "guards, settle: seconds of arrivals the replay looks back over (a burst "
                                           "older than this no longer holds capacity)", 0.0, open_minimum=True,
                             search_when=("settle", True), search=SearchRange(60.0, 900.0, log=True)),
    "settle_late_ratio": Param(float, 2.0, "guards, settle: where no vector the slots allow keeps settle_target "
                                           "(peaks beyond capacity), hold the least one that lets at most this many "
                                           "times as many events be late as the best, and at most settle_late_points "
                                           "more (or one error budget more)",
                               1.0, search_when=("settle", True), search=SearchRange(1.0, 4.0)),
    "settle_late_points": Param(float, 0.05, "guards, settle: ... and at most this share of the events more (the "
                                             "project's choice: 5 SLO points)", 0.0, 1.0,
                                search_when=("settle", True), search=SearchRange(0.0, 0.2)),
    "settle_min_gain": Param(bool, True, "guards, settle: on a load no vector the slots allow carries, no raise where "
                                         "the held vector already keeps the covering goal (the best vector's share "
                                         "less the late ratio's or points' slack)", search_when=("settle", True),
                             search=Choices((True, False))),
    "settle_stage_share": Param(float, 0.0, "guards, settle: a raise takes degrees only for operators whose stage, "
                                            "on the largest batch the replay ran, takes at least this share of the "
                                            "operators' stage time, and for the longest stage (0: any operator; 1: "
                                            "the longest alone). A held degree costs a slot for as long as the "
                                            "vector is held; one of a short stage buys a few tenths of a second of "
                                            "a burst's batch with it",
                                0.0, 1.0, search_when=("settle", True), search=SearchRange(0.0, 0.5)),
    "settle_trim_share": Param(float, 0.25, "guards, settle: after a raise, once its batch has run, lower at once "
                                            "to the least vector that, replayed on the trigger grid over the "
                                            "arrivals in memory, keeps what the raised one keeps (less one error "
                                            "budget), where that frees at least this share of the held slots (a "
                                            "raise sized for events that had waited long already takes operators "
                                            "the later bursts do not need; one trim per raise, and no raise at "
                                            "a batch start it would take straight back while that batch is on "
                                            "time at the held vector; 1: never)",
                               0.0, 1.0, search_when=("settle", True), search=SearchRange(0.1, 1.0)),
    "settle_rate_sizing": Param(bool, False, "guards, settle: a raise at a batch start is sized for the batch after "
                                             "it as well, on what arrives meanwhile at the rate of the last trigger "
                                             "interval (a burst still arriving is more than the events waiting: "
                                             "sized on those alone, the next batch is late and takes a second raise)",
                                search_when=("settle", True), search=Choices((True, False))),
    "min_records": Param(int, 200, "records an operator must have processed before its rate is trusted (a handful "
                                   "of records measures task start-up, not the operator)", 1),
    "min_degree": MIN_DEGREE,
    "parallel_slots": PARALLEL_SLOTS,
    **StepFactors.PARAMS,
}

GUARD_RULES: tuple[Rule, ...] = (
    Rule(("utilization_band", "target_utilization"), _band_holds,
         "utilization_band ({utilization_band}) must be below target_utilization ({target_utilization}): the "
         "band's lower edge must stay above 0"),
    Rule(("min_degree", "parallel_slots"), _slots_hold,
         "min_degree ({min_degree}) must be <= parallel_slots ({parallel_slots}) when parallel_slots is set"),
    *ExcludedPeriods.RULES,
)


def catch_up_rate(arrival_rate: float, backlog: float, batch_duration_s: float, catch_up_s: float
                  ) -> tuple[float, float]:
    """(target rate, lag): the arrival rate plus the lag drained within catch_up_s. What arrives while a batch runs
    is always waiting when it ends; only the rest of the backlog is lag."""
    lag = max(0.0, backlog - arrival_rate * batch_duration_s)
    return arrival_rate + lag / catch_up_s, lag


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


@dataclass
class _Pending:
    """A scale-up whose effect is still to be measured."""

    old: int
    new: int
    rate_before: float
    min_batch: float  # batches below half the records of those the rate before came from are not counted
    records: int = 0
    span_s: float = 0.0


@dataclass(frozen=True)
class Block:
    """Further scale-ups of an operator are blocked: a scale-up old -> new gained `gain` (< min_gain) at `load`."""

    old: int
    new: int
    gain: float
    load: float


class Guards:
    """The guards' state for one controller in one run: `observe` each snapshot (once per batch id; the other
    methods call it too), size with `target_rate`, `stage_s`, `max_useful` or `catch_up_degree`, then `review` the
    proposal. `bind` hands over the run's latency bound."""

    def __init__(self, params: Mapping[str, Any], operators: Sequence[str], max_degree: int,
                 operator_caps: Mapping[str, int] | None = None,
                 stages: Sequence[type[Stage]] = REVIEW_STAGES):
        """`operator_caps`: per-operator upper bounds the controller's own configuration declares (a scaling
        policy's `never_above` limits), which the guards' sizing and bounds respect as they do the slots.
        `stages`: the review's stages this controller runs (REVIEW_STAGES' order is kept whatever is given)."""
        self.params = {key: params[key] for key in GUARD_PARAMS}
        self.stages = tuple(stage() for stage in REVIEW_STAGES if stage in stages)
        self.enabled = bool(self.params["guards"])
        self.operators = tuple(operators)
        self.max_degree = max_degree
        self.operator_caps = dict(operator_caps or {})
        slots = self.params["parallel_slots"]
        self.cap = min(max_degree, slots) if slots else max_degree
        self.periods = parse_periods(self.params["excluded_periods"])
        self.slo_latency_s: float | None = None
        self.horizon_s = 0.0  # the run's length when bounded (bind)
        self._curve: dict[tuple[str, int], deque] = {}
        self._costs: dict[str, deque] = {}
        self.recent: deque[Snapshot] = deque(maxlen=GUARD_WINDOW)
        self._last_batch: int | None = None
        self._pending: dict[str, _Pending] = {}
        self.blocks: dict[str, Block] = {}
        self.gains: dict[str, float] = {}
        self.lower_since: float | None = None  # since when lower vectors have been proposed without a break
        self._before_burst: dict[str, int] | None = None  # the vector a batch-start burst sizing raised
        self._sized_for_lag: dict[str, int] | None = None  # the vector a scale-up sized for a backlog set
        self._follow_live = False  # bind: slots unknown before the run, so the live count bounds the degrees
        self._prior: Snapshot | None = None  # bind: the calibrated costs as a nominal batch (calibrated_start)
        self.settle = SettleMode(self)  # the few-actions mode, used where `settle` is on

    # ---- observation: the capacity curve, the offered load, pending effectiveness checks ----

    def observe(self, snapshot: Snapshot) -> None:
        if self._last_batch is not None and snapshot.batch_id <= self._last_batch:
            return
        self._last_batch = snapshot.batch_id
        self.recent.append(snapshot)
        if self.params["settle"]:
            self.settle.observe(snapshot)
        if self._follow_live and snapshot.slots:
            self.cap = max(self.params["min_degree"], min(self.max_degree, snapshot.slots))
        for op in snapshot.operators:
            if op.records_in > 0 and op.span_s > 0:
                self._curve.setdefault((op.name, op.degree), deque(maxlen=CURVE_BATCHES)).append(
                    (op.records_in, op.busy_s, op.span_s))
                self._costs.setdefault(op.name, deque(maxlen=COST_BATCHES)).append(
                    (op.records_in, op.degree, op.busy_s))
        self._check_pending(snapshot)
        load = self.offered_load()
        for name, block in list(self.blocks.items()):
            if block.load > 0 and abs(load - block.load) > self.params["load_change"] * block.load:
                del self.blocks[name]

    def bind(self, slo_latency_s: float | None, slots: int = 0, follow_live: bool = True,
             horizon_s: float = 0.0, cost_prior: CostPrior | None = None) -> None:
        """The run's latency bound (it caps the catch-up time) and its task slots, when the controller is bound to a
        run. With `parallel_slots` unset (0) the run's slots bound the degrees: a degree beyond the tasks that can run
        at once adds waves, not speed, and burst sizing, which assumes linear speed-up where no degree was observed,
        would otherwise raise a batch to the run's max degree on a machine with half as many cores. Slots unknown
        before the run (0, a cluster master) are taken from each batch's registered executor cores unless
        `follow_live` is off (the controller's slot_cap=false). `horizon_s`: the run's length when it is bounded (0:
        unbounded); settle spends its error budget over it where it is shorter than settle_memory_s
        (`SettleMode.search`).
        `cost_prior`: the run's calibrated costs, which burst sizing uses before it has measured a batch
        (`calibrated_start`); ignored where they do not cover every operator."""
        self.slo_latency_s = slo_latency_s
        self._prior = (prior_batch(cost_prior, self.operators, self.max_degree)
                       if cost_prior is not None and cost_prior.covers(self.operators) else None)
        self.horizon_s = horizon_s
        if not self.params["parallel_slots"] and slots > 0:
            self.cap = max(self.params["min_degree"], min(self.max_degree, slots))
        # a cluster master's slots are known only once executors register: then each batch's count bounds them
        self._follow_live = follow_live and not self.params["parallel_slots"] and slots <= 0

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

    def lag_drained(self, snapshot: Snapshot) -> bool:
        """True when the current vector was set by a scale-up sized for a backlog as well as the rate (catch-up)
        and that backlog is gone (lag below a tenth of one trigger's arrivals at the sustained rate). The capacity
        added for the backlog is then no longer needed, though the batch may sit inside the band at it: left
        alone, a one-off backlog (a step's first batches) would set the vector for good (+27 % cost on the nightly
        step workload in the plant model)."""
        if self._sized_for_lag is None or dict(snapshot.degrees) != self._sized_for_lag:
            return False
        _, lag, sustained = self.target_rate(snapshot)
        return lag < 0.1 * sustained * snapshot.trigger_interval_s

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

    def _check_pending(self, snapshot: Snapshot) -> None:
        for name, pending in list(self._pending.items()):
            op = next((o for o in snapshot.operators if o.name == name), None)
            if op is None or op.degree != pending.new:
                del self._pending[name]  # something else happened to it: no verdict
                continue
            if op.records_in < pending.min_batch or op.span_s <= 0:
                continue  # a much smaller batch measures task start-up more than the operator
            pending.records += op.records_in
            pending.span_s += op.span_s
            if pending.records < self.params["min_records"]:
                continue
            del self._pending[name]
            gain = (pending.records / pending.span_s) / pending.rate_before - 1.0
            self.gains[name] = gain
            if gain < self.params["min_gain"]:
                self.blocks[name] = Block(pending.old, pending.new, gain, self.offered_load())

    def controllers_vector(self, current: Mapping[str, int]) -> dict[str, int]:
        """The vector the controller itself last chose: after a batch run at a vector burst sizing raised for it,
        the vector before the burst (the one the review returns to), else `current`. A controller that steps from
        the degrees in force (a policy's +2, the detector's +1) steps from its own, not from the burst's, which the
        review takes back (and a step past the burst's degrees at the slot bound would be lost with it)."""
        base = self._before_burst
        return dict(base) if self.enabled and base is not None else dict(current)

    # ---- sizing helpers ----

    def cap_of(self, op: str) -> int:
        """The bound on `op`'s degree: the slot bound, and the controller's own bound for it where it declares one
        (never below min_degree)."""
        own = self.operator_caps.get(op)
        return self.cap if own is None else max(self.params["min_degree"], min(self.cap, own))

    def max_useful(self, op: str, current: int) -> int:
        """The highest degree the guards allow for `op` now: its bound (`cap_of`); while an ineffective-scaling
        block holds, no higher than where scaling stopped helping (the block's starting degree) or than it is now."""
        block = self.blocks.get(op)
        cap = self.cap_of(op)
        return min(cap, max(block.old, current)) if block else cap

    def catch_up_degree(self, snapshot: Snapshot, op: str, target_rate: float) -> int | None:
        """The least degree (from min_degree) at which `op` carries `target_rate` (source events/s) with the batch
        within target_utilization of the trigger (else within the trigger): its stage at degree p takes its records
        at that rate (`stage_s`: per-record and per-task costs ÷ speedup(p)), the other stages and the fixed cost
        as observed, scaled to that rate. The largest degree allowed when nothing fits; None when the batch says
        too little."""
        metrics = snapshot.operator(op)
        if snapshot.records_read <= 0 or metrics.records_in <= 0 or metrics.busy_s <= 0:
            return None
        trigger = snapshot.trigger_interval_s
        scale = target_rate * trigger / snapshot.records_read  # this batch's work at the target rate
        spans = sum(o.span_s for o in snapshot.operators)
        fixed = max(0.0, snapshot.batch_duration_s - spans)
        others = (spans - metrics.span_s) * scale
        need = metrics.records_in * scale  # the operator's records per batch at the target rate
        per_record = metrics.busy_s / metrics.records_in
        top = self.max_useful(op, metrics.degree)
        floor = min(self.params["min_degree"], top)
        for share in (self.params["target_utilization"], 1.0):
            budget = share * trigger - fixed - others
            if budget <= 0:
                continue
            for p in range(floor, top + 1):
                if within_budget(self.stage_s(op, p, need, per_record), budget):
                    return p
        return top

    # ---- sizing at the start of a batch, for the events it is about to read ----

    def batch_start(self, pending: int, current: Mapping[str, int], trigger_s: float,
                    oldest_wait_s: float | None = None, time_s: float | None = None,
                    recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        """Burst sizing: the decision for a batch about to read `pending` events, when the current vector would take
        longer than the catch-up time on them (`catch_up_s()`, at most the SLO less one trigger; with
        `burst_wait_aware`, also at most the SLO less `oldest_wait_s`, how long the oldest of them has waited, when
        the source knows it); None when it would not (or too little was observed to say). The wait matters after a
        batch overran its trigger: the next one reads events older than one interval, and a budget of the SLO less
        one trigger plans to miss them (on Spark, the Google trace's opening burst: a 2.7 s first batch, then a second
        batch sized for 3 s that ended 0.18 s past the bound). A micro-batch engine knows what a batch will read
        before it runs it — the events already arrived and not yet read, which is a Kafka consumer's lag, not the
        future — so a burst that arrived between two batches can be met by the batch that reads it instead of the one
        after.

        The stages are predicted from the last batch (each operator's records per source event and busy time per
        record; the fitted per-task cost and observed speed-up, `stage_s`), its fixed cost as it was. Degrees are
        raised one at a time on the operator whose stage is longest, up to the slot bound and any ineffective-scaling
        block, until the batch fits. Only raises: the next review may return to the vector before it at once. With
        `settle`, the settle rule instead (`SettleMode.at_batch_start`; it needs `time_s`, the run time now)."""
        if self.enabled and self.params["settle"]:
            return None if time_s is None or pending <= 0 else self.settle.at_batch_start(pending, current, trigger_s,
                                                                                     time_s, recent_arrivals)
        if not (self.enabled and self.params["burst_sizing"]) or pending <= 0:
            return None
        last = self.recent[-1] if self.recent else None
        # per-record costs from a handful of records measure task start-up, not the operators
        measured = last is not None and last.records_read >= self.params["min_records"]
        if not measured:
            last = self._prior if self.params["calibrated_start"] else None
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

    # ---- the review of a proposal (controllers/guard_stages.py) ----

    def excluded(self, t: float) -> tuple[float, float] | None:
        return excluded_window(self.periods, t)

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

    def review(self, snapshot: Snapshot, proposed: Mapping[str, int], reason: str,
               details: Mapping[str, Any] | None = None) -> Decision:
        """The decision the guards let through for `proposed`: the proposal through `stages` (by default
        REVIEW_STAGES, in their order); with guards off, the proposal as it is."""
        details = dict(details or {})
        current = dict(snapshot.degrees)
        want = {op: int(proposed.get(op, current[op])) for op in self.operators}
        if not self.enabled:
            return Decision(want, reason, details=details)
        self.observe(snapshot)
        p = self.params
        ratio, utilization = self.utilization(snapshot)
        details.update({"guard.utilization": utilization, "guard.batch_ratio": ratio,
                        "guard.offered_rate": self.offered_load()})
        for op in self.operators:
            rate = self.observed_rate(op, current[op])
            if rate is not None:
                details[f"guard.rate.{op}"] = rate
            if op in self.gains:
                details[f"guard.gain.{op}"] = self.gains[op]
        if want != current:
            details["guard.proposed"] = vector_text(want)
        if p["settle"]:
            return self.settle.review(snapshot, reason, details)
        low, high = p["target_utilization"] - p["utilization_band"], p["target_utilization"] + p["utilization_band"]
        review = Review(snapshot, current, want, reason, details, utilization, low, high,
                        proposal_changes=want != current)
        decision = run_review(self.stages, review, self)
        if review.decided is None:
            self._applied(current, decision.degrees, details)
        return decision

    def _applied(self, current: Mapping[str, int], want: Mapping[str, int], details: Mapping[str, Any]) -> None:
        """What a proposal the stages let through starts: the stabilisation clock stops, a scale-up sized for a
        backlog is remembered (its capacity goes once the backlog is drained), and each operator scaled up is
        checked for effectiveness once its new degree has processed min_records."""
        if want == dict(current):
            return
        self.lower_since = None
        lag = details.get("guard.lag", details.get("lag", 0.0))
        raised = any(want[op] > current[op] for op in self.operators)
        self._sized_for_lag = dict(want) if raised and lag and lag > 0 else None
        for op in self.operators:
            if want[op] > current[op]:
                sums = self._sums(op, current[op])
                if sums:
                    batches = len(self._curve[(op, current[op])])
                    self._pending[op] = _Pending(current[op], want[op], sums[0] / sums[2], 0.5 * sums[0] / batches)
