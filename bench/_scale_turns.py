"""Calls timed across the library sizes in turns, so that a load drifting over the
minutes of a run does not drift the ratio of the largest size to the smallest."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def in_turns(
    timed: dict[int, Callable[[], object]], repeat: int, budget_ms: float = 5000
) -> dict[int, float]:
    """The median ms of each size's call, called in turns (one size after the other,
    ``repeat`` rounds, after one warm-up each): each round compares the sizes at one
    moment, so a load that drifts over minutes does not drift their ratio. A call of
    several seconds is timed fewer times: its median would take minutes."""
    for call in timed.values():
        call()
    times: dict[int, list[float]] = {size: [] for size in timed}
    while min(len(t) for t in times.values()) < repeat and all(
        sum(t) < budget_ms for t in times.values()
    ):
        for size, call in timed.items():
            started = time.perf_counter()
            call()
            times[size].append((time.perf_counter() - started) * 1000)
    return {size: statistics.median(t) for size, t in times.items()}
