"""Placement controllers: which partition of a keyed operator runs which key group, at a fixed degree.

Pure decision logic like the parallelism controllers (no Spark, MLflow or I/O imports), from two seed papers,
each an adaptation of a system that placed other things (operator replicas on VMs; Storm tasks on nodes):
  sousa, sousa-random  Sousa 2014, latency-variation migration and its random baseline (sousa.py)
  souravlas            Souravlas et al. 2021, fair shares in one-to-one steps (souravlas.py, stepwise.py)
  hash                 no scheduling, the thesis's baseline, with the same key-group table and records (hash.py)
Without any, a keyed operator keeps Spark's hash placement and no key-group figures are collected.
"""
from controllers.placement import hash, souravlas, sousa  # noqa: F401  (registration)
from controllers.placement.base import (PlacementController, build_placement, describe_placement, placement_label,
                                        registered)
from controllers.placement.types import RESOURCES, Move, PlacementDecision, PlacementSnapshot

__all__ = ["Move", "PlacementController", "PlacementDecision", "PlacementSnapshot", "RESOURCES", "build_placement",
           "describe_placement", "placement_label", "registered"]
