"""Group commit of job successes: the slots of one worker that finish jobs at the same
time share one durable commit, and each is told its job succeeded only once that
commit is done (stronger than batching completions after the fact: nothing reported
is lost with the process).

No timer: the first finisher commits at once whatever is waiting (itself at least);
those that finish meanwhile wait for that commit and then go together in the next,
led by the first of them. With one job at a time that is one commit per job, as
before; with many, one per batch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from photo_pipeline.jobs.rows import JobSnapshot

# (job_id, fencing_token) -> the jobs that succeeded, by id
Flush = Callable[[list[tuple[str, int]]], dict[str, JobSnapshot]]


@dataclass
class _Waiter:
    job_id: str
    token: int
    wake: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    finished: bool = False
    result: JobSnapshot | None = None


class GroupCommit:
    """Thread-safe; one per worker."""

    def __init__(self, flush: Flush) -> None:
        self._flush = flush
        self._lock = threading.Lock()
        self._pending: list[_Waiter] = []
        self._flushing = False

    def succeed(self, job_id: str, fencing_token: int) -> JobSnapshot | None:
        """The job's snapshot once its success is committed; None when it was not
        (a check failed, or the batch's statement raised): the caller then finishes
        the job alone, which names the reason."""
        waiter = _Waiter(job_id, fencing_token)
        with self._lock:
            self._pending.append(waiter)
            if not self._flushing:
                self._flushing = waiter.lead = True
                waiter.wake.set()
        waiter.wake.wait()
        if not waiter.finished:  # made the leader of the jobs waiting now
            self._lead()
        return waiter.result

    def _lead(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        try:
            done = self._flush([(w.job_id, w.token) for w in batch])
        except Exception:
            done = {}  # each finishes alone, and meets the error there
        for waiter in batch:
            waiter.result = done.get(waiter.job_id)
            waiter.finished = True
            waiter.wake.set()
        with self._lock:
            if self._pending:
                nxt = self._pending[0]
                nxt.lead = True
                nxt.wake.set()
            else:
                self._flushing = False
