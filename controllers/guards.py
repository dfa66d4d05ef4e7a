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
  operator goes to `min_degree` at once, before any other review but excluded periods. Spark runs no batch until events arrive, and burst
  sizing sizes that batch as it starts; a vector held until then is charged through the silence for nothing (on the
  held-out Azure code trace DS2 held a burst's vector through a 25-s silence: the sustained rate, a median of three
  batches, still remembered the burst). Load without silences rarely has such a batch.

- **Settle** (`settle`, off by default): a few-actions mode for engines where a change restarts the job. The guards
  hold the least vector (found greedily) that, replayed over the arrivals of the last `settle_memory_s` on the
  operators' observed costs, would have kept `settle_target` of them within the SLO (controllers/settle.py; the
  arrivals by the source's profile, `Snapshot.arrival_profile`, 0.25-s bins; each operator's speed-up over the
  whole memory, where the bursts' long stages weigh most). They raise to it when the held vector would have let the
  error budget burn at twice its rate (`settle_act_share`) on arrivals since settle chose it (the ones before were
  weighed then; those are replayed from the real queue after the first batch at it) — at a batch start, where the
  events waiting are replayed as the one batch that will read them; a
  review leaves the raise to the next batch start when the runner asks there — and lower to it once a lower one has
  sufficed for `settle_down_s`, if the change pays for itself (the reconfiguration-cost test). Where no vector the
  slots allow keeps the target, the least one with at most `settle_late_ratio` times the best one's late events and
  at most `settle_late_points` more; a raise is sized on the late events it is judged on, and, there, not taken where
  the held vector already keeps that much (`settle_min_gain`). A raise rescues events that have already waited
  (on a trace that opens on a burst, through the slow first batches) and takes cheap operators too: at the first
  review after its batch, settle trims it once to the least vector that, replayed on the trigger grid over the same
  arrivals, keeps what the raised one keeps less one error budget, where that frees at least `settle_trim_share` of
  the held slots (`_settle_trim`); a raise it would take straight back is not taken while the batch about to start
  is on time at the held vector (`_trim_would_undo`). The error budget is spent over `settle_memory_s`,
  or over the run where it is bounded and shorter (`RunContext.duration_s`: a replayed workload is judged over it),
  and there no raise is taken that the rest of the run cannot repay (`_raise_can_pay`), nor a lowering whose freed
  slots the rest of the run cannot repay. With `settle_rate_sizing` (off by default), a raise at a batch start is
  also sized for the next batch, on what arrives meanwhile at the last trigger interval's rate. It replaces burst sizing and the controller's proposal (recorded in the
  details, not applied), so `ds2:settle=true` and `threshold:settle=true` act alike; slot bounds, blocks already set
  and excluded periods hold; the ineffective-scaling check is not run on its raises (they are sized on the observed
  curve already).

Review (`Guards.review`, in this order):

1. **Bounds from slots** (`min_degree`, `parallel_slots`, the run's max degree): a proposal is brought into
   [min_degree, min(parallel_slots, max_degree)] (tasks beyond the executor cores add waves, not speed). With
   `parallel_slots` unset, the slots the run reports (`RunContext.slots`: local[N] gives N) bound it; burst sizing
   stays within the same bound.
2. **Ineffective scaling** (`min_gain`, `load_change`): after a scale-up of an operator, its observed processing
   rate (records per second of stage wall time, over `min_records` records in batches at least half as large as
   before) at the new degree is compared with the rate at the old one. A gain below `min_gain` (a fraction) blocks
   scale-ups of that operator beyond max(the degree it was scaled up from, its current degree) until the offered
   load (mean arrival rate over the last GUARD_WINDOW batches) differs from the load when the block was set by more
   than `load_change` (a fraction of it). Gains and blocks are in the details and the reason.
3. **Stabilisation** (`stabilisation_s`): scale-ups at once; a scale-down only once lower vectors (some operator
   lower, none higher) have been proposed continuously for `stabilisation_s`, in one change, to the latest of them.
   Any other proposal restarts the clock; the downs in a proposal that also scales up wait.
4. **Excluded periods** (`excluded_periods`): no change while the run time (the snapshot's `time_s`) is inside a
   declared window, e.g. ``"30-60,120-150"`` (start inclusive, end exclusive).
5. **Utilisation band** (`target_utilization` ± `utilization_band`): no change while the observed utilisation is
   inside the band; outside it only the direction that brings it back (no scale-up below the band, no scale-down
   above it). The utilisation is the last batch's, on the load the next batch will read: its duration with its
   stages scaled to the backlog plus the sustained rate until the next trigger, its fixed cost as it was, ÷ the
   trigger interval (`utilization`). A spike waiting in the backlog counts; one the last batch already read does
   not, so a controller reacting to the last batch's time does not chase it.
6. **Reconfiguration cost** (`reconfig_cost_s`, `benefit_horizon_s`): a change that only lowers degrees must pay
   for itself. Model, in slot-seconds: its benefit is the slots it frees over the horizon, (Σp − Σp')·H; its cost
   is `reconfig_cost_s` of the whole allocation for the change and as much again for the change back when the
   load returns, c·(Σp + Σp'); it is applied only when benefit > cost. A change that scales up is never blocked by
   cost: missing the SLO is not priced in slot-seconds. c is declared, not measured: this project changes degrees
   live (docs/benchmarks.md: in force one batch later, no restart), so the default is one trigger interval.

Everything a guard saw or did is in the Decision's `details` under ``guard.*`` keys (the loop writes them to
decisions.jsonl), and a guard that blocks or changes an action says so in the reason, after "guards:". Pure: no
I/O, no clock but the snapshots' times.
"""
from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from controllers.common_params import MIN_DEGREE, PARALLEL_SLOTS
from controllers.cost_model import CostPrior, within_budget
from controllers.settle import (Arrivals, Replay, StageModel, arrival_segments, covering_goal, covering_vector,
                               replay)
from controllers.types import Decision, OperatorMetrics, Snapshot
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
# the detail marking a decision that ends a burst sizing (its return to the vector before it)
BURST_RETURN = "guard.burst_return"
# most recent batches per (operator, degree) the capacity curve keeps: recent enough to follow a change of
# per-record cost, long enough to average a few noisy batches
CURVE_BATCHES = 10
# most recent batches per operator (any degree) the per-record and per-task cost fit uses
COST_BATCHES = 20
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


def parse_periods(text: str) -> list[tuple[float, float]]:
    """'30-60,120-150' or a JSON list [[30, 60], [120, 150]] -> [(30.0, 60.0), (120.0, 150.0)]; ValueError with
    what is wrong."""
    text = (text or "").strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            raw = json.loads(text)
            pairs = [(float(a), float(b)) for a, b in raw]
        except (ValueError, TypeError) as exc:
            raise ValueError(f"expected a list of [start, end] pairs, got {text!r}") from exc
    else:
        pairs = []
        for part in text.split(","):
            match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*-\s*(\d+(?:\.\d*)?)\s*", part)
            if not match:
                raise ValueError(f"expected 'start-end' windows in seconds separated by commas, e.g. '30-60,120-150', "
                                 f"got {part.strip()!r}")
            pairs.append((float(match[1]), float(match[2])))
    for start, end in pairs:
        if not 0 <= start < end:
            raise ValueError(f"window {start:g}-{end:g} must have 0 <= start < end")
    return sorted(pairs)


def _periods_hold(values, context):
    try:
        parse_periods(values["excluded_periods"])
    except ValueError as exc:
        return f"parameter 'excluded_periods': {exc}"
    return True


def _band_holds(values, context):
    return values["utilization_band"] < values["target_utilization"]


def _slots_hold(values, context):
    slots = values["parallel_slots"]
    return not slots or values["min_degree"] <= slots


GUARD_PARAMS: dict[str, Param] = {
    "guards": Param(bool, True, "the guard layer (controllers/guards.py: band, catch-up sizing, burst sizing, "
                                "stabilisation, ineffective-scaling detection, observed scalability, "
                                "reconfiguration cost, slot bounds, excluded periods); false: the controller exactly "
                                "as published (the papers' reproductions run it so). On by default: on bursty real "
                                "traces it holds the SLO where the published controllers do not, at no cost on the "
                                "nightly workloads (docs/bursty.md)",
                    search=Choices((True, False))),
    "target_utilization": Param(float, 0.7, "fraction of the trigger interval a batch should take: the band's "
                                            "centre, and what sizing aims at", 0.05, 1.0,
                                search=SearchRange(0.3, 0.95)),
    "utilization_band": Param(float, 0.2, "no action while utilisation is within target_utilization ± this band",
                              0.0, 1.0, open_minimum=True, open_maximum=True, search=SearchRange(0.05, 0.4)),
    "catch_up_s": Param(float, 10.0, "size for the arrival rate plus the backlog drained within this many seconds "
                                     "(guards on: at most the run's SLO less one trigger)",
                        0.0, open_minimum=True, search=SearchRange(2.0, 60.0, log=True)),
    "stabilisation_s": Param(float, 0.0, "guards: a scale-down is applied only after being recommended "
                                          "continuously this long (scale-ups at once)", 0.0,
                             search_when=("guards", True), search=SearchRange(0.0, 120.0)),
    "min_gain": Param(float, 0.1, "guards: a scale-up must raise the operator's observed processing rate by this "
                                  "fraction, or its further scale-ups are blocked until the load changes", 0.0, 1.0,
                      search_when=("guards", True), search=SearchRange(0.0, 0.3)),
    "load_change": Param(float, 0.5, "guards: relative change of the offered load (mean over 3 batches) that lifts "
                                     "an ineffective-scaling block", 0.0, open_minimum=True,
                         search_when=("guards", True), search=SearchRange(0.1, 1.0)),
    "reconfig_cost_s": Param(float, 2.0, "guards: seconds of the whole allocation a change of degrees costs (a "
                                         "scale-down needs (Σp-Σp')·benefit_horizon_s > this·(Σp+Σp'))", 0.0,
                             search_when=("guards", True), search=SearchRange(0.0, 10.0)),
    "benefit_horizon_s": Param(float, 30.0, "guards: seconds over which a scale-down's freed slots are counted",
                               0.0, open_minimum=True, search_when=("guards", True), search=SearchRange(5.0, 120.0, log=True)),
    "excluded_periods": Param(str, "", "guards: windows of run time with no scaling, seconds from the start: "
                                       "'30-60,120-150' or [[30, 60], [120, 150]]", structured=True),
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
    "idle_release": Param(bool, True, "guards: after a batch during which nothing arrived and that left nothing "
                                      "waiting, down to min_degree everywhere at once: the next batch runs only when "
                                      "events arrive, and burst sizing sizes it as it starts (with burst_sizing; "
                                      "a silence is charged at the vector held through it)",
                          search_when=("guards", True), search=Choices((True, False))),
    "calibrated_start": Param(bool, True, "guards: burst sizing sizes a batch that no measured batch comes before "
                                          "(the run's first; or after batches too small to measure) on the costs "
                                          "the run's calibration measured, where the run has one (RunContext."
                                          "cost_prior); false, or no calibration: such a batch runs as the vector "
                                          "is", search_when=("guards", True), search=Choices((True, False))),
    "settle": Param(bool, False, "guards: hold the least vector (found greedily) that would have kept settle_target "
                                 "of the recent arrivals within the SLO, replayed on the operators' observed costs; "
                                 "change it only when it would not have, or when a lower one has for "
                                 "settle_down_s (controllers/settle.py). Replaces burst sizing and the "
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
                                             "project's choice: the issue's 5 SLO points)", 0.0, 1.0,
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
                                            "a burst's batch with it (off by default)",
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
                                             "sized on those alone, the next batch is late and takes a second raise; "
                                             "off by default: in the plant it took more actions than it saved)",
                                search_when=("settle", True), search=Choices((True, False))),
    "min_records": Param(int, 200, "records an operator must have processed before its rate is trusted (a handful "
                                   "of records measures task start-up, not the operator)", 1),
    "min_degree": MIN_DEGREE,
    "parallel_slots": PARALLEL_SLOTS,
}

GUARD_RULES: tuple[Rule, ...] = (
    Rule(("utilization_band", "target_utilization"), _band_holds,
         "utilization_band ({utilization_band}) must be below target_utilization ({target_utilization}): the "
         "band's lower edge must stay above 0"),
    Rule(("min_degree", "parallel_slots"), _slots_hold,
         "min_degree ({min_degree}) must be <= parallel_slots ({parallel_slots}) when parallel_slots is set"),
    Rule(("excluded_periods",), _periods_hold,
         "excluded_periods must be windows 'start-end' (seconds, 0 <= start < end) separated by commas"),
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


def vector_text(degrees: Mapping[str, int]) -> str:
    return ",".join(f"{op}={d}" for op, d in degrees.items())


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
                 operator_caps: Mapping[str, int] | None = None):
        """`operator_caps`: per-operator upper bounds the controller's own configuration declares (a scaling
        policy's `never_above` limits), which the guards' sizing and bounds respect as they do the slots."""
        self.params = {key: params[key] for key in GUARD_PARAMS}
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
        self._recent: deque[Snapshot] = deque(maxlen=GUARD_WINDOW)
        self._last_batch: int | None = None
        self._pending: dict[str, _Pending] = {}
        self.blocks: dict[str, Block] = {}
        self.gains: dict[str, float] = {}
        self._lower_since: float | None = None  # since when lower vectors have been proposed without a break
        self._before_burst: dict[str, int] | None = None  # the vector a batch-start burst sizing raised
        self._sized_for_lag: dict[str, int] | None = None  # the vector a scale-up sized for a backlog set
        self._follow_live = False  # bind: slots unknown before the run, so the live count bounds the degrees
        self._segments: deque[tuple[float, float, float]] = deque()  # settle: (start, end, events) arrivals
        self._settle_curve: deque[tuple[float, str, int, float, float]] = deque()  # settle: (t, op, degree, busy, span)
        self._settle_chosen: tuple[dict[str, int], float] | None = None  # settle: the vector it last chose, and when
        self._settle_anchor: tuple[float, int] | None = None  # settle: (end, backlog) of the first batch after it
        self._settle_no_raise: str | None = None  # settle: which test held a raise the budget called for, if one did
        self._settle_start_held: str | None = None  # the same at the last batch start, for the next review's record
        # settle: the vector before a raise the review after its batch may still trim back towards (None: no trim due)
        self._settle_trim_floor: dict[str, int] | None = None
        self._settle_trimmed = False  # settle: the vector held now is a trim's
        self._settle_trims_off = False  # settle: a trimmed vector had to be raised again: no more trims this run
        self._starts_seen = False  # settle: the runner asks at batch starts, so raises wait for them
        self._settle_sized_rate = 0.0  # settle: the rate the last raise searched sized the next batch for (events/s)
        self._prior: Snapshot | None = None  # bind: the calibrated costs as a nominal batch (calibrated_start)

    # ---- observation: the capacity curve, the offered load, pending effectiveness checks ----

    def observe(self, snapshot: Snapshot) -> None:
        if self._last_batch is not None and snapshot.batch_id <= self._last_batch:
            return
        self._last_batch = snapshot.batch_id
        self._recent.append(snapshot)
        if self.params["settle"]:
            self._segments.extend(arrival_segments(
                snapshot.time_s - snapshot.interval_s, snapshot.time_s, snapshot.arrivals, snapshot.arrival_profile,
                SETTLE_SPREAD_TRIGGERS * snapshot.trigger_interval_s))
            since = snapshot.time_s - self.params["settle_memory_s"]
            while self._segments and self._segments[0][1] < since:
                self._segments.popleft()
            self._settle_curve.extend((snapshot.time_s, op.name, op.degree, op.busy_s, op.span_s)
                                      for op in snapshot.operators if op.records_in > 0 and op.span_s > 0)
            while self._settle_curve and self._settle_curve[0][0] < since:
                self._settle_curve.popleft()
            if self._settle_chosen is not None and self._settle_anchor is None \
                    and snapshot.time_s > self._settle_chosen[1]:
                self._settle_anchor = (snapshot.time_s, snapshot.backlog)
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
        unbounded); settle spends its error budget over it where it is shorter than settle_memory_s (`_settle`).
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
        rates = sorted(s.arrivals / s.interval_s for s in self._recent if s.interval_s > 0)
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
        interval = sum(s.interval_s for s in self._recent)
        return sum(s.arrivals for s in self._recent) / interval if interval > 0 else 0.0

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
        `settle`, the settle rule instead (`_settle_at_start`; it needs `time_s`, the run time now)."""
        if self.enabled and self.params["settle"]:
            return None if time_s is None or pending <= 0 else self._settle_at_start(pending, current, trigger_s,
                                                                                     time_s, recent_arrivals)
        if not (self.enabled and self.params["burst_sizing"]) or pending <= 0:
            return None
        last = self._recent[-1] if self._recent else None
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

    def _return_undone(self, snapshot: Snapshot, back: Mapping[str, int]) -> bool:
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

    # ---- settle: the least vector the recent arrivals needed (controllers/settle.py) ----

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
                per_record[op.name], per_task[op.name] = self.task_costs(op.name) or (op.busy_s / op.records_in, 0.0)
            speedups[op.name] = [self._settle_speedup(op.name, p) for p in range(1, self.cap + 1)]
        return StageModel(max(0.0, last.batch_duration_s - spans), ratio, per_record, per_task, speedups)

    def _settle_speedup(self, op: str, degree: int) -> float:
        """The operator's effective parallelism at `degree` over the whole settle memory (busy ÷ stage wall time,
        summed, so the long stages of the bursts weigh most), else `speedup`. The replay predicts burst batches; a
        speed-up read from the last few batches at a degree, all small once a burst's vector is held, is not theirs
        (on Spark, enrich at 4: 2.2 over small batches, 4.0 over the bursts, and a held vector raised for nothing)."""
        busy = span = 0.0
        for _, name, q, b, w in self._settle_curve:
            if name == op and q == degree:
                busy, span = busy + b, span + w
        return min(float(degree), busy / span) if span > 0 else self.speedup(op, degree)

    def _settle_inputs(self, trigger_s: float, pending: tuple[float, int, tuple[int, ...] | None] | None = None
                       ) -> tuple[StageModel, Arrivals, float | None] | None:
        """The replay's stage model, the arrivals in memory (plus, at a batch start, what arrived since the last
        batch ended: `pending` as in `_settle`) and when the events now waiting began to arrive; None before the
        replay can be trusted."""
        if not self._recent or self.slo_latency_s is None:
            return None
        last = self._recent[-1]
        usable = next((snap for snap in reversed(self._recent) if snap.records_read >= self.params["min_records"]),
                      None)
        model = self.stage_model(usable) if usable else None  # a near-empty batch measures task start-up
        if model is None:
            return None
        segments, waiting_since = list(self._segments), None
        if pending is not None:
            now, waiting, profile = pending
            if now > last.time_s:
                segments.extend(arrival_segments(last.time_s, now, max(0, waiting - last.backlog), profile,
                                                 SETTLE_SPREAD_TRIGGERS * trigger_s))
        arrivals = Arrivals.from_segments(segments)
        if pending is not None:
            waiting_since = arrivals.time_of(arrivals.total - pending[1])
        return model, arrivals, waiting_since

    def _settle(self, current: Mapping[str, int], trigger_s: float,
                pending: tuple[float, int, tuple[int, ...] | None] | None = None, act_below: float | None = None
                ) -> tuple[dict[str, int], float, float, bool] | None:
        """(covering vector, its replayed share, the current vector's share against it, whether a raise is due) over
        the arrivals in memory
        — plus, at a batch start, what arrived since the last batch ended (`pending`: now, the events waiting, their
        profile when known) — or None before the replay can be trusted. The current vector's share counts only the
        late events that arrived since settle chose it (all of them for a vector it did not choose): the arrivals
        before were weighed when it was chosen, and on Spark a replay of the same history drifts by tenths of a point
        as the cost estimates move, which raised held vectors for no new arrival. Those arrivals are replayed from
        the real queue at the end of the first batch after the choice (`replay`'s anchor), not behind a re-run of
        the batches before it, which ran as they ran. The covering vector is searched
        only when that share is below `act_below`, when given (else it is the current vector, unsearched): a batch
        start needs it only to raise, a review also to lower. A raise is due when the current vector's share is
        below `settle_act_share`, except, with `settle_min_gain`, on a load no vector carries where the current one
        already keeps the covering goal (`covering_goal`): a raise there buys a point or two for slots held the rest
        of the run. A raise's vector is sized on the late events it is judged on; a vector to lower to (then never
        above the current one in any operator), on every arrival in memory."""
        inputs = self._settle_inputs(trigger_s, pending)
        if inputs is None:
            return None
        model, arrivals, waiting_since = inputs
        chosen = self._settle_chosen
        since = chosen[1] if chosen is not None and chosen[0] == dict(current) else None
        anchor = self._settle_anchor if since is not None else None
        slo, target = self.slo_latency_s, self.params["settle_target"]
        window = self.params["settle_memory_s"]
        if 0 < self.horizon_s < window:
            # a bounded run shorter than the memory is judged over itself: planned over settle_memory_s, a 60 s run's
            # budget lets a sustained rise wait for late events the run never outlives (the nightly step: 97.7 %)
            window = self.horizon_s
        held = replay(arrivals, lambda n: model.batch_s(current, n), trigger_s, slo, waiting_since, since, anchor)
        now_share = held.new_share(window)
        self._settle_no_raise = None
        if act_below is not None and now_share >= act_below:
            return dict(current), now_share, now_share, False
        floor = {op: min(self.params["min_degree"], self.max_useful(op, current[op])) for op in self.operators}
        top = {op: self.max_useful(op, current[op]) for op in self.operators}
        ratio, points = self.params["settle_late_ratio"], self.params["settle_late_points"]
        raising, goal = now_share < settle_act_share(target), None
        if raising and self.params["settle_min_gain"]:
            best = replay(arrivals, lambda n: model.batch_s(top, n), trigger_s, slo, waiting_since, since, anchor)
            goal = covering_goal(best.new_share(window), target, ratio, points)
            raising = now_share < goal
            if not raising:
                self._settle_no_raise = (f"min gain: no vector the slots allow carries this load (the best keeps "
                                         f"{best.new_share(window):.1%}) and the held one keeps the covering goal "
                                         f"{goal:.1%}")
            if not raising and act_below is not None:
                return dict(current), now_share, now_share, False
        stage_share = self.params["settle_stage_share"]
        vector, result = covering_vector(model, arrivals, floor, top, trigger_s, slo, target, window, waiting_since,
                                         ratio, points, since if raising else None, goal if raising else None,
                                         anchor, stage_share=stage_share)
        at_start = raising and pending is not None
        self._settle_sized_rate = self._settle_next_rate(arrivals, trigger_s) if at_start else 0.0
        if self._settle_sized_rate:
            # from the vector the waiting events need, on up for the next batch as well; its goal is the slot
            # bound's on the same projection, so a burst beyond every vector neither drops the raise nor sends it
            # to the bound
            sized, _ = covering_vector(model, arrivals, vector, top, trigger_s, slo, target, window, waiting_since,
                                       ratio, points, since, None, anchor, self._settle_sized_rate, stage_share)
            if sized == vector:
                self._settle_sized_rate = 0.0
            vector = sized
        if raising and not self._raise_can_pay(held, result, arrivals, since, target, pending is not None):
            left = max(0.0, self.horizon_s - arrivals.times[-1])
            self._settle_no_raise = (f"repay: a raise to {vector_text(vector)} would not save the error budget it is "
                                     f"for in the {left:.0f} s left of the run")
            if act_below is not None:
                return dict(current), now_share, now_share, False
            raising = False  # a review: no raise, but a lower vector may still do
            vector, result = covering_vector(model, arrivals, floor, top, trigger_s, slo, target, window,
                                             waiting_since, ratio, points, stage_share=stage_share)
        if raising and pending is not None and held.late_last < 0.5 and self._trim_would_undo(current, vector,
                                                                                              trigger_s):
            self._settle_no_raise = (f"undone: the batch about to start is on time at {vector_text(current)}, and "
                                     f"the trim after a raise to {vector_text(vector)} would take it back")
            return dict(current), now_share, now_share, False
        if not raising:
            vector = {op: min(vector[op], current[op]) for op in self.operators}
        return vector, result.new_share(window), now_share, raising

    def _trim_would_undo(self, current: Mapping[str, int], vector: Mapping[str, int], trigger_s: float) -> bool:
        """Whether the trim at the review after a raise from `current` to `vector` (where `current` lacks some of
        it) would lower it back to `current`, on the arrivals seen so far (`_settle_trim`).
        Why: on Spark (2026-12-04, a machine whose batch overhead varied 0.79 on the log scale) a batch that ran slow
        left late events behind the held vector, the next batch start raised for them with 292-1,555 events
        waiting, and the trim took the raise back 0.6-1.1 s later: two actions for a batch that was on time at the
        held vector anyway (four such pairs in six settled runs on the Google traces)."""
        if self._settle_trims_off or self.params["settle_trim_share"] >= 1.0:
            return False
        raised = {op: max(current[op], vector[op]) for op in self.operators}
        if raised == dict(current):
            return False
        found = self._settle_trim(raised, current, trigger_s)
        return found is not None and found[0] == {op: current[op] for op in self.operators}

    def _settle_next_rate(self, arrivals: Arrivals, trigger_s: float) -> float:
        """The rate (events/s) a raise at a batch start sizes the next batch for (`settle_rate_sizing`): that of
        the last trigger interval's arrivals, the burst as it arrives now;
        0 with the option off."""
        if not self.params["settle_rate_sizing"] or len(arrivals.times) < 2:
            return 0.0
        now = arrivals.times[-1]
        span = min(trigger_s, now - arrivals.times[0])
        return (arrivals.total - arrivals.due(now - span)) / span if span > 0 else 0.0

    def _raise_can_pay(self, held: Replay, raised: Replay, arrivals: Arrivals, since: float | None,
                       target: float, waiting: bool) -> bool:
        """In a bounded run, whether a raise can still move the run's attainment by the error budget it is taken for
        (1 - `settle_act_share`): the late events it saves in the batch about to start (at a batch start, `waiting`;
        a review's last replayed batch has run), plus those it would have saved per second since the held vector's
        choice, over what is left of the run, against the run's events. Always in a run that is not bounded. Why:
        judged on the history, a raise is as due in a run's last seconds as anywhere; on Spark the real-time Google
        trace's settled seed 2 raised three operators at 174 s of 180 for a peak whose batch had already run."""
        if self.horizon_s <= 0 or held.judged <= 0:
            return True
        now, first = arrivals.times[-1], arrivals.times[0]
        held_for = max(1e-9, now - (first if since is None else max(first, since)))

        def past(r: Replay) -> float:  # late events of batches that have run (all of a review's)
            return r.late_since - (r.late_last if waiting else 0.0)

        now_saved = max(0.0, held.late_last - raised.late_last) if waiting else 0.0
        saved = now_saved + max(0.0, past(held) - past(raised)) * max(0.0, self.horizon_s - now) / held_for
        return saved / held.window_events(self.horizon_s) >= 1.0 - settle_act_share(target)

    def _settle_chose(self, vector: Mapping[str, int], time_s: float, raised_from: Mapping[str, int] | None = None,
                      trimmed: bool = False) -> None:
        """Settle holds `vector` from `time_s`: raised from the vector `raised_from`, or trimmed, or lowered."""
        if raised_from is not None and self._settle_trimmed:
            self._settle_trims_off = True  # the trim cost an action and a raise: it is not tried again
        self._settle_chosen, self._settle_anchor = (dict(vector), time_s), None
        self._settle_trimmed = trimmed
        self._settle_trim_floor = dict(raised_from) if raised_from is not None and not self._settle_trims_off else None

    @property
    def _settle_trim_due(self) -> bool:
        """Whether the review after the last raise's batch may still trim it."""
        return self._settle_trim_floor is not None

    def _settle_trim(self, current: Mapping[str, int], floor: Mapping[str, int], trigger_s: float) -> tuple[dict[str, int], float, float, float] | None:
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
        inputs = self._settle_inputs(trigger_s)
        if inputs is None:
            return None
        model, arrivals, _ = inputs
        slo = self.slo_latency_s
        held = replay(arrivals, lambda n: model.batch_s(current, n), trigger_s, slo)
        goal = held.attainment - (1.0 - self.params["settle_target"])
        floor = {op: min(floor[op], current[op]) for op in self.operators}
        vector, result = covering_vector(model, arrivals, floor, dict(current), trigger_s, slo, goal, 0.0, goal=goal)
        held_slots = sum(current.values())
        freed = (held_slots - sum(vector.values())) / held_slots
        if freed <= 0 or freed < self.params["settle_trim_share"]:
            return None
        return vector, result.attainment, held.attainment, freed

    def _settle_at_start(self, pending: int, current: Mapping[str, int], trigger_s: float, time_s: float,
                         recent_arrivals: tuple[int, ...] | None) -> Decision | None:
        """At a batch start: raise to the covering vector when the current one, replayed over the arrivals in memory
        and the events now waiting (read at once by this batch), keeps less than `settle_act_share` of them on
        time. Only raises, and no return."""
        self._starts_seen = True
        act = settle_act_share(self.params["settle_target"])
        found = self._settle(current, trigger_s, (time_s, pending, recent_arrivals), act_below=act)
        if found is None:
            return None
        vector, attainment, now_attainment, raise_due = found
        if not raise_due:
            if self._settle_no_raise is not None:
                # a batch start that changes nothing makes no decision: the next review's record says what was held
                self._settle_start_held = f"at {time_s:.1f} s, {pending} events waiting: {self._settle_no_raise}"
            return None
        want = {op: max(current[op], vector[op]) for op in self.operators}
        if want == dict(current):
            return None
        self._settle_chose(want, time_s, raised_from=current)
        rate = self._settle_sized_rate
        return Decision(want, f"settle: {pending} events waiting; replayed, {vector_text(current)} keeps "
                              f"{now_attainment:.1%} on time < {act:.1%}, "
                              f"{vector_text(want)} {attainment:.1%}"
                              + (f" (with the next batch at {rate:.0f} ev/s)" if rate else ""),
                        details={"guard.settle_attainment_current": now_attainment,
                                 "guard.settle_attainment": attainment, "guard.settle_vector": vector_text(vector),
                                 "guard.settle_next_rate": rate,
                                 "predicted.records": float(pending), "predicted.vector": vector_text(want)})

    def _settle_review_trim(self, current: Mapping[str, int], t: float, trigger_s: float
                            ) -> tuple[dict[str, int], float, float, float] | None:
        """At the first review after a raise's batch (the raised vector in force): (the trimmed vector, its replayed
        attainment, the held one's, the share of slots it frees) when `_settle_trim` frees at least
        `settle_trim_share` of the held slots; else None, and no trim until the next raise. One trim per raise, and
        none after a trimmed vector had to be raised again: an action in this mode is a restart, and on a trace
        whose bursts recur (the held-out Alibaba LoRA trace in the plant) raise, trim, raise again took 6 actions
        where holding took 3.5."""
        chosen, floor = self._settle_chosen, self._settle_trim_floor
        if floor is None or chosen is None or chosen[1] >= t:
            return None
        self._settle_trim_floor = None
        if chosen[0] != dict(current):
            return None
        found = self._settle_trim(current, floor, trigger_s)
        if found is None:
            return None
        vector, attainment, held, freed = found
        self._lower_since = None
        self._settle_chose(vector, t, trimmed=True)
        return vector, attainment, held, freed

    def _settle_review(self, snapshot: Snapshot, reason: str, details: dict[str, Any]) -> Decision:
        """The review with settle on: the controller's proposal is recorded, not applied. Up at once to the covering
        vector when the current one, replayed, keeps less than `settle_act_share`; down to it when it is lower and
        has been for settle_down_s, and the change pays for itself (the reconfiguration-cost test); else hold."""
        current = dict(snapshot.degrees)
        p, t = self.params, snapshot.time_s
        for key in [k for k in details if k.startswith("predicted.")]:
            del details[key]  # the proposal's predictions: the ledger must not credit them to the settle rule
        if self._settle_start_held is not None:
            details["guard.settle_start_held"], self._settle_start_held = self._settle_start_held, None
        window = self._excluded(t)
        trimmed = None if window is not None else self._settle_review_trim(current, t, snapshot.trigger_interval_s)
        if trimmed is not None:
            vector, attainment, held, freed = trimmed
            details.update({"guard.settle_attainment": attainment, "guard.settle_attainment_current": held,
                            "guard.settle_trim": True, "guard.settle_vector": vector_text(vector)})
            return Decision(vector, f"{reason}; guards: settle: trim after the raise: replayed on the trigger grid, "
                                    f"{vector_text(vector)} keeps {attainment:.1%} on time where "
                                    f"{vector_text(current)} keeps {held:.1%}, {freed:.0%} fewer slots",
                            details=details)
        found = None if window is not None else self._settle(current, snapshot.trigger_interval_s)
        if found is None:
            if window is not None:
                self._lower_since = None
                self._settle_trim_floor = None  # a trim is for the review right after the raise's batch, not later
            note = "excluded period" if window is not None else "too little observed to replay"
            return Decision(current, f"{reason}; guards: settle holds {vector_text(current)} ({note})", details=details)
        vector, attainment, now_attainment, raise_due = found
        details.update({"guard.settle_attainment_current": now_attainment, "guard.settle_attainment": attainment,
                        "guard.settle_vector": vector_text(vector)})
        target, act = p["settle_target"], settle_act_share(p["settle_target"])
        want = {op: max(current[op], vector[op]) for op in self.operators}
        if raise_due and want != current:
            self._lower_since = None
            if self._starts_seen:
                return Decision(current, f"{reason}; guards: settle: replayed, {vector_text(current)} keeps "
                                         f"{now_attainment:.1%} on time < {act:.1%}; the raise is left to the next "
                                         f"batch start (it sees the events waiting)", details=details)
            self._settle_chose(want, t, raised_from=current)
            return Decision(want, f"{reason}; guards: settle: replayed, {vector_text(current)} keeps "
                                  f"{now_attainment:.1%} on time < {act:.1%}; {vector_text(want)} "
                                  f"{attainment:.1%}", details=details)
        if vector == current or any(vector[op] > current[op] for op in self.operators):
            self._lower_since = None
            why = ""
            if self._settle_no_raise is not None:  # a raise was due by the budget and a test held it: say which
                details["guard.settle_no_raise"] = self._settle_no_raise
                why = f"; no raise, {self._settle_no_raise}"
            return Decision(current, f"{reason}; guards: settle holds {vector_text(current)} (replayed "
                                     f"{now_attainment:.1%} on time{why})", details=details)
        if self._lower_since is None:
            self._lower_since = t
        waited = t - self._lower_since
        if waited < p["settle_down_s"]:
            details["guard.down_pending_s"] = waited
            return Decision(current, f"{reason}; guards: settle: {vector_text(vector)} would do, pending "
                                     f"({waited:.0f}/{p['settle_down_s']:g} s)", details=details)
        before, after = sum(current.values()), sum(vector.values())
        # in a bounded run, the freed slots count only over what is left of it: in the plant, settle lowered the
        # Alibaba trace's held vector 0.7 s after the run's end, an action that freed nothing
        horizon = p["benefit_horizon_s"] if self.horizon_s <= 0 else min(p["benefit_horizon_s"],
                                                                         max(0.0, self.horizon_s - t))
        benefit, cost = (before - after) * horizon, p["reconfig_cost_s"] * (before + after)
        details.update({"guard.benefit_slot_s": benefit, "guard.cost_slot_s": cost})
        if benefit <= cost:
            return Decision(current, f"{reason}; guards: settle: {vector_text(vector)} would do, not worth a change "
                                     f"({benefit:.0f} <= {cost:.0f} slot-s"
                                     + (f" over the {horizon:.0f} s left of the run)"
                                        if horizon < p["benefit_horizon_s"] else ")"), details=details)
        self._lower_since = None
        self._settle_chose(vector, t)
        return Decision(vector, f"{reason}; guards: settle: replayed, {vector_text(vector)} keeps {attainment:.1%} "
                                f"on time (target {target:.1%})", details=details)

    # ---- the review of a proposal ----

    def _excluded(self, t: float) -> tuple[float, float] | None:
        return next(((a, b) for a, b in self.periods if a <= t < b), None)

    def review(self, snapshot: Snapshot, proposed: Mapping[str, int], reason: str,
               details: Mapping[str, Any] | None = None) -> Decision:
        """The decision the guards let through for `proposed` (see the module's doc for the order and the
        rules); with guards off, the proposal as it is."""
        details = dict(details or {})
        current = snapshot.degrees
        want = {op: int(proposed.get(op, current[op])) for op in self.operators}
        if not self.enabled:
            return Decision(want, reason, details=details)
        self.observe(snapshot)
        p, t, notes = self.params, snapshot.time_s, []
        ratio, utilization = self.utilization(snapshot)
        low, high = p["target_utilization"] - p["utilization_band"], p["target_utilization"] + p["utilization_band"]
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

        def hold(note: str) -> Decision:
            return Decision(dict(current), f"{reason}; guards: {note}", details=details)

        if p["settle"]:
            return self._settle_review(snapshot, reason, details)
        proposal_changes = want != current
        if p["idle_release"] and snapshot.arrivals == 0 and snapshot.backlog == 0 and self._excluded(t) is None:
            # the load stopped: Spark runs no batch until events arrive, and burst sizing sizes that batch as it
            # starts, so what the vector holds until then is paid for nothing (a silence is charged at it)
            idle = {op: p["min_degree"] for op in self.operators}
            if idle != current:
                self._before_burst, self._lower_since = None, None
                details["guard.idle_release"] = 1
                return Decision(idle, f"{reason}; guards: nothing arrived during the batch and nothing waits: down to "
                                      f"{vector_text(idle)} (the next batch runs when events arrive, and burst "
                                      f"sizing sizes it then)", details=details)
        before_burst, self._before_burst = self._before_burst, None
        # a proposal beyond the slot bound asks for no more than the bound: after a burst batch sized to the bound,
        # a controller whose own estimate counts the burst's arrivals (AUTOSCALE's iteration charge) proposes more
        # than the slots allow, and that must not keep the burst's vector (on Spark, Google 10x seed 1: every
        # operator held at 4 for 36 s after a single 2-s burst batch)
        bounded = {op: min(max(want[op], p["min_degree"]), self.cap_of(op)) for op in self.operators}
        if before_burst is not None and any(current[op] > before_burst[op] for op in self.operators) \
                and all(bounded[op] <= current[op] for op in self.operators):
            # the last batch ran with a vector sized at its start for its burst: back to the vector before it at
            # once (or to the proposal, if higher), without stabilisation, band or cost test. A proposal that keeps
            # an operator at its burst degree says nothing about it (threshold's rule keeps the current vector
            # whenever the ratio is within its bounds, which after a burst batch it usually is)
            back = {op: before_burst[op] if bounded[op] == current[op] else
                    min(current[op], max(bounded[op], before_burst[op])) for op in self.operators}
            if self._return_undone(snapshot, back):
                # a burst longer than a batch: what waits already needs the burst's capacity at the next start
                self._before_burst = before_burst
                details["guard.burst_return_skipped"] = snapshot.backlog
                return hold(f"the burst goes on: {snapshot.backlog} events waiting would need more than "
                            f"{vector_text(back)} at the next batch start; the burst's vector stays")
            details[BURST_RETURN] = 1
            return Decision(back, f"{reason}; guards: the burst batch is done, back to {vector_text(back)}",
                            details=details)
        # bounds from slots
        floor = p["min_degree"]
        for op in self.operators:
            bounded = min(max(want[op], floor), self.cap_of(op))
            if bounded != want[op]:
                details[f"guard.bounded.{op}"] = bounded
                notes.append(f"{op} {want[op]} -> {bounded} (bounds [{floor}, {self.cap_of(op)}])")
                want[op] = bounded
        # ineffective scaling
        for op, block in self.blocks.items():
            details[f"guard.blocked.{op}"] = 1
            if want[op] > self.max_useful(op, current[op]):
                notes.append(f"scale-up of {op} {current[op]}->{want[op]} blocked: {block.old}->{block.new} gained "
                             f"{block.gain:+.0%} < {p['min_gain']:.0%} (until the load moves "
                             f"{p['load_change']:.0%} from {block.load:.0f} ev/s)")
                want[op] = self.max_useful(op, current[op])
        # stabilisation of scale-downs: one clock for the vector, running while the proposals lower some operator
        # and raise none (band or not); then the latest of them is applied, in one change
        if any(want[op] > current[op] for op in self.operators) or want == current:
            self._lower_since = None
            for op in self.operators:
                want[op] = max(want[op], current[op])  # scale-ups at once; downs in the same proposal wait
        else:
            if self._lower_since is None:
                self._lower_since = t
            waited = t - self._lower_since
            if waited < p["stabilisation_s"]:
                details["guard.down_pending_s"] = waited
                notes.append(f"scale-down to {vector_text(want)} pending ({waited:.0f}/{p['stabilisation_s']:g} s)")
                want = dict(current)
            # else: the latest proposal, lower than the current vector for stabilisation_s without a break
        # a scale-down releasing what a catch-up added for a since-drained backlog passes the band (not above it)
        releasing = (want != current and all(want[op] <= current[op] for op in self.operators)
                     and utilization <= high and self.lag_drained(snapshot))
        # excluded periods and the band hold everything (the band not the release of capacity added for a backlog)
        window = self._excluded(t)
        if window is not None:
            details["guard.excluded"] = 1
            if proposal_changes:
                return hold(f"excluded period [{window[0]:g}, {window[1]:g}) s: no scaling")
            return Decision(dict(current), reason, details=details)
        if releasing:
            details["guard.lag_drained"] = 1
            notes.append(f"the backlog the last scale-up was sized for is drained: the capacity added for it goes "
                         f"(utilisation {utilization:.2f})")
        elif low <= utilization <= high:
            details["guard.in_band"] = 1
            if proposal_changes:
                return hold(f"utilisation {utilization:.2f} within [{low:.2f}, {high:.2f}]: no action")
            return Decision(dict(current), reason, details=details)
        # outside the band only the direction that brings it back: no scale-up below it, no scale-down above it
        wrong = [] if releasing else [
            op for op in self.operators if (want[op] > current[op] if utilization < low else want[op] < current[op])]
        if wrong:
            side = "below" if utilization < low else "above"
            notes.append(f"utilisation {utilization:.2f} {side} [{low:.2f}, {high:.2f}]: "
                         + ", ".join(f"{op} stays {current[op]}" for op in wrong))
            for op in wrong:
                want[op] = current[op]
        # reconfiguration cost: a change that only lowers degrees must pay for itself
        if want != current and all(want[op] <= current[op] for op in self.operators):
            before, after = sum(current.values()), sum(want.values())
            benefit = (before - after) * p["benefit_horizon_s"]
            cost = p["reconfig_cost_s"] * (before + after)
            details.update({"guard.benefit_slot_s": benefit, "guard.cost_slot_s": cost})
            if benefit <= cost:
                notes.append(f"scale-down to {vector_text(want)} not worth it: frees {benefit:.0f} slot-s over "
                             f"{p['benefit_horizon_s']:g} s <= {cost:.0f} slot-s for the change and back")
                want = dict(current)
        if want != current:
            self._lower_since = None
            lag = details.get("guard.lag", details.get("lag", 0.0))
            raised = any(want[op] > current[op] for op in self.operators)
            self._sized_for_lag = dict(want) if raised and lag and lag > 0 else None
            for op in self.operators:
                if want[op] > current[op]:
                    sums = self._sums(op, current[op])
                    if sums:
                        batches = len(self._curve[(op, current[op])])
                        self._pending[op] = _Pending(current[op], want[op], sums[0] / sums[2],
                                                     0.5 * sums[0] / batches)
        text = reason if not notes else f"{reason}; guards: " + "; ".join(notes)
        return Decision(want, text, details=details)
