"""The guards' review of a proposal as a pipeline of small stages, each with its own options and one method.

A controller proposes a degree vector after each batch; the review decides what of it is applied. Each stage reads
the proposal as the stages before it left it (`Review.want`), the run's observations (`Guards`: the capacity curve,
the offered load, the ineffective-scaling blocks) and its own options, and either changes the proposal (with a note
in the reason and its facts in the decision's ``guard.*`` details) or decides (`Review.decide`): then only the
stages that are limits (`Stage.LIMIT`: the step factors) still apply. The order is written once, in
`REVIEW_STAGES`, and follows the Flink Kubernetes operator's autoscaler where the two have the same stage (step
factors before the parallelism bounds, the ineffective-scaling block on scale-ups, the scale-down interval, the
utilisation band).

Pure: no Spark, MLflow or I/O; each stage runs in a unit test in microseconds.
"""
from controllers.guard_stages.bursts import BURST_RETURN, BurstReturn, IdleRelease
from controllers.guard_stages.holds import (ExcludedPeriods, IneffectiveScaling, ReconfigurationCost, Stabilisation,
                                            UtilisationBand, excluded_window, parse_periods)
from controllers.guard_stages.limits import Bounds, StepFactors
from controllers.guard_stages.review import Review, Stage, run_review

# The review's order, written once. A controller runs all of them unless it declares fewer (`GUARD_STAGES`,
# controllers/guard_layer.py); the order stays this one.
REVIEW_STAGES: tuple[type[Stage], ...] = (IdleRelease, BurstReturn, StepFactors, Bounds, IneffectiveScaling,
                                          Stabilisation, ExcludedPeriods, UtilisationBand, ReconfigurationCost)

__all__ = ["BURST_RETURN", "REVIEW_STAGES", "Bounds", "BurstReturn", "ExcludedPeriods", "IdleRelease",
           "IneffectiveScaling", "ReconfigurationCost", "Review", "Stabilisation", "Stage", "StepFactors",
           "UtilisationBand", "excluded_window", "parse_periods", "run_review"]
