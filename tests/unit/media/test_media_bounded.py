"""media.bounded: work in a forked child, killed at its deadline, memory capped."""

from __future__ import annotations

import gc
import os
import signal
import time

import pytest

from photo_pipeline.media.bounded import run_bounded
from photo_pipeline.media.errors import MediaError


def add(a: int, b: int) -> int:
    return a + b


def refuse(code: str) -> None:
    raise MediaError(code, "refused in the child")


def explode() -> None:
    raise RuntimeError("boom")


def die() -> None:
    os._exit(3)  # as a segfaulting decoder would, without a word


def grab_memory(gib: int) -> int:
    return len(bytearray(gib << 30))


def hang(pid_file: str) -> None:
    with open(pid_file, "w") as out:
        out.write(str(os.getpid()))
    while True:
        time.sleep(1)


def test_returns_the_result() -> None:
    assert run_bounded(add, 2, 3, time_limit=30) == 5


def test_returns_large_results_through_the_pipe() -> None:
    data = run_bounded(bytes, 8 << 20, time_limit=30)
    assert len(data) == 8 << 20


def test_media_errors_keep_their_code() -> None:
    with pytest.raises(MediaError) as caught:
        run_bounded(refuse, "too_many_pixels", time_limit=30)
    assert caught.value.code == "too_many_pixels"
    assert "refused in the child" in caught.value.detail


@pytest.mark.parametrize("fn", [explode, die])
def test_other_failures_are_corrupt_file(fn) -> None:
    with pytest.raises(MediaError) as caught:
        run_bounded(fn, time_limit=30)
    assert caught.value.code == "corrupt_file"


def test_memory_beyond_the_budget_is_refused() -> None:
    with pytest.raises(MediaError) as caught:
        run_bounded(grab_memory, 2, time_limit=30, memory_limit=1 << 30)
    assert caught.value.code == "corrupt_file"
    assert "memory" in caught.value.detail


def test_a_hang_is_killed_and_reaped(tmp_path) -> None:
    pid_file = tmp_path / "pid"
    with pytest.raises(MediaError) as caught:
        run_bounded(hang, str(pid_file), time_limit=0.5, what="poster frame")
    assert caught.value.code == "decode_timeout"
    assert "poster frame" in caught.value.detail
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_child_whose_parent_cannot_kill_it_ends_itself(tmp_path, monkeypatch) -> None:
    # as when the worker is killed with -9: nobody sends SIGKILL, the child's alarm fires
    from photo_pipeline.media import bounded

    monkeypatch.setattr(bounded, "_kill_and_reap", lambda pid: os.waitpid(pid, 0))
    pid_file = tmp_path / "pid"
    with pytest.raises(MediaError) as caught:
        run_bounded(hang, str(pid_file), time_limit=0.2)
    assert caught.value.code == "decode_timeout"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_a_result_is_not_held_up_by_a_sibling_holding_the_pipe(monkeypatch) -> None:
    """Another thread's item forked a child between this item's pipe() and its fork:
    that child holds a copy of this pipe's write end, and hangs. This item's result
    must arrive when its own child is done, not when the sibling is killed."""
    real_fork = os.fork
    siblings: list[int] = []

    def fork_a_hanging_sibling_first() -> int:
        if not siblings:
            sibling = real_fork()  # inherits the pipe the caller has just made
            if sibling == 0:
                signal.alarm(30)  # never outlives the test
                while True:
                    time.sleep(1)
            siblings.append(sibling)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork_a_hanging_sibling_first)
    try:
        assert run_bounded(add, 2, 3, time_limit=10) == 5
    finally:
        for pid in siblings:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_the_child_never_finalizes_what_it_inherited(tmp_path):
    # A cycle freed in the child would run its finalizer there: for an FFmpeg object
    # that waits for threads the child does not have (a hang until the deadline).
    log = tmp_path / "finalized"

    class Held:
        def __del__(self) -> None:
            with open(log, "a") as out:
                out.write(f"{os.getpid()}\n")

    gc.disable()  # the cycle stays uncollected until the child runs
    try:
        held = Held()
        held.me = held
        del held
        child = run_bounded(lambda: (gc.collect(), os.getpid())[1], time_limit=20)
    finally:
        gc.enable()
    gc.collect()
    assert child != os.getpid()
    assert log.read_text().split() == [str(os.getpid())]  # finalized once, in the parent
