"""The few-actions controller `settle`: for an engine where each change restarts the job, hold one degree vector and
change it rarely, instead of meeting each burst with a raise and a return.

The vector held is the least one (found greedily) that, replayed over the arrivals of the last `settle_memory_s` on
the operators' observed costs (controllers/settle.py), keeps `settle_target` of them within the SLO. The rules
(controllers/settle_mode.py, each with its reason in its method's docstring): raise at a batch start when the held
vector, replayed, lets the error budget burn at twice its rate; trim once after a raise where a vector held through
the same arrivals needs less; lower once a lower vector has sufficed for `settle_down_s` and the change pays for
itself (the reconfiguration-cost test); in a bounded run, spend the error budget over the run.

It observes the run through the guard layer (controllers/guards.py: the capacity curve, the per-task cost fit, the
slot bound, excluded periods) and runs none of its review stages: it proposes the vector it holds, and nothing
between it and the loop changes it except the slots (controllers/slots.py). Why a controller of its own and not an
option of DS2 or threshold: it replaces their proposal instead of reviewing it, so it is the same controller under
either name. docs/bursty.md has its results on the bursty suite.

Pure like the controllers: no Spark, MLflow or I/O.
"""
from __future__ import annotations

from typing import Mapping

from controllers.base import Controller, register
from controllers.common_params import SEARCHED_INITIAL_DEGREE, at_most_max_degree, uniform_initial_degrees
from controllers.guard_layer import GuardLayer
from controllers.guard_params import GUARD_PARAMS, SLOTS_RULE
from controllers.guard_stages import ExcludedPeriods, ReconfigurationCost
from controllers.settle_mode import SettleMode
from controllers.slots import EXECUTOR_PARAMS, EXECUTOR_RULES
from controllers.types import Decision, Snapshot
from params.declare import Choices, Param, SearchRange

SETTLE_PARAMS: dict[str, Param] = {
    "settle_target": Param(float, 0.995, "share of the replayed events the held vector must keep within the SLO (an "
                                         "error budget over settle_memory_s, or over a bounded run shorter than "
                                         "that)", 0.5, 1.0, open_maximum=True, search=SearchRange(0.95, 0.999)),
    "settle_down_s": Param(float, 60.0, "seconds a lower covering vector must have sufficed before the vector is "
                                        "lowered (after a burst, hindsight says less than the burst needed live)",
                           0.0, search=SearchRange(0.0, 180.0)),
    "settle_memory_s": Param(float, 300.0, "seconds of arrivals the replay looks back over (a burst older than this "
                                           "no longer holds capacity)", 0.0, open_minimum=True,
                             search=SearchRange(60.0, 900.0, log=True)),
    "settle_late_ratio": Param(float, 2.0, "where no vector the slots allow keeps settle_target (peaks beyond "
                                           "capacity), hold the least one that lets at most this many times as many "
                                           "events be late as the best, and at most settle_late_points more (or one "
                                           "error budget more)", 1.0, search=SearchRange(1.0, 4.0)),
    "settle_late_points": Param(float, 0.05, "... and at most this share of the events more (the project's choice: 5 "
                                             "SLO points)", 0.0, 1.0, search=SearchRange(0.0, 0.2)),
    "settle_min_gain": Param(bool, True, "on a load no vector the slots allow carries, no raise where the held vector "
                                         "already keeps the covering goal (the best vector's share less the late "
                                         "ratio's or points' slack)", search=Choices((True, False))),
    "settle_stage_share": Param(float, 0.0, "a raise takes degrees only for operators whose stage, on the largest "
                                            "batch the replay ran, takes at least this share of the operators' stage "
                                            "time, and for the longest stage (0: any operator; 1: the longest alone). "
                                            "A held degree costs a slot for as long as the vector is held; one of a "
                                            "short stage buys a few tenths of a second of a burst's batch with it",
                                0.0, 1.0, search=SearchRange(0.0, 0.5)),
    "settle_trim_share": Param(float, 0.25, "after a raise, once its batch has run, lower at once to the least vector "
                                            "that, replayed on the trigger grid over the arrivals in memory, keeps "
                                            "what the raised one keeps (less one error budget), where that frees at "
                                            "least this share of the held slots (one trim per raise, and no raise at "
                                            "a batch start it would take straight back while that batch is on time "
                                            "at the held vector; 1: never)", 0.0, 1.0,
                               search=SearchRange(0.1, 1.0)),
    "settle_rate_sizing": Param(bool, False, "a raise at a batch start is sized for the batch after it as well, on "
                                             "what arrives meanwhile at the rate of the last trigger interval (a "
                                             "burst still arriving is more than the events waiting: sized on those "
                                             "alone, the next batch is late and takes a second raise)",
                                search=Choices((True, False))),
}

# the guard layer's options settle reads: the degree floor and the slots, the records a rate needs, the excluded
# periods and the reconfiguration-cost test of a lowering
_GUARD_OPTIONS = ("min_degree", "parallel_slots", "min_records", *ExcludedPeriods.PARAMS, *ReconfigurationCost.PARAMS)


@register
class SettleController(GuardLayer, Controller):
    name = "settle"
    SLOT_AWARE = True
    summary = ("holds the least vector that would have kept the SLO over the recent arrivals and changes it rarely "
               "(few actions, for engines where a change restarts the job)")
    PARAMS = {
        "initial_degree": SEARCHED_INITIAL_DEGREE,
        **SETTLE_PARAMS,
        **{name: GUARD_PARAMS[name] for name in _GUARD_OPTIONS},
        **EXECUTOR_PARAMS,
    }
    RULES = (at_most_max_degree("initial_degree", "min_degree"), SLOTS_RULE, *ExcludedPeriods.RULES, *EXECUTOR_RULES)
    GUARD_STAGES = ()  # it proposes what it holds; no review stage changes that

    def __init__(self, params, operators, max_degree):
        super().__init__(params, operators, max_degree)
        # the guards observe the run for settle; their options it does not declare keep their defaults
        self._make_guards(own={name: param.default for name, param in GUARD_PARAMS.items()
                               if name not in self.params})
        self.settle = SettleMode(self.guards, self.params)

    def initial_degrees(self) -> dict[str, int]:
        return uniform_initial_degrees(self.params, self.operators, self.max_degree)

    def at_batch_start(self, pending: int, time_s: float, degrees: Mapping[str, int],
                       oldest_wait_s: float | None = None,
                       recent_arrivals: tuple[int, ...] | None = None) -> Decision | None:
        """A raise for the events the batch about to start will read, where the held vector, replayed with them,
        keeps too few on time (`SettleMode.at_batch_start`)."""
        if pending <= 0:
            return None
        trigger_s = self.context.trigger_s if self.context else 1.0
        return self.settle.at_batch_start(pending, degrees, trigger_s, time_s, recent_arrivals)

    def decide(self, snapshot: Snapshot) -> Decision:
        self.guards.observe(snapshot)
        self.settle.observe(snapshot)
        details: dict = {}
        self.guards.observed_details(snapshot, details)
        return self.settle.review(snapshot, details)
