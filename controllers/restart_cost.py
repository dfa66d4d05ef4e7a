"""What a rescale by restart costs a native query: the downtime from the hold of its source to the first batch after
the restart, as a fixed part and a part per MB of state.

A native query's partition count changes by stop → state repartition → restart (jobs.native.rescale): the query reads
nothing meanwhile, so every change builds a backlog of `arrival rate × downtime` events. The repartition reads and
rewrites every key of the state, so its part grows with the state; stopping, starting and the first batch do not.
`python -m jobs.calibrate_restart` measures both on the machine and master the runs use and fits this model (least
squares over its rescales; the plain restarts' median gives `plain_restart_s`), so that the native run's actuator,
and whatever plans with restarts, read the same figure. Pure: no Spark, no I/O.
"""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Iterable


@dataclass(frozen=True)
class RestartCost:
    rescale_fixed_s: float  # seconds of downtime a rescale costs whatever the state
    rescale_per_mb_s: float  # seconds more per MB of state (RocksDB's SST files, as Spark's progress reports them)
    plain_restart_s: float  # a stop and start without repartition: what a rescale is compared with
    source: str = ""  # where and when it was measured

    def rescale_s(self, state_mb: float) -> float:
        """The downtime a rescale of a query holding `state_mb` MB of state is expected to cost."""
        return self.rescale_fixed_s + self.rescale_per_mb_s * max(0.0, state_mb)

    def to_dict(self) -> dict:
        return asdict(self)


class NotEnoughRestarts(ValueError):
    """The measurements cannot give a fit: said with what is missing."""


def fit_restart_cost(rescales: Iterable[tuple[float, float]], plain: Iterable[float], source: str = "") -> RestartCost:
    """rescales: (state MB, downtime s) of each rescale; plain: downtime s of each plain restart. Least squares when
    the rescales saw at least two state sizes (else the per-MB part is 0: it cannot be seen), never below 0."""
    points, plain = list(rescales), list(plain)
    if not points or not plain:
        raise NotEnoughRestarts(f"a fit needs rescales and plain restarts; got {len(points)} rescale(s) and "
                                f"{len(plain)} plain restart(s)")
    sizes = [mb for mb, _ in points]
    downtimes = [d for _, d in points]
    per_mb = 0.0
    if max(sizes) - min(sizes) > 1e-9:
        mean_x, mean_y = statistics.fmean(sizes), statistics.fmean(downtimes)
        per_mb = (sum((x - mean_x) * (y - mean_y) for x, y in points) /
                  sum((x - mean_x) ** 2 for x in sizes))
        per_mb = max(0.0, per_mb)
    fixed = max(0.0, statistics.fmean(downtimes) - per_mb * statistics.fmean(sizes))
    return RestartCost(fixed, per_mb, statistics.median(plain), source)
