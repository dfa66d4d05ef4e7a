"""Souravlas, Anastasiadou and Katsavounis's fair redistribution of migrated tasks (Appl. Sci. 2021, 11(1), 61,
§4-§5) with its stepwise one-to-one transfers (§3, controllers/placement/stepwise.py), applied to key groups and
partitions: an adaptation, not the paper's Storm scheduler.

Why this controller: when a node is overloaded, its work should go to nearby nodes in shares that respect what each
can still take, and in steps in which no node receives from two senders at once (nothing to buffer). What the paper
gives and what is implemented as given:
  - utilisation p_m = lambda_m x (1 / mu_m) (Eq. 10): on a partition, the records it processed per second times its
    task time per record, i.e. its task time over the period;
  - admission: a partition at saturation (p >= 1) takes no migrated work (§4.1);
  - shares (Eq. 12-14): U_j = T p_j, f = T / sum U_j, F_j = U_j f, rounded by largest remainder so that they sum to
    T (the paper's 17.4 / 8.7 / 23.2 -> 18 / 9 / 23). The formula gives more to the *more* used targets; the paper
    calls p_m the utilisation, so `share=paper` keeps it, `share=headroom` (proportional to 1 - p_j) is offered
    as the reading a user who wants balance would expect, and `share=even` is the split of the paper's own section 6
    example (s = t + T / targets);
  - targets in the source's sub-cluster of `sub_cluster_size` nodes (the paper: 5), the rest (nearest first) only if
    none there can take work; distance = index difference (§2);
  - the moves in one-to-one steps (every partition sends to one and receives from one per step), cheapest first,
    one step put in force per period; no new round until the last step is in force.
The paper names no trigger and no choice of tasks ("heavily overloaded"; T tasks). The project's choices: a round
looks at the partitions whose utilisation is at least `trigger_utilisation` and at least `imbalance` times the
mean (a uniformly loaded operator needs more partitions, not other ones), most used first; from each it moves
key groups, largest first, skipping any larger than what the source has above the mean (it would only move the
overload), until the source is at the mean.
"""
from __future__ import annotations

from typing import Sequence

from controllers.placement.base import PlacementController, register
from controllers.placement.types import RESOURCES, Move, PlacementDecision, PlacementSnapshot
from params.declare import Choices, Param, Rule, SearchRange

BUSY = RESOURCES.index("busy_s")


def fair_split(total: int, utilisation: Sequence[float], share: str = "paper") -> list[int]:
    """Eq. 12-14: F_j = T p_j / sum p (share=paper), T (1 - p_j) / sum (1 - p) (share=headroom) or T / targets
    (share=even, the paper's own section 6 example), in whole tasks by largest remainder (ties to the lower
    index), summing to T. Equal shares where every weight is 0."""
    if total < 0:
        raise ValueError(f"cannot split {total} tasks")
    if share == "even":  # the paper's section 6 example: s = t + T / targets, the same number to each
        utilisation = [0.0] * len(utilisation)
    weights = [max(0.0, p) if share == "paper" else max(0.0, 1.0 - p) if share == "headroom" else 0.0
               for p in utilisation]
    if not weights:
        return []
    if sum(weights) <= 0:
        weights = [1.0] * len(weights)
    exact = [total * w / sum(weights) for w in weights]
    whole = [int(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda j: (-(exact[j] - whole[j]), j))
    for j in order[: total - sum(whole)]:
        whole[j] += 1
    return whole


def one_to_one_steps(pairs: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Distinct (sender, receiver) transfers coloured into steps in which every partition sends at most once and
    receives at most once (bipartite edge colouring by alternating paths: as many steps as the busiest partition
    has transfers, König), the steps ordered by their cost (largest index distance), cheapest first."""
    send: dict[int, dict[int, int]] = {}  # sender -> colour -> receiver
    recv: dict[int, dict[int, int]] = {}  # receiver -> colour -> sender
    for u, v in dict.fromkeys(pairs):
        send.setdefault(u, {})
        recv.setdefault(v, {})
        a = next(c for c in range(len(send[u]) + 1) if c not in send[u])
        b = next(c for c in range(len(recv[v]) + 1) if c not in recv[v])
        if a not in recv[v]:
            colour = a
        elif b not in send[u]:
            colour = b
        else:  # swap colours a and b along the path from v that alternates a, b, a, ...: a becomes free at v
            path, node, side, c = [], v, "recv", a
            while True:
                table = recv if side == "recv" else send
                nxt = table.get(node, {}).get(c)
                if nxt is None:
                    break
                path.append((node, nxt, c) if side == "send" else (nxt, node, c))
                node, side, c = nxt, ("send" if side == "recv" else "recv"), (b if c == a else a)
            for s_, r_, c_ in path:
                del send[s_][c_]
                del recv[r_][c_]
            for s_, r_, c_ in path:
                other = b if c_ == a else a
                send[s_][other] = r_
                recv[r_][other] = s_
            colour = a
        send[u][colour] = v
        recv[v][colour] = u
    steps: dict[int, list[tuple[int, int]]] = {}
    for u, colours in send.items():
        for c, v in colours.items():
            steps.setdefault(c, []).append((u, v))
    ordered = sorted(steps.values(), key=lambda s: (max(abs(u - v) for u, v in s), sorted(s)))
    return [sorted(s) for s in ordered]


@register
class Souravlas(PlacementController):
    name = "souravlas"
    summary = ("Souravlas et al. 2021: an overloaded partition's key groups go to its sub-cluster in fair shares, "
               "in one-to-one steps; an adaptation to key groups")
    PARAMS = {
        "trigger_utilisation": Param(float, 0.2, "a partition whose task time is at least this share of the period is "
                                                 "a candidate source (the paper says only 'heavily overloaded'; 0.2 "
                                                 "is the project's choice: on a micro-batch engine the keyed stage "
                                                 "shares each period with the other stages and the batch overhead, "
                                                 "so its partitions rarely show half of it busy; the imbalance rule "
                                                 "decides, this one only keeps an idle operator still)",
                                     0.0, open_minimum=True,
                                     search=SearchRange(0.2, 1.0)),
        "imbalance": Param(float, 1.5, "... and at least this multiple of the mean partition's (the project's "
                                       "choice: below it the load is even and placement cannot help)", 1.0,
                           search=SearchRange(1.1, 3.0)),
        "sub_cluster_size": Param(int, 5, "partitions per sub-cluster, the first place targets are looked for (the "
                                          "paper: 5 nodes)", 1),
        "share": Param(str, "paper", "how migrated key groups are shared among targets: 'paper' in proportion to "
                                     "their utilisation (Eq. 12-14 as printed), 'headroom' in proportion to 1 - p, "
                                     "'even' the same to each (the paper's section 6 example)",
                       choices=("paper", "headroom", "even"), search=Choices(("paper", "headroom", "even"))),
        "round_s": Param(float, 10.0, "seconds between rounds (the paper samples every 5 s; 10 s as for sousa, the "
                                      "project's choice)", 0.0, open_minimum=True, search=SearchRange(4.0, 30.0)),
    }
    RULES = (Rule(("sub_cluster_size",), lambda v, _ctx: v["sub_cluster_size"] >= 2,
                  "sub_cluster_size must be at least 2: a sub-cluster of one partition has no target to move work "
                  "to"),)

    def __init__(self, params=None):
        super().__init__(params)
        self._span = 0.0
        self._window_start: float | None = None
        self._usage: dict[int, float] = {}
        self._pending: list[list[Move]] = []
        self.rounds = 0

    def decide(self, snapshot: PlacementSnapshot) -> PlacementDecision:
        if self._window_start is None:
            self._window_start = snapshot.time_s - snapshot.interval_s
        if snapshot.moves_in_flight:
            return PlacementDecision((), f"waiting: {snapshot.moves_in_flight} move(s) in flight")
        if self._pending:  # the round's schedule, one one-to-one step per period
            step = self._pending.pop(0)
            self._reset(snapshot.time_s)
            return PlacementDecision(tuple(step), f"step of the round's schedule: "
                                     + ", ".join(f"key group {m.key_group} {m.source}->{m.target}" for m in step)
                                     + f" ({len(self._pending)} step(s) left)")
        for group in range(snapshot.key_groups):
            self._usage[group] = self._usage.get(group, 0.0) + snapshot.key_group_usage(group)[BUSY]
        self._span += snapshot.interval_s
        if snapshot.time_s - self._window_start < self.params["round_s"] - 1e-9:
            return PlacementDecision((), "between rounds")
        self.rounds += 1
        steps, why = self._plan(snapshot)
        self._reset(snapshot.time_s)
        if not steps:
            return PlacementDecision((), f"round {self.rounds}: {why}")
        first, self._pending = steps[0], steps[1:]
        return PlacementDecision(tuple(first), f"round {self.rounds}: {why}; first of {len(steps)} step(s): "
                                 + ", ".join(f"key group {m.key_group} {m.source}->{m.target}" for m in first),
                                 {"moves": float(sum(len(s) for s in steps)), "steps": float(len(steps))})

    def _reset(self, time_s: float) -> None:
        self._usage.clear()
        self._span = 0.0
        self._window_start = time_s

    def utilisation(self, snapshot: PlacementSnapshot) -> list[float]:
        """p per partition over the window: its key groups' task time / the window's length."""
        p = [0.0] * snapshot.partitions
        for group, partition in enumerate(snapshot.assignment):
            p[partition] += self._usage.get(group, 0.0)
        return [x / self._span if self._span > 0 else 0.0 for x in p]

    def overloaded(self, p: list[float]) -> list[int]:
        """The trigger: partitions at or above `trigger_utilisation` and `imbalance` times the mean."""
        mean = sum(p) / len(p)
        return [m for m in range(len(p)) if p[m] >= self.params["trigger_utilisation"]
                and p[m] >= self.params["imbalance"] * mean]

    def _plan(self, snap: PlacementSnapshot) -> tuple[list[list[Move]], str]:
        p = self.utilisation(snap)
        mean = sum(p) / len(p)
        size = self.params["sub_cluster_size"]
        sources = sorted(self.overloaded(p), key=lambda m: (-p[m], m))
        if not sources:
            return [], f"no partition overloaded (largest utilisation {max(p):.2f}, mean {mean:.2f})"
        moves: list[Move] = []
        notes = []
        load = list(p)
        where = list(snap.assignment)
        for src in sources:
            groups = sorted((g for g, part in enumerate(snap.assignment) if part == src),
                            key=lambda g: (-self._usage.get(g, 0.0), g))
            excess = load[src] - mean
            chosen = []
            for g in groups:
                share = self._usage.get(g, 0.0) / self._span
                if 0 < share <= excess:
                    chosen.append(g)
                    excess -= share
            if not chosen:
                notes.append(f"partition {src} at {p[src]:.2f}: its key groups cannot be split below the mean")
                continue
            targets = self._targets(src, load, size, exclude=set(sources))
            if not targets:
                notes.append(f"partition {src} at {p[src]:.2f}: no target below saturation")
                continue
            counts = fair_split(len(chosen), [load[t] for t in targets], self.params["share"])
            queue = list(chosen)
            for target, count in zip(targets, counts):
                for _ in range(count):
                    # the next chosen group allowed there (replicas of one operator stay apart)
                    g = next((g for g in queue if snap.may_join(g, target, where)), None)
                    if g is None:
                        break
                    queue.remove(g)
                    where[g] = target
                    moves.append(Move(g, src, target))
                    share = self._usage.get(g, 0.0) / self._span
                    load[src] -= share
                    load[target] += share
            notes.append(f"partition {src} at {p[src]:.2f} (mean {mean:.2f}): {len(chosen)} key group(s) to "
                         + ", ".join(f"{t} x{c}" for t, c in zip(targets, counts) if c))
        by_pair: dict[tuple[int, int], list[Move]] = {}
        for m in moves:
            by_pair.setdefault((m.source, m.target), []).append(m)
        steps = [[m for pair in step for m in by_pair[pair]] for step in one_to_one_steps(list(by_pair))]
        return steps, "; ".join(notes)

    @staticmethod
    def _targets(source: int, load: list[float], size: int, exclude: set[int]) -> list[int]:
        """Partitions below saturation in the source's sub-cluster; else every other one, nearest first."""
        def open_(m: int) -> bool:
            return m != source and m not in exclude and load[m] < 1.0

        home = [m for m in range(len(load)) if m // size == source // size and open_(m)]
        if home:
            return sorted(home, key=lambda m: (abs(m - source), m))
        return sorted((m for m in range(len(load)) if open_(m)), key=lambda m: (abs(m - source), m))
