"""Scale-in after stabilisation, the one rule the executor-level controllers share (Flink's scale-down rule).

Scale-out is at once; a lower count (of executors, or a cheaper table row) is taken only after lower ones were wanted
without a break for `stabilisation_s`, and then the most wanted during that time, so one quiet batch between two
busy ones releases nothing that the next batch needs again.
"""
from __future__ import annotations

from collections import deque


class ScaleInHold:
    """`note` every wanted value as it is decided, `reset` when nothing lower is wanted, `lower` while it is."""

    def __init__(self, stabilisation_s: float):
        self.stabilisation_s = stabilisation_s
        self._wanted: deque[tuple[float, int]] = deque()
        self._since: float | None = None  # since when lower values have been wanted without a break

    def note(self, time_s: float, wanted: int) -> None:
        self._wanted.append((time_s, wanted))
        while self._wanted and self._wanted[0][0] < time_s - self.stabilisation_s:
            self._wanted.popleft()

    def reset(self) -> None:
        self._since = None

    def lower(self, wanted: int, current: int, time_s: float) -> tuple[int, float]:
        """(the value now, seconds fewer have been wanted) while `wanted` < `current`: `current` until the wait reaches
        stabilisation_s, then the most wanted since the wait began (`current` if that is not lower)."""
        if self._since is None:
            self._since = time_s
        waited = time_s - self._since
        if waited < self.stabilisation_s:
            return current, waited
        target = max([n for t, n in self._wanted if t >= self._since] + [wanted])
        if target >= current:
            return current, waited
        self._since = None
        return target, waited
