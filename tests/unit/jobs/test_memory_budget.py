"""The memory budget on its own: reservations that fit pass, the others wait their
turn in arrival order, and one larger than the whole budget waits for it to empty."""

from __future__ import annotations

import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from photo_pipeline.jobs.budget import MIN_DEFAULT, MemoryBudget, default_budget, machine_memory


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


class Reserver(threading.Thread):
    """Reserves ``estimate`` on its own thread; ``admitted`` is set once it has."""

    def __init__(self, budget: MemoryBudget, estimate: int) -> None:
        super().__init__(daemon=True)
        self.budget, self.estimate = budget, estimate
        self.admitted = threading.Event()
        self.charge = 0

    def run(self) -> None:
        self.charge = self.budget.reserve(self.estimate)
        self.admitted.set()


def start(budget: MemoryBudget, estimate: int, waiting: int) -> Reserver:
    """Start a reservation expected to wait (``waiting``: the queue's length then)."""
    reserver = Reserver(budget, estimate)
    reserver.start()
    wait_until(lambda: budget.waiting == waiting or reserver.admitted.is_set(), "the queue")
    return reserver


def test_reservations_that_fit_pass_and_the_rest_wait_for_a_release():
    budget = MemoryBudget(1000)
    first = budget.reserve(600)
    second = start(budget, 600, waiting=1)
    assert not second.admitted.is_set() and budget.in_use == 600
    budget.release(first)
    assert second.admitted.wait(30)
    assert budget.in_use == 600 and budget.waiting == 0


def test_an_estimate_above_the_budget_runs_alone_and_never_waits_forever():
    budget = MemoryBudget(1000)
    small = budget.reserve(100)
    huge = start(budget, 5000, waiting=1)
    assert not huge.admitted.is_set()
    budget.release(small)
    assert huge.admitted.wait(30)
    assert huge.charge == 1000  # the whole budget: nothing else runs beside it
    after = start(budget, 1, waiting=1)
    assert not after.admitted.is_set()
    budget.release(huge.charge)
    assert after.admitted.wait(30)


def test_waiters_are_served_in_arrival_order():
    budget = MemoryBudget(1000)
    held = budget.reserve(900)
    big = start(budget, 500, waiting=1)
    small = start(budget, 50, waiting=2)
    # 50 would fit now, but the 500 came first: it must not be starved by small ones.
    assert not small.admitted.is_set() and not big.admitted.is_set()
    budget.release(held)
    assert big.admitted.wait(30) and small.admitted.wait(30)
    assert budget.in_use == 550


def test_no_limit_reserves_nothing():
    budget = MemoryBudget(None)
    assert budget.reserve(10**15) == 0 and budget.in_use == 0


def test_a_budget_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        MemoryBudget(0)


def test_the_default_is_half_the_machine_less_each_pool_process():
    half = machine_memory() // 2
    assert default_budget(4, "thread") == max(half, MIN_DEFAULT)
    assert default_budget(4, "process") == max(half - 4 * (128 << 20), MIN_DEFAULT)
    assert default_budget(10_000, "process") == MIN_DEFAULT


# Frees a 30 MiB block (glibc then maps only larger ones on their own), then a block of
# the size given in MiB, and prints how much of it the process kept.
_KEPT_AFTER_FREE = r"""
import ctypes, sys
from photo_pipeline.jobs.budget import return_freed_memory

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

def rss():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) << 10 for l in status if l.startswith("VmRSS:"))

def used(size):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    return block

if sys.argv[1] == "returned":
    return_freed_memory()
libc.free(used(30 << 20))
before = rss()
libc.free(used(int(sys.argv[2]) << 20))
print(rss() - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_freed_decoder_buffers_go_back_to_the_system():
    assert _kept("default", 20) > 16 << 20  # glibc's default keeps it: RSS outgrows estimates
    assert _kept("returned", 20) < 4 << 20


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_smaller_freed_buffers_stay_for_the_next_photo():
    # With only its mmap threshold set, glibc gives back all but 128 KiB of it, which
    # the next photo faults in again.
    assert _kept("returned", 8) > 6 << 20


def _kept(mode: str, mib: int) -> int:
    run = [sys.executable, "-c", _KEPT_AFTER_FREE, mode, str(mib)]
    return int(subprocess.run(run, capture_output=True, text=True, check=True).stdout)
