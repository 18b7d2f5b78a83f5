"""A worker's memory budget: the bytes its items may use at once, by their estimates.

A handler that knows what an item will cost (``JobContext.map(..., weigh=...)``) has
each item reserve its estimate before it is handed to the pool, and give it back when
it ends. Items start only while the estimates in flight fit the budget, so a few huge
images run one or two at a time while ordinary ones fill every slot. An item larger
than the whole budget still runs, alone: nothing waits forever, nothing is skipped.

Reservations are served in arrival order: a huge item waiting for the budget to empty
is not starved by small ones (of its own job or another) that would still fit.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections import deque
from pathlib import Path

MIB = 1 << 20
# What a pool process costs before any item (an interpreter with Pillow, libvips,
# NumPy loaded: 118 MiB measured), which no item's estimate includes.
PROCESS_BASELINE = 128 * MIB
MIN_DEFAULT = 256 * MIB
# glibc's mallopt parameters, and the block size from which it maps memory on its own.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MAPPED_FROM = 16 * MIB


class MemoryBudget:
    """Reserve and release estimated bytes; ``limit`` None means no limit."""

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit <= 0:
            raise ValueError(f"a memory budget must be positive, got {limit}")
        self.limit = limit
        self._changed = threading.Condition()
        self._queue: deque[object] = deque()  # waiting reservations, oldest first
        self._in_use = 0

    @property
    def in_use(self) -> int:
        with self._changed:
            return self._in_use

    @property
    def waiting(self) -> int:
        """Reservations blocked until enough is released."""
        with self._changed:
            return len(self._queue)

    def reserve(self, estimate: int) -> int:
        """Block until ``estimate`` bytes fit (or nothing else is reserved, for an
        estimate above the limit) and return what was reserved, for ``release``."""
        limit = self.limit
        if limit is None:
            return 0
        charge = min(max(int(estimate), 0), limit)
        ticket = object()
        with self._changed:
            self._queue.append(ticket)
            self._changed.wait_for(
                lambda: self._queue[0] is ticket and self._in_use + charge <= limit
            )
            self._queue.popleft()
            self._in_use += charge
            self._changed.notify_all()  # the next in line may fit as well
        return charge

    def release(self, charge: int) -> None:
        if not charge:
            return
        with self._changed:
            self._in_use -= charge
            self._changed.notify_all()


def default_budget(concurrency: int, executor: str) -> int:
    """Half the memory this machine (or its container) has, less the baseline of each
    pool process; the rest is left to the database, the page cache and other programs.
    One worker per machine is assumed: give each of several its own ``memory_budget``."""
    budget = machine_memory() // 2
    if executor == "process" and concurrency > 1:
        budget -= concurrency * PROCESS_BASELINE
    return max(budget, MIN_DEFAULT)


def machine_memory() -> int:
    """Physical memory, or the cgroup's limit when that is lower (a container)."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in (
        Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
        Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
    ):
        try:
            text = limit_file.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            return min(physical, int(text))
    return physical


def return_freed_memory() -> None:
    """Have glibc map blocks of 16 MiB and more on their own, so that freeing one
    gives it back to the system. By default glibc raises that threshold to the
    largest block freed so far (up to 32 MiB); a decoder's buffers below it then come
    from arenas that keep them once freed, and the RSS of a worker running one item
    at a time grew past that item's estimate by what earlier items had freed
    (bench/memory.py: 310 MiB added for 186 MiB items, 194 MiB with this). Blocks
    that large are few: no slower on ordinary photos.

    Below that size, up to as much freed memory stays at the top of each arena (glibc
    gives back all but 128 KiB by default) for the next photo's buffers: returned
    and faulted in again for every photo, they cost 5% of an import's CPU
    (bench/import.py). Nothing to do off glibc."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM)
        libc.mallopt(_M_TRIM_THRESHOLD, MAPPED_FROM)
