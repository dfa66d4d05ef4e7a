"""The guard layer's options, declared once: a controller merges `GUARD_PARAMS` into its PARAMS (so `--describe`
lists them, a configuration is checked against them and a tuning study searches them), with the cross-field
`GUARD_RULES`. The review stages declare their own options (controllers/guard_stages/); the sizing options, the
few-actions mode's and the slots are declared here."""
from __future__ import annotations

from controllers.common_params import MIN_DEGREE, PARALLEL_SLOTS
from controllers.guard_stages import (ExcludedPeriods, IdleRelease, IneffectiveScaling, ReconfigurationCost,
                                      Stabilisation, StepFactors)
from params.declare import Choices, Param, Rule, SearchRange

# burst sizing's margin for a batch run at changed degrees (the project's choice, between the two readings of Spark's
# slower batch after a change, 8.5 % and 13 %): in the noisy plant with that slowdown, +0.15 SLO points for DS2 at
# 1.004x the cost and +0.6 for threshold, over 16 bursty and nightly cases, none worse (docs/bursty.md; 0: as before)
BURST_HEADROOM = 0.10


def _band_holds(values, context):
    return values["utilization_band"] < values["target_utilization"]


def _slots_hold(values, context):
    slots = values["parallel_slots"]
    return not slots or values["min_degree"] <= slots


GUARD_PARAMS: dict[str, Param] = {
    "guards": Param(bool, True, "the guard layer (controllers/guards.py: catch-up and burst sizing, observed "
                                "scalability, and the review's stages in controllers/guard_stages/); false: the "
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
