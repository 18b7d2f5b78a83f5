"""The ingest benchmark's sizes, targets and timers, shared by its sections."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from bench import _harness as h
from photo_pipeline.pipeline.ingest import scan

CPUS = os.cpu_count() or 1
HASH_TARGET = 0.8
RESCAN_TARGET = 2.0  # "little more than walking": a no-change rescan within 2x the walk
WALK = scan.walk  # the walk as the scan uses it, before the probe wraps it
MB = 1e6


@dataclass(frozen=True)
class Sizes:
    photos: int
    rescans: int  # no-change rescans (and walks, empty-folder scans) per scan process
    hash_rounds: int  # rounds of (bare, hash_file, hash_file, bare) passes


FULL = Sizes(photos=2000, rescans=5, hash_rounds=2)
QUICK = Sizes(photos=200, rescans=5, hash_rounds=3)


def peak_rss_mb() -> dict[str, float]:
    """Peak resident set size so far (Linux reports KiB): ru_maxrss of this process and
    of the largest of its waited-for children, and this process's own VmHWM."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self": own / 1024, "children": children / 1024, "hwm": h.peak_rss_mb()}


def verdict(value: float, target: float, *, at_least: bool) -> str:
    ok = value >= target if at_least else value <= target
    return "ok" if ok else ("BELOW target" if at_least else "OVER target")
