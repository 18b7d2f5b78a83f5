"""Waiting for jobs with live progress bars, running them in-process if nobody else
will (embedded mode, ``cli.embedded``); and finding a job by a start of its id. The
worker runtime and the progress bars load where a wait starts, not for `job show`."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from photo_pipeline.cli.common import console, err_console, loaded_code_frozen
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs.errors import InvalidArgument, JobNotFound
from photo_pipeline.jobs.events import EventFeed
from photo_pipeline.jobs.service import JobService
from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.pipeline.library import Library

if TYPE_CHECKING:
    from photo_pipeline.cli.embedded import EmbeddedWorker

T = TypeVar("T")

REFRESH_SECONDS = 0.25
# How often a wait without a worker of its own looks whether one is still needed.
WORKER_CHECK_SECONDS = 2.0
# How many candidates an ambiguous id prefix lists.
AMBIGUOUS_SHOWN = 10


def existing_job(service: JobService, job_id: str) -> dict[str, Any]:
    """The job's snapshot, by its id or any unique start of it (``9055b549``);
    ``job_not_found`` if there is none (never created, or pruned meanwhile),
    ``ambiguous_job_id`` with the candidates if the start fits several."""
    job = service.get(full_job_id(service, job_id))
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return job


def full_job_id(service: JobService, job_id: str) -> str:
    """The id that ``job_id`` starts, when it starts exactly one (else ``job_id`` as
    given, for the caller to report); ``ambiguous_job_id`` when it starts several."""
    if not job_id or service.get(job_id) is not None:
        return job_id
    candidates = service.ids_starting_with(job_id, limit=AMBIGUOUS_SHOWN + 1)
    if len(candidates) > 1:
        shown = ", ".join(candidates[:AMBIGUOUS_SHOWN])
        more = ", …" if len(candidates) > AMBIGUOUS_SHOWN else ""
        raise InvalidArgument(
            "ambiguous_job_id", f"{job_id!r} starts several job ids: {shown}{more}"
        )
    return candidates[0] if candidates else job_id


def wait_for_jobs(
    lib: Library,
    job_ids: list[str],
    *,
    embedded: bool | None,
    show_progress: bool,
    ready: Waiting | None = None,
) -> list[dict[str, Any]]:
    """Block until every job is finished; return their final snapshots. Database
    outages meanwhile are waited out: the jobs are queued, so nothing is lost.

    ``embedded``: True runs a worker in this process, False never does, None (auto)
    does when no live worker serves the jobs' types, looked at again every
    ``WORKER_CHECK_SECONDS`` while it waits: the worker that served them may have
    been another ``--wait``'s, which stops with its own command. ``ready``: the
    ``Waiting`` started (``start_waiting``) before the jobs were queued, whose worker
    may already be running them; it is stopped here."""
    service = lib.service
    firsts = ride_out(lambda: [existing_job(service, job_id) for job_id in job_ids])
    job_ids = [job["id"] for job in firsts]
    types = {job["job_type"] for job in firsts}
    ours = ready if ready is not None else Waiting(lib, types, embedded)
    with loaded_code_frozen():
        try:
            ours.cover(types)
            return _watch(service, job_ids, ours, show_progress)
        finally:
            ours.stop()


def start_waiting(lib: Library, job_types: set[str], *, embedded: bool | None) -> Waiting:
    """A wait begun before its jobs are queued: the embedded worker (when one is
    needed for ``job_types``) is started now, so that it claims the first job the
    moment it commits (an enqueue in this process wakes it) instead of after the
    command has queued the rest, read them back and started it. Hand it to
    ``wait_for_jobs``, which stops it; ``stop`` it if the jobs are never queued."""
    return Waiting(lib, job_types, embedded)


class Waiting:
    """What a wait listens to: this process's embedded worker, started when (and
    once) it is needed, which sets ``changed`` as each job it ran ends; on
    PostgreSQL also the event feed's notifications (``jobs.events``), which set it
    after every commit that wrote job events, whoever's worker made it."""

    def __init__(self, lib: Library, types: set[str], embedded: bool | None) -> None:
        self._lib, self._types, self._automatic = lib, set(types), embedded is None
        self.worker: EmbeddedWorker | None = None
        self.changed = threading.Event()
        self.feed = EventFeed(lib.service.session_factory)
        self._stop_listening = threading.Event()
        self.listening = threading.Event()
        self._checked = -WORKER_CHECK_SECONDS
        if embedded:
            self._start()
        elif self._automatic:
            ride_out(self.check)

    def cover(self, types: set[str]) -> None:
        """The jobs waited for are of ``types`` (a wait begun before its jobs were
        queued was told the types it expected): an embedded worker runs every type
        with a handler; without one, whether one is needed is looked at again."""
        from photo_pipeline.cli.embedded import refuse_unknown

        if self.worker is not None:
            refuse_unknown(types)
        elif not types <= self._types:
            self._types |= types
            self._checked = -WORKER_CHECK_SECONDS
            if self._automatic:
                ride_out(self.check)

    def check(self) -> None:
        """Start the worker if nobody serves the jobs now (at most every
        ``WORKER_CHECK_SECONDS``); an outage meanwhile is looked at next time."""
        from photo_pipeline.cli.embedded import needs_embedded_worker

        now = time.monotonic()
        if self.worker is not None or not self._automatic:
            return
        if now - self._checked < WORKER_CHECK_SECONDS:
            return
        self._checked = now
        if needs_embedded_worker(self._lib, self._types):
            self._start()

    def listen(self) -> None:
        """PostgreSQL: follow the event feed's notifications on a thread (until
        ``stop``), reconnecting after an outage; meanwhile the wait polls."""
        if not self.feed.is_postgresql or self.listening.is_set():
            return
        self.listening.set()

        def follow() -> None:
            while not self._stop_listening.is_set():
                try:
                    self.feed.listen(self.changed.set, self._stop_listening)
                except Exception:  # the database went away: polled meanwhile
                    self._stop_listening.wait(REFRESH_SECONDS)

        threading.Thread(target=follow, name="wait-events", daemon=True).start()

    def _start(self) -> None:
        from photo_pipeline.cli.embedded import EmbeddedWorker

        self.worker = EmbeddedWorker(self._lib, self._types, job_ended=self.changed)
        self.worker.start()

    def stop(self) -> None:
        self._stop_listening.set()
        if self.worker is not None:
            self.worker.stop()


def _watch(
    service: JobService, job_ids: list[str], ours: Waiting, show_progress: bool
) -> list[dict[str, Any]]:
    """Look at the jobs when something may have changed, until all are finished;
    draw their bars if shown (redrawn every ``REFRESH_SECONDS``).

    Event-driven: the jobs are read again when the embedded worker ends one, when
    (PostgreSQL) a commit wrote job events, or when the event feed's cursor moved
    (looked at every ``REFRESH_SECONDS``: one query, and the only news from another
    process on SQLite). Every state change writes an event, so a cursor that did not
    move means nothing to read."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from photo_pipeline.cli.bars import ItemCountColumn
    from photo_pipeline.cli.job_words import outcome_markup

    ours.listen()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        ItemCountColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=console,
        disable=not show_progress,
    ) as bars:
        tasks = {
            job_id: bars.add_task(job_id[:8], total=None, rate="", items=None, ended=False)
            for job_id in job_ids
        }
        outage = _Outage()
        seen: int | None = None  # the feed's cursor when the jobs were last read
        woken = True
        while True:
            ours.changed.clear()  # before looking: a job ending meanwhile is not missed
            try:
                ours.check()
                cursor = ours.feed.last_seq() if not woken else None
                if not woken and not show_progress and cursor == seen:
                    if ours.worker is not None and ours.worker.failure:
                        raise ours.worker.failure[0]
                    woken = ours.changed.wait(REFRESH_SECONDS)
                    continue
                # Read after the cursor: an event after it is seen next time.
                seen = ours.feed.last_seq() if cursor is None else cursor
                finals = [_job(service, job_id) for job_id in job_ids]
                # Without bars, only the states matter.
                progress_of = service.progress_of(job_ids) if show_progress else {}
            except DatabaseUnavailable as exc:
                outage.wait(exc)
                woken = True
                continue
            outage.over()
            for job in finals:
                if job["id"] not in progress_of:
                    continue
                progress = progress_of[job["id"]]
                task = tasks[job["id"]]
                speed = bars.tasks[task].speed
                ended = job["state"] in FINISHED_STATES
                # A job that ended with no items is complete, not waiting for a total.
                total = progress["total"] or (1 if ended else None)
                bars.update(
                    task,
                    total=total,
                    completed=progress["done"] if progress["total"] else (1 if ended else 0),
                    description=f"{job['job_type']} · "
                    f"{outcome_markup(job['state'], progress['by_state'])}",
                    rate=f"{speed:.1f} items/s" if speed else "",
                    items=progress,
                    ended=ended,
                )
            if all(job["state"] in FINISHED_STATES for job in finals):
                return finals
            if ours.worker is not None and ours.worker.failure:
                raise ours.worker.failure[0]
            woken = ours.changed.wait(REFRESH_SECONDS)


def _job(service: JobService, job_id: str) -> dict[str, Any]:
    """The job of this full id (``job_not_found`` once pruned)."""
    job = service.get(job_id)
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return job


def ride_out(action: Callable[[], T]) -> T:
    """``action()``, tried again while the database is unavailable."""
    outage = _Outage()
    while True:
        try:
            result = action()
        except DatabaseUnavailable as exc:
            outage.wait(exc)
            continue
        outage.over()
        return result


class _Outage:
    """The database going away while we wait: one line when it goes, one when it
    comes back, and polls spaced by a capped, jittered backoff meanwhile."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._rng = random.Random()
        self._attempt = 0
        self._since = 0.0

    def wait(self, exc: DatabaseUnavailable) -> None:
        if self._attempt == 0:
            self._since = time.monotonic()
            err_console.print(
                f"database unavailable, still waiting: {exc.detail}",
                highlight=False,
                soft_wrap=True,
            )
        from photo_pipeline.jobs.runtime import RECONNECT

        self._attempt += 1
        self._sleep(RECONNECT.delay(self._attempt, self._rng).total_seconds())

    def over(self) -> None:
        if self._attempt:
            err_console.print(
                f"database reachable again after {time.monotonic() - self._since:.1f} s",
                highlight=False,
            )
        self._attempt = 0
