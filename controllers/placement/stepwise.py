"""Souravlas et al.'s stepwise one-to-one communication schedule (Appl. Sci. 2021, 11(1), 61, §3), as pure functions.

Why a schedule at all: when work moves between nodes, a node that receives from several senders at once has to
buffer what it cannot take yet. The paper orders the transfers in steps in which every node sends to exactly one node
and receives from exactly one, and makes the steps cheap: the cost of a step is the largest index distance |n - q|
among its transfers (the paper's "time units"), and the schedule puts a zero-cost step (every node to itself) first
and leaves a single step of the largest cost.

The construction follows the paper's example (N = Q = 6 nodes, t = 4 tasks per node before, s = 5 after):
  class table (pairs (p, q) with (p*t - q*s) mod g = k, g = gcd(N*t, Q*s): the paper never defines g; this reading
  reproduces its Table 2) -> single index matrix (row k: the target of each source in class k) -> initial schedule
  (homogeneous classes, the same number c of (x, y) combinations, exchange their last alpha columns so every row is a
  permutation; total cost 23) -> the targets relabelled so the row chosen first becomes the identity (17) -> the
  largest-distance pairs (Q-1, 0) and (0, Q-1) gathered into one step by exchanging a set of entries between the
  largest-cost steps (16).
The paper prints a final matrix whose columns N1 and N2 are not permutations (source 1 sends to node 4 twice and
never to node 5); `schedule_errors` finds that, and `one_largest_step` gives a valid matrix with the printed costs.
Where the paper's rule does not apply (a class with a source twice, two homogeneous rows whose last columns do not
exchange into permutations), the rows are split into one-to-one steps by edge colouring instead (König's theorem:
a bipartite multigraph of maximum degree D splits into D matchings), so every schedule returned is valid.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

Matrix = tuple[tuple[int, ...], ...]  # rows are steps, column n is source node n, the entry its target


@dataclass(frozen=True)
class CommunicationClass:
    k: int
    pairs: tuple[tuple[int, int], ...]  # (source, target)
    combinations: int  # c: the (x, y) with 0 <= x < t, 0 <= y < s and (k + x - y) mod g = 0


def class_table(nodes_before: int, tasks_before: int, nodes_after: int, tasks_after: int) -> list[CommunicationClass]:
    """Eq. 7: pair (p, q) is in class k iff (p*t - q*s) mod g = k, g = gcd(N*t, Q*s)."""
    n, t, q_nodes, s = nodes_before, tasks_before, nodes_after, tasks_after
    if min(n, t, q_nodes, s) < 1:
        raise ValueError(f"node and task counts must be >= 1 (N={n}, t={t}, Q={q_nodes}, s={s})")
    g = math.gcd(n * t, q_nodes * s)
    table = []
    for k in range(g):
        pairs = tuple((p, q) for q in range(q_nodes) for p in range(n) if (p * t - q * s) % g == k)
        pairs = tuple(sorted(pairs, key=lambda pq: (pq[1], pq[0])))
        c = sum(1 for x in range(t) for y in range(s) if (k + x - y) % g == 0)
        table.append(CommunicationClass(k, pairs, c))
    return table


def step_cost(row: tuple[int, ...]) -> int:
    """A step costs its longest transfer: max |n - q| over its (source n, target q)."""
    return max((abs(n - q) for n, q in enumerate(row)), default=0)


def total_cost(matrix: Matrix) -> int:
    return sum(step_cost(row) for row in matrix)


def schedule_errors(matrix: Matrix, transfers: list[tuple[int, int]] | None = None) -> list[str]:
    """What makes `matrix` not a one-to-one schedule of `transfers` (source, target; by default every source to
    every target once, the paper's example): a step (row) in which a node receives twice, or a source (column) whose
    targets over the steps are not the ones it has to send to. Empty when it is valid."""
    errors = []
    width = len(matrix[0]) if matrix else 0
    if transfers is None:
        transfers = [(n, q) for n in range(width) for q in range(len(matrix))]
    for i, row in enumerate(matrix):
        if sorted(row) != list(range(width)):
            errors.append(f"step {i} is not one-to-one: {_multiset_problem(list(row), list(range(width)))}")
    for n in range(width):
        column = [row[n] for row in matrix]
        expected = [q for p, q in transfers if p == n]
        if sorted(column) != sorted(expected):
            errors.append(f"column N{n} does not send what source {n} has to: "
                          f"{_multiset_problem(column, expected)}")
    return errors


def _multiset_problem(values: list[int], expected: list[int]) -> str:
    extra = sorted({v for v in values if values.count(v) > expected.count(v)})
    missing = sorted({v for v in expected if values.count(v) < expected.count(v)})
    return "; ".join(part for part in (
        f"{', '.join(map(str, extra))} more often than due" if extra else "",
        f"{', '.join(map(str, missing))} less often than due" if missing else "") if part)


def single_index_matrix(table: list[CommunicationClass], sources: int) -> Matrix:
    """Row k holds, in column n, the target of source n in class k. A class that holds a source more than once (not
    in the paper's example) gives one row per occurrence."""
    rows = []
    for cls in table:
        targets: dict[int, list[int]] = {}
        for p, q in cls.pairs:
            targets.setdefault(p, []).append(q)
        depth = max((len(v) for v in targets.values()), default=0)
        for level in range(depth):
            rows.append(tuple(targets[n][level] if level < len(targets.get(n, ())) else n for n in range(sources)))
    return tuple(rows)


def initial_schedule(table: list[CommunicationClass], sources: int) -> Matrix:
    """§3, step 2: homogeneous classes (equal c) taken in pairs exchange the entries of their last alpha columns,
    alpha the number of distinct targets per class, so that each row becomes a permutation (the paper's example
    exchanges N3-N5 between classes 0-1, 2-3 and 4-5). Rows the rule does not make one-to-one are split by edge
    colouring."""
    sim = [list(r) for r in single_index_matrix(table, sources)]
    if len(sim) != len(table):  # a class with a source twice: the paper's rule is not defined for it
        return edge_colour_schedule(_pairs_of(sim), sources)
    by_c: dict[int, list[int]] = {}
    for i, cls in enumerate(table):
        by_c.setdefault(cls.combinations, []).append(i)
    for rows in by_c.values():
        for a, b in zip(rows[0::2], rows[1::2]):
            alpha = len(set(sim[a]))
            for col in range(sources - alpha, sources):
                sim[a][col], sim[b][col] = sim[b][col], sim[a][col]
    out = tuple(tuple(r) for r in sim)
    if any(sorted(r) != list(range(sources)) for r in out):
        return edge_colour_schedule(_pairs_of(sim), sources)
    return out


def relabel_to_identity(matrix: Matrix, row: int = 0) -> Matrix:
    """§3, step 3.1: rename the new distribution's nodes (free to choose) so that step `row` sends every node to
    itself, and put it first: a step of cost 0. The paper's example renames 0->0, 2->1, 4->2, 1->3, 3->4, 5->5."""
    chosen = matrix[row]
    if sorted(chosen) != list(range(len(chosen))):
        raise ValueError(f"step {row} is not a permutation; it cannot become the identity")
    rename = {target: n for n, target in enumerate(chosen)}
    renamed = [tuple(rename[q] for q in r) for r in matrix]
    return tuple([renamed[row]] + [r for i, r in enumerate(renamed) if i != row])


def one_largest_step(matrix: Matrix) -> Matrix:
    """§3, step 3.2: while two or more steps cost the most, exchange between two of them the entries of a set of
    their columns that keeps both one-to-one (a union of the cycles the two rows form), choosing the exchange that
    lowers the total cost most; stop when no exchange lowers it. The paper's example: steps 3 and 5 of cost 5
    exchange the entries of N0-N2, which puts (0, 5) and (5, 0) in one step: costs 0, 3, 2, 5, 2, 4 = 16."""
    rows = [tuple(r) for r in matrix]
    while True:
        top = max(step_cost(r) for r in rows)
        largest = [i for i, r in enumerate(rows) if step_cost(r) == top]
        if len(largest) < 2:
            return tuple(rows)
        best = None
        for a, b in itertools.combinations(largest, 2):
            cycles = _cycles(rows[a], rows[b])
            for pick in range(1, len(cycles)):
                for chosen in itertools.combinations(cycles, pick):
                    cols = set().union(*chosen)
                    new_a = tuple(rows[b][c] if c in cols else rows[a][c] for c in range(len(rows[a])))
                    new_b = tuple(rows[a][c] if c in cols else rows[b][c] for c in range(len(rows[a])))
                    gain = step_cost(rows[a]) + step_cost(rows[b]) - step_cost(new_a) - step_cost(new_b)
                    if gain > 0 and (best is None or gain > best[0]):
                        best = (gain, a, b, new_a, new_b)
        if best is None:
            return tuple(rows)
        _, a, b, new_a, new_b = best
        rows[a], rows[b] = new_a, new_b


def _cycles(row_a: tuple[int, ...], row_b: tuple[int, ...]) -> list[frozenset[int]]:
    """The columns of two permutation rows in cycles: exchanging the entries of a whole cycle keeps both rows
    permutations (the values leaving a row are the values entering it)."""
    where_a = {v: c for c, v in enumerate(row_a)}
    seen, cycles = set(), []
    for start in range(len(row_a)):
        if start in seen:
            continue
        cycle, col = set(), start
        while col not in cycle:
            cycle.add(col)
            col = where_a[row_b[col]]
        seen |= cycle
        cycles.append(frozenset(cycle))
    return cycles


def paper_schedule(nodes: int, tasks_before: int, tasks_after: int) -> dict[str, Matrix]:
    """The paper's construction for N = Q = `nodes`, each matrix on the way: 'single index', 'initial', 'identity
    first', 'final'."""
    table = class_table(nodes, tasks_before, nodes, tasks_after)
    initial = initial_schedule(table, nodes)
    first = relabel_to_identity(initial, 0)
    return {"single index": single_index_matrix(table, nodes), "initial": initial, "identity first": first,
            "final": one_largest_step(first)}


def _pairs_of(rows) -> list[tuple[int, int]]:
    return [(n, q) for r in rows for n, q in enumerate(r)]


def edge_colour_schedule(pairs: list[tuple[int, int]], nodes: int) -> Matrix:
    """Transfers (source, target), each node sending and receiving the same number D of them, split into D steps in
    which every node sends once and receives once (a D-regular bipartite multigraph is a union of D perfect
    matchings: find one by augmenting paths, remove it, repeat)."""
    remaining: dict[tuple[int, int], int] = {}
    for p in pairs:
        remaining[p] = remaining.get(p, 0) + 1
    steps = []
    while remaining:
        match = _perfect_matching(remaining, nodes)
        if match is None:
            raise ValueError("the transfers are not balanced: some node sends or receives more often than another")
        for n, q in enumerate(match):
            remaining[(n, q)] -= 1
            if remaining[(n, q)] == 0:
                del remaining[(n, q)]
        steps.append(tuple(match))
    return tuple(steps)


def _perfect_matching(edges: dict[tuple[int, int], int], nodes: int) -> list[int] | None:
    adjacent = {n: sorted({q for (p, q) in edges if p == n}) for n in range(nodes)}
    target_of: dict[int, int] = {}

    def augment(n: int, visited: set[int]) -> bool:
        for q in adjacent[n]:
            if q in visited:
                continue
            visited.add(q)
            if q not in target_of or augment(target_of[q], visited):
                target_of[q] = n
                return True
        return False

    for n in range(nodes):
        if not augment(n, set()):
            return None
    match = [0] * nodes
    for q, n in target_of.items():
        match[n] = q
    return match
