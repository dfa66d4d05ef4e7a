"""Sousa's latency-variation migration scheduler (MSc thesis, UFCG 2014, §3.2.3) and its random baseline (§4.2),
applied to key groups and partitions: an adaptation, not the thesis's system (there, operator replicas on VMs).

Why this controller: it never decides which resource is the bottleneck. It reacts to a rise of latency relative to
the work's own recent history (scale-free), and it moves work only where no resource would end up more used than
where the work is now (the all-resources dominance test), so it needs no threshold per resource or per application.

Per round (every `round_s`, the thesis's 10 s, on the reports of the window since the last round):
  1. per key group, s = sum of g_i / l_1 over its latency reports l_1..l_n, g_i = l_i - l_{i-1} where
     l_i > (1 + d) l_{i-1}, else 0 (Eq. 3.2; the thesis's worked example prints 0.8 and 0.66 where the formula gives
     0.833 and 0.5: the formula is implemented);
  2. candidates s > 0, by s descending, ties to the one moved longest ago (never moved: first);
  3. each candidate x on partition a moves to a partition b with u_b + u_x <= u_a on every resource and < on at
     least one (Eq. 3.5-3.6), partitions' figures updated after each move; at most `max_moves` (l_mig) per round;
  4. no round while moves are in flight; the window restarts once they are in force.
A key group's latency in a period is its partition's (on Spark: the partition's task time, which its records
wait through). The project's choices where the thesis is silent, each named in PARAMS or below: d = 0.5 (the thesis
evaluates 0.25, 0.5, 0.75 with no latency difference and more events processed at higher d), among key groups with
the same score and the same last move the one using the largest share of its partition goes first (a key group is
smaller than a replica; moving the largest one that passes the test relieves most), and among the partitions that
pass the test the one left with the most headroom (smallest largest ratio u_b + u_x over u_a) is chosen, then the
lowest index. Replicas, their anti-affinity and the connected-operator network term have no counterpart here (key
groups have no replicas; the partitions of one operator do not send to each other); in the placement simulator,
where the groups are the thesis's replicas, the snapshot's `apart` keeps two replicas of one operator apart.
"""
from __future__ import annotations

import random
from typing import Sequence

from controllers.placement.base import PlacementController, register
from controllers.placement.types import RESOURCES, Move, PlacementDecision, PlacementSnapshot
from params.declare import Param, SearchRange

Vector = tuple[float, ...]


def degradation_score(latencies: Sequence[float], sensitivity: float) -> float:
    """Eq. 3.2: s = (sum of the rises l_i - l_{i-1} larger than `sensitivity` x l_{i-1}) / l_1; 0 with fewer than two
    reports or a first report of 0 (no latency to be relative to)."""
    if len(latencies) < 2 or latencies[0] <= 0:
        return 0.0
    rises = sum(cur - prev for prev, cur in zip(latencies, latencies[1:]) if cur > prev + sensitivity * prev)
    return rises / latencies[0]


def dominates(source: Vector, destination: Vector, moving: Vector) -> bool:
    """Eq. 3.5-3.6: after the move no resource on the destination would be above the source's level now, and one
    would be below it."""
    after = [d + m for d, m in zip(destination, moving)]
    return all(a <= s for a, s in zip(after, source)) and any(a < s for a, s in zip(after, source))


def headroom_ratio(source: Vector, destination: Vector, moving: Vector) -> float:
    """The destination's largest resource after the move as a share of the source's now (lower: more room left)."""
    return max(((d + m) / s if s > 0 else 0.0) for d, m, s in zip(destination, moving, source))


class _MigrationRounds(PlacementController):
    """What the thesis's scheduler and its random baseline share: the rounds, the window, the destination test."""

    def __init__(self, params=None):
        super().__init__(params)
        self._latencies: dict[int, list[float]] = {}
        self._usage: dict[int, list[float]] = {}
        self._reports = 0
        self._window_start: float | None = None
        self._last_move: dict[int, float] = {}
        self.rounds = 0

    def _observe(self, snap: PlacementSnapshot) -> None:
        for group in range(snap.key_groups):
            self._latencies.setdefault(group, []).append(snap.latency_of(group))
            total = self._usage.setdefault(group, [0.0] * len(RESOURCES))
            for k, value in enumerate(snap.key_group_usage(group)):
                total[k] += value
        self._reports += 1

    def _restart_window(self, time_s: float) -> None:
        self._latencies.clear()
        self._usage.clear()
        self._reports = 0
        self._window_start = time_s

    def decide(self, snapshot: PlacementSnapshot) -> PlacementDecision:
        if self._window_start is None:
            self._window_start = snapshot.time_s - snapshot.interval_s
        if snapshot.moves_in_flight:
            self._restart_window(snapshot.time_s)
            return PlacementDecision((), f"round suspended: {snapshot.moves_in_flight} move(s) in flight")
        self._observe(snapshot)
        if snapshot.time_s - self._window_start < self.params["round_s"] - 1e-9:
            return PlacementDecision((), "between rounds")
        self.rounds += 1
        mean_usage = {g: tuple(v / self._reports for v in u) for g, u in self._usage.items()}
        candidates, why = self._candidates(snapshot, mean_usage)
        moves = self._place(snapshot, candidates, mean_usage)
        for move in moves:
            self._last_move[move.key_group] = snapshot.time_s
        self._restart_window(snapshot.time_s)
        if not moves:
            return PlacementDecision((), f"round {self.rounds}: {why}; no move"
                                     + ("" if not candidates else " (no partition passes the dominance test)"),
                                     {"candidates": float(len(candidates))})
        listed = ", ".join(f"key group {m.key_group} {m.source}->{m.target}" for m in moves)
        return PlacementDecision(tuple(moves), f"round {self.rounds}: {why}; {listed}",
                                 {"candidates": float(len(candidates)), "moves": float(len(moves))})

    def _candidates(self, snap: PlacementSnapshot, usage: dict[int, Vector]) -> tuple[list[int], str]:
        raise NotImplementedError

    def _place(self, snap: PlacementSnapshot, candidates: list[int], usage: dict[int, Vector]) -> list[Move]:
        partitions = [[0.0] * len(RESOURCES) for _ in range(snap.partitions)]
        for group, partition in enumerate(snap.assignment):
            for k, value in enumerate(usage.get(group, (0.0,) * len(RESOURCES))):
                partitions[partition][k] += value
        moves: list[Move] = []
        where = list(snap.assignment)
        for group in candidates:
            if len(moves) >= self.params["max_moves"]:
                break
            source = snap.assignment[group]
            u_x = usage.get(group, (0.0,) * len(RESOURCES))
            feasible = [b for b in range(snap.partitions)
                        if b != source and snap.may_join(group, b, where)
                        and dominates(tuple(partitions[source]), tuple(partitions[b]), u_x)]
            if not feasible:
                continue
            target = min(feasible, key=lambda b: (headroom_ratio(tuple(partitions[source]), tuple(partitions[b]),
                                                                 u_x), b))
            for k, value in enumerate(u_x):  # the partitions as they will be, for the next candidate's test
                partitions[source][k] -= value
                partitions[target][k] += value
            where[group] = target
            moves.append(Move(group, source, target))
        return moves


COMMON = {
    "max_moves": Param(int, 1, "l_mig: moves started per round at most (the thesis: 1 kept latency equal and "
                               "processed more events than no limit)", 1, search=SearchRange(1, 8)),
    "round_s": Param(float, 10.0, "seconds between evaluation rounds (the thesis: 10 s, reports every 1 s; on Spark "
                                  "a report is a micro-batch)", 0.0, open_minimum=True, search=SearchRange(4.0, 30.0)),
}


@register
class Sousa(_MigrationRounds):
    name = "sousa"
    summary = ("Sousa 2014: move the key groups whose latency rose (relative to their own history) to a partition "
               "no more used on any resource; an adaptation to key groups")
    PARAMS = {
        "sensitivity": Param(float, 0.5, "d: the relative rise between consecutive latency reports that counts as "
                                         "degradation (the thesis evaluates 0.25, 0.5, 0.75; 0.5 is the project's "
                                         "choice)", 0.0, open_minimum=True, search=SearchRange(0.1, 1.0)),
        **COMMON,
    }

    def scores(self) -> dict[int, float]:
        """Each key group's degradation score over the current window."""
        return {g: degradation_score(ls, self.params["sensitivity"]) for g, ls in self._latencies.items()}

    def _candidates(self, snap, usage):
        scores = self.scores()
        totals: dict[int, Vector] = {}
        for group, partition in enumerate(snap.assignment):
            totals[partition] = tuple(a + b for a, b in zip(totals.get(partition, (0.0,) * len(RESOURCES)),
                                                              usage.get(group, (0.0,) * len(RESOURCES))))

        def share(group: int) -> float:
            whole = totals[snap.assignment[group]]
            return sum(u / w for u, w in zip(usage.get(group, ()), whole) if w > 0)

        chosen = [g for g, s in scores.items() if s > 0]
        chosen.sort(key=lambda g: (-scores[g], self._last_move.get(g, float("-inf")), -share(g), g))
        top = max(scores.values(), default=0.0)
        return chosen, f"{len(chosen)} key group(s) degraded (largest score {top:.2f})"


@register
class SousaRandom(_MigrationRounds):
    name = "sousa-random"
    summary = ("the thesis's random baseline: each key group a candidate with some probability, the same "
               "destination test")
    PARAMS = {
        "candidate_probability": Param(float, 0.5, "chance that a key group is a candidate in a round (the thesis "
                                                   "does not say; 0.5, a coin flip, is the project's choice)",
                                       0.0, 1.0, open_minimum=True),
        "seed": Param(int, 1, "the random generator's seed (same seed, same candidates)", 0),
        **COMMON,
    }

    def __init__(self, params=None):
        super().__init__(params)
        self._random = random.Random(self.params["seed"])

    def _candidates(self, snap, usage):
        chosen = [g for g in range(snap.key_groups) if self._random.random() < self.params["candidate_probability"]]
        self._random.shuffle(chosen)
        return chosen, f"{len(chosen)} key group(s) drawn at random"
