"""The ingest benchmark's sizes, targets and timers, shared by its sections."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

from bench import _photos
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


def timed(function: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds (this process, all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def peak_rss_mb() -> dict[str, float]:
    """Peak resident set size so far (Linux reports KiB): ru_maxrss of this process and
    of the largest of its waited-for children, and this process's own VmHWM."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self": own / 1024, "children": children / 1024, "hwm": _photos.peak_memory_kb() / 1024}


def spawn_pool(size: int) -> ProcessPoolExecutor:
    """A pool like the worker's: spawned processes (forking a threaded process is unsafe)."""
    return ProcessPoolExecutor(size, mp_context=get_context("spawn"))


def start_pool(pool: ProcessPoolExecutor, size: int) -> float:
    """Start every process of ``pool`` (spawn, imports); returns the seconds it took."""
    started = time.perf_counter()
    pids: set[int] = set()
    while len(pids) < size:  # each task holds its process a moment: all get one
        pids |= {f.result() for f in [pool.submit(_photos.ready, 0.05) for _ in range(size)]}
    return time.perf_counter() - started


def verdict(value: float, target: float, *, at_least: bool) -> str:
    ok = value >= target if at_least else value <= target
    return "ok" if ok else ("BELOW target" if at_least else "OVER target")
