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

Where each part lives:

- sizing the controller asks for: the sustained rate plus the lag to drain (`catch_up_s`) and each operator's
  observed capacity (controllers/capacity.py); the ineffective-scaling blocks and the bounds (here);
- burst sizing at each batch start (`burst_sizing`, controllers/burst_sizing.py);
- the review of a proposal (`Guards.review`): the stages of controllers/guard_stages/ in the order `REVIEW_STAGES`
  declares — idle release, the burst's return, step factors, bounds from slots, the ineffective-scaling block,
  scale-down stabilisation, excluded periods, the utilisation band, the reconfiguration-cost test — each a small
  class with its own options;
- the options (controllers/guard_params.py).

Everything a guard saw or did is in the Decision's `details` under ``guard.*`` keys (the loop writes them to
decisions.jsonl), and a guard that blocks or changes an action says so in the reason, after "guards:". Pure: no
I/O, no clock but the snapshots' times.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from controllers.burst_sizing import BurstSizing, prior_batch
from controllers.capacity import ObservedCapacity, catch_up_rate
from controllers.cost_model import CostPrior, within_budget
from controllers.guard_params import GUARD_PARAMS, GUARD_RULES
from controllers.guard_stages import REVIEW_STAGES, Review, Stage, excluded_window, parse_periods, run_review
from controllers.types import Decision, Snapshot, vector_text

# what importers of the guard layer take from here
__all__ = ["GUARD_PARAMS", "GUARD_RULES", "Block", "Guards", "catch_up_rate", "vector_text"]

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


class Guards(BurstSizing, ObservedCapacity):
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
        self._init_capacity()
        self._init_bursts()
        self._last_batch: int | None = None
        self._pending: dict[str, _Pending] = {}
        self.blocks: dict[str, Block] = {}
        self.gains: dict[str, float] = {}
        self.lower_since: float | None = None  # since when lower vectors have been proposed without a break
        self._sized_for_lag: dict[str, int] | None = None  # the vector a scale-up sized for a backlog set
        self._follow_live = False  # bind: slots unknown before the run, so the live count bounds the degrees

    # ---- observation: the capacity curve, the offered load, pending effectiveness checks ----

    def observe(self, snapshot: Snapshot) -> None:
        if self._last_batch is not None and snapshot.batch_id <= self._last_batch:
            return
        self._last_batch = snapshot.batch_id
        self.record(snapshot)
        if self._follow_live and snapshot.slots:
            self.cap = max(self.params["min_degree"], min(self.max_degree, snapshot.slots))
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
        `follow_live` is off. `horizon_s`: the run's length when it is bounded (0: unbounded; the settle controller
        spends its error budget over it). `cost_prior`: the run's calibrated costs, which burst sizing uses before it
        has measured a batch; ignored where they do not cover every operator."""
        self.slo_latency_s = slo_latency_s
        self._prior = (prior_batch(cost_prior, self.operators, self.max_degree)
                       if cost_prior is not None and cost_prior.covers(self.operators) else None)
        self.horizon_s = horizon_s
        if not self.params["parallel_slots"] and slots > 0:
            self.cap = max(self.params["min_degree"], min(self.max_degree, slots))
        # a cluster master's slots are known only once executors register: then each batch's count bounds them
        self._follow_live = follow_live and not self.params["parallel_slots"] and slots <= 0

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


    # ---- the review of a proposal (controllers/guard_stages/) ----

    def excluded(self, t: float) -> tuple[float, float] | None:
        return excluded_window(self.periods, t)

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
        utilization = self.observed_details(snapshot, details)
        if want != current:
            details["guard.proposed"] = vector_text(want)
        low, high = p["target_utilization"] - p["utilization_band"], p["target_utilization"] + p["utilization_band"]
        review = Review(snapshot, current, want, reason, details, utilization, low, high,
                        proposal_changes=want != current)
        decision = run_review(self.stages, review, self)
        if review.decided is None:
            self._applied(current, decision.degrees, details)
        return decision

    def observed_details(self, snapshot: Snapshot, details: dict[str, Any]) -> float:
        """What the guards observed at `snapshot`, into a decision's `details` (the batch's utilisation and batch
        ratio, the offered rate, each operator's observed rate at its degree and the last scale-up's gain); returns
        the utilisation."""
        ratio, utilization = self.utilization(snapshot)
        details.update({"guard.utilization": utilization, "guard.batch_ratio": ratio,
                        "guard.offered_rate": self.offered_load()})
        for op in self.operators:
            rate = self.observed_rate(op, snapshot.degrees[op])
            if rate is not None:
                details[f"guard.rate.{op}"] = rate
            if op in self.gains:
                details[f"guard.gain.{op}"] = self.gains[op]
        return utilization

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
