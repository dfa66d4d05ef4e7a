"""The two baselines Souravlas et al. (Appl. Sci. 2021) compare against, in the project's reading: the paper gives
neither's configuration, so each is built from its own paper's idea as the digest summarises it, and every choice
here is the project's. Study code for the task-migration model (simulator/task_migration.py), not placement
controllers a Spark run offers (they are not registered).

- Shukla and Simmhan (ICDCS 2018), DCR and CCR: migration mechanisms, not a placement policy. Read here as the same
  trigger and the same tasks as the paper's scheme (an overloaded node's tasks above the mean), split evenly over
  its sub-cluster (the paper's section 6 split), moved in one go rather than in one-to-one steps, under a pause of
  the sub-clusters involved: `pause="capture"` (CCR: a checkpoint while the sources hold) or `pause="drain"` (DCR:
  the sources hold until what is in flight is processed, then the checkpoint). The model applies the pause.
- Al-Sinayyid and Zhu's MT-Scheduler (J. Supercomputing 2020): a dynamic-programming mapping of a linear pipeline
  onto nodes that minimises the bottleneck node's time, with no balancing regulation, re-run at each migration. Read
  here as: when the same trigger fires, every sub-cluster holding an overloaded node is mapped afresh, its tasks in
  pipeline order cut into contiguous blocks, one per node, minimising the largest block's observed load (the chain
  partitioning dynamic programme); every task whose node changes moves at once. Transfer time is equal for every
  block boundary in the model (all-to-all links of one speed), so it does not change the optimum and is left out.
"""
from __future__ import annotations

from controllers.placement import Move, PlacementDecision, PlacementSnapshot
from controllers.placement.souravlas import BUSY, Souravlas


class ShuklaSimmhan(Souravlas):
    """The paper's trigger and task choice with the section 6 even split, every move at once (the model pauses the
    sub-clusters involved, `pause` of simulate_tasks)."""

    name = "shukla-simmhan"

    def __init__(self, params=None):
        super().__init__({"share": "even", **(params or {})})

    def decide(self, snapshot: PlacementSnapshot) -> PlacementDecision:
        decision = super().decide(snapshot)
        if not decision.moves or not self._pending:
            return decision
        moves = tuple(decision.moves) + tuple(m for step in self._pending for m in step)
        self._pending = []
        return PlacementDecision(moves, decision.reason.split("; first of")[0] + f"; {len(moves)} move(s) at once",
                                 decision.details)


def chain_partition(loads: list[float], parts: int) -> list[int]:
    """Cut `loads` (in pipeline order) into `parts` contiguous blocks minimising the largest block's sum; each
    item's block index. Dynamic programme over prefix sums, O(parts x n^2); ties to the earliest cut."""
    n = len(loads)
    prefix = [0.0]
    for x in loads:
        prefix.append(prefix[-1] + x)
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(parts + 1)]  # best[k][i]: first i items in k blocks
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for k in range(1, parts + 1):
        for i in range(n + 1):
            for j in range(i + 1):
                value = max(best[k - 1][j], prefix[i] - prefix[j])
                if value < best[k][i] - 1e-12:
                    best[k][i], cut[k][i] = value, j
    blocks, i = [0] * n, n
    for k in range(parts, 0, -1):
        j = cut[k][i]
        for item in range(j, i):
            blocks[item] = k - 1
        i = j
    return blocks


class MTScheduler(Souravlas):
    """The paper's trigger (to know when a migration happens); the mapping from the chain partition of each
    sub-cluster holding an overloaded node, all moves at once."""

    name = "mt-scheduler"

    def _plan(self, snap: PlacementSnapshot) -> tuple[list[list[Move]], str]:
        p = self.utilisation(snap)
        mean = sum(p) / len(p)
        size = self.params["sub_cluster_size"]
        hot = self.overloaded(p)
        if not hot:
            return [], f"no node overloaded (largest utilisation {max(p):.2f}, mean {mean:.2f})"
        moves = []
        for sub in sorted({m // size for m in hot}):
            nodes = list(range(sub * size, min((sub + 1) * size, snap.partitions)))
            tasks = [g for g in range(snap.key_groups) if snap.assignment[g] in nodes]  # pipeline (index) order
            blocks = chain_partition([snap.key_group_usage(g)[BUSY] for g in tasks], len(nodes))
            moves += [Move(g, snap.assignment[g], nodes[b]) for g, b in zip(tasks, blocks)
                      if nodes[b] != snap.assignment[g]]
        return ([moves] if moves else []), f"sub-cluster(s) of node(s) {hot} mapped afresh: {len(moves)} move(s)"
