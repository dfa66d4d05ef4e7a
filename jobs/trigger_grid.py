"""What a micro-batch reads is fixed when Spark plans it: the source's answer at the trigger, and Spark's trigger grid
on the run's clock (when a batch was planned, where the grid falls on the schedule).

Spark's ProcessingTimeExecutor fires a query's triggers at wall-clock multiples of the interval; a batch that
overran its trigger is followed at once, and the grid does not move. A trigger asks the source what is due
(latestOffset), so what a batch reads is fixed at its trigger, a planning delay (0.1-0.25 s measured here) before the
batch function runs. During a burst that delay matters: 100,000 ev/s arriving for 0.2 s are 20,000 events counted at
the batch function's start that the batch does not read. So the source writes its answer to every trigger to a
file (`write_planned`), and the batch function reads it (`read_planned`) for the count it sizes a batch for; the grid
estimate is the fallback (a processor without the file).

Times are microseconds: `anchor_us` the epoch microsecond of the run's time 0, the others on the run's clock.
"""
from __future__ import annotations

import json
import math
import os
import time

from params.units import US


def trigger_phase_s(anchor_us: int, trigger_s: float) -> float:
    """Where the grid's first point at or after time 0 falls: from the seed by default (`seeded_phase_s`), else
    wherever start-up ended (`--trigger-phase free`); it moves which events each batch reads, and the plant replays
    a run at its own phase (simulator.plant.PlantConfig.trigger_phase_s)."""
    interval_us = round(trigger_s * US)
    return ((-anchor_us) % interval_us) / US


# The project's choice of a seed's phase: the fraction of the golden ratio, whose multiples spread over the interval
# as evenly as any sequence's (seeds 1, 2, 3 of a 2 s trigger: 1.236, 0.472, 1.708 s)
PHASE_STEP = (math.sqrt(5.0) - 1.0) / 2.0


def seeded_phase_s(seed: int, trigger_s: float) -> float:
    """The trigger phase of a run with this seed: frac(seed x 0.618...) of the interval, to the microsecond.

    Why pinned: where a burst falls against the batches decides much of what any controller can keep. On the
    real-time Google trace the phase alone moved the oracle's attainment between 35.5 % and 75.8 % in the plant, and its
    Spark runs between 29 % and 70 % (2026-12-03); with a free phase a configuration was compared with an oracle that
    met other batch boundaries, and three seeds' means differed by the luck of the draw. Same seed, same phase:
    every configuration of a suite's seed meets the oracle's boundaries, and successive seeds sample the interval
    evenly instead of by chance."""
    interval_us = round(trigger_s * US)
    return round((seed * PHASE_STEP) % 1.0 * interval_us) % interval_us / US


def chosen_phase_s(setting: str, seed: int, trigger_s: float) -> float | None:
    """The phase the run setting `trigger_phase` asks for: 'seeded', 'free' (None: wherever start-up ends) or
    seconds in [0, trigger_s); ValueError saying what is allowed."""
    text = str(setting).strip()
    if text == "seeded":
        return seeded_phase_s(seed, trigger_s)
    if text == "free":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.0 <= value < trigger_s):
        raise ValueError(f"must be 'seeded', 'free' or seconds in [0, {trigger_s:g}) (the trigger interval), "
                         f"got {setting!r}")
    return value


def anchor_at_phase_us(earliest_us: int, trigger_s: float, phase_s: float | None) -> int:
    """The first epoch microsecond at or after `earliest_us` that puts the trigger grid at `phase_s` on the run's
    clock (`trigger_phase_s` of it is `phase_s`): at most one interval later. None: `earliest_us` itself."""
    if phase_s is None:
        return earliest_us
    interval_us = round(trigger_s * US)
    wanted = (-round(phase_s * US)) % interval_us  # the anchor's remainder on the grid
    return earliest_us + (wanted - earliest_us) % interval_us


def batch_trigger_us(now_us: int, anchor_us: int, trigger_s: float, prev_end_us: int | None) -> int:
    """When Spark planned the batch whose function runs at `now_us`: the last grid point at or before now, or, if
    the previous batch ended after it (an overrun: the next batch starts at once), that batch's end."""
    interval_us = round(trigger_s * US)
    grid_us = (now_us + anchor_us) // interval_us * interval_us - anchor_us
    return grid_us if prev_end_us is None else max(grid_us, min(prev_end_us, now_us))


def next_trigger_us(after_us, anchor_us: int, trigger_s: float):
    """The first grid point strictly after `after_us` on the run's clock (an int, or a numpy array of them)."""
    interval_us = round(trigger_s * US)
    return (after_us + anchor_us) // interval_us * interval_us + interval_us - anchor_us


def write_planned(path: str | os.PathLike, events: int) -> None:
    """The source's answer to a trigger (the batch's end offset, in events), replaced atomically: the batch function
    never reads half of it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"events": events, "at_us": time.time_ns() // 1000}, fh)
    os.replace(tmp, path)


def read_planned(path: str | os.PathLike) -> int | None:
    """The end offset the source last planned, or None when it has planned nothing yet (or the file is unreadable)."""
    try:
        with open(path) as fh:
            return int(json.load(fh)["events"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
