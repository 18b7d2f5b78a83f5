"""A few journal entries at once, their results taken in journal order.

Organize and its undo act on several files at once: one file's reads and hashing
overlap another's writes and fsyncs (BLAKE3 and the OS calls let go of the GIL).
Each file still goes through every step of ``transfer``; results are taken (and so
journalled) in the order of the job's items, up to ``ahead`` of them queued.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.pipeline.organize.journal import Entry

T = TypeVar("T")
# Measured with bench/organize.py (copies); the undo shares them.
THREADS = 4
AHEAD = 128


def run_in_order(
    ctx: JobContext,
    by_seq: dict[int, Entry],
    act: Callable[[Entry], T],
    take: Callable[[str, Entry, Future[T] | None], None],
    finished: Callable[[Entry], bool],
    *,
    name: str,
) -> None:
    """``act`` on the entry of each of the job's items (not ``finished`` ones) in a
    small pool, and ``take`` each item's outcome in item order: its future, or None
    for an entry finished before a crash. A stop lets started entries finish (and be
    taken); queued ones are not started and stay for the next run. Each entry starts
    only while the job's lease is held (``JobContext.confirm_lease``): else its
    future raises ``LeaseLost``."""

    def act_while_held(entry: Entry) -> T:
        ctx.confirm_lease()
        return act(entry)

    with ThreadPoolExecutor(THREADS, thread_name_prefix=name) as pool:
        queue: deque[tuple[str, Entry, Future[T] | None]] = deque()
        try:
            for key in ctx.items():
                entry = by_seq[int(key.split(":", 1)[0])]
                # Two names of one content may be one inode: never in flight together
                # (one's read would hold off the other's write lease).
                while queue and (
                    len(queue) >= AHEAD
                    or queue[0][2] is None
                    or queue[0][2].done()
                    or any(e.content_hash == entry.content_hash for _, e, _ in queue)
                ):
                    take(*queue.popleft())
                outcome = None if finished(entry) else pool.submit(act_while_held, entry)
                queue.append((key, entry, outcome))
            for _, _, outcome in queue:
                if ctx.should_stop and outcome is not None:
                    outcome.cancel()  # not started: stays for the next run (or the cancel)
            while queue:
                key, entry, outcome = queue.popleft()
                if outcome is None or not outcome.cancelled():
                    take(key, entry, outcome)  # what started finishes and is journalled
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
