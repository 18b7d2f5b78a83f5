"""Fan-out of the durable event log to live streams.

One reader per server process follows the log (woken by PostgreSQL ``NOTIFY``, or
polling on SQLite) and keeps the newest events in memory; each stream reads from that
window, or from the database when it resumes from further back. A stream is an exact
replay of the log from its cursor: every event once, in order. What makes it cheap to
watch is coalescing: a run of consecutive item-progress events of one job becomes one
message that lists the sequence numbers it covers and carries the job's counts.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import text

from photo_pipeline.db import write_session
from photo_pipeline.jobs import JobNotFound, JobService
from photo_pipeline.jobs.events import EVENTS_CHANNEL, EventFeed

log = logging.getLogger(__name__)

PROGRESS_TYPES = frozenset({"items", "items_added"})
FINISHED_TYPES = frozenset({"state:succeeded", "state:failed", "state:cancelled"})
_READ_LIMIT = 1000


class EventHub:
    def __init__(
        self,
        service: JobService,
        *,
        poll_seconds: float,
        min_interval: float = 0.2,
        window: int = 20_000,
    ) -> None:
        self._service = service
        self._feed = EventFeed(service.session_factory)
        self._poll_seconds = poll_seconds
        # At most this often per second do streams get new messages: the coalescing rate.
        self._min_interval = min_interval
        self._window_size = window
        self._window: list[dict[str, Any]] = []  # the newest events, oldest first
        self._seqs: list[int] = []
        self.floor = 0  # every event with seq <= floor is older than the window
        self.cursor = 0  # every event with seq <= cursor has been read
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stop_listening = threading.Event()

    async def start(self) -> None:
        self.cursor = self.floor = await asyncio.to_thread(self._feed.last_seq)
        self._tasks.append(asyncio.create_task(self._follow(), name="event-hub"))
        if self._feed.is_postgresql:
            loop = asyncio.get_running_loop()
            self._tasks.append(asyncio.create_task(self._listen(loop), name="event-listen"))

    async def stop(self) -> None:
        # The flag as well as the cancel: a cancel can be lost (Python 3.11's
        # ``wait_for`` dropped one that landed in the turn its wait ended).
        self._stop_listening.set()
        self._wake.set()
        for task in self._tasks:
            task.cancel()
        if self._feed.is_postgresql:
            # The listening thread waits up to a second for a notification before it
            # looks at the flag: one now ends that wait (a server's stop, each test's).
            with contextlib.suppress(Exception):  # the database is gone: it times out
                await asyncio.to_thread(self._notify_listeners)
        if self._tasks:
            await asyncio.wait(self._tasks)

    def _notify_listeners(self) -> None:
        with write_session(self._service.session_factory) as session:
            session.execute(text(f"NOTIFY {EVENTS_CHANNEL}"))

    def wake(self) -> None:
        self._wake.set()

    # ── the one reader ─────────────────────────────────────────────────────────
    async def _follow(self) -> None:
        while not self._stop_listening.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._poll_seconds):
                    await self._wake.wait()
            self._wake.clear()
            try:
                while await self._read_more():
                    pass
            except Exception:  # the database may be restarting: keep serving, retry
                log.exception("reading the event log failed; retrying")
            await asyncio.sleep(self._min_interval)

    async def _read_more(self) -> bool:
        events = await asyncio.to_thread(self._feed.after, self.cursor, limit=_READ_LIMIT)
        if not events:
            return False
        await asyncio.to_thread(self._attach_progress, events)
        self._window.extend(events)
        self._seqs.extend(e["seq"] for e in events)
        if len(self._window) > 2 * self._window_size:
            # Drop the older half in one go (lists: cheap to slice from the end).
            drop = len(self._window) - self._window_size
            self.floor = self._seqs[drop - 1]
            self._window = self._window[drop:]
            self._seqs = self._seqs[drop:]
        self.cursor = events[-1]["seq"]
        async with self._changed:
            self._changed.notify_all()
        return len(events) == _READ_LIMIT

    def _attach_progress(self, events: list[dict[str, Any]]) -> None:
        """The job's counts on its last progress event of a batch: one query per job
        per batch, shared by every stream."""
        last: dict[str, dict[str, Any]] = {}
        for event in events:
            if event["type"] in PROGRESS_TYPES:
                last[event["job_id"]] = event
        for job_id, event in last.items():
            with contextlib.suppress(JobNotFound):  # pruned meanwhile
                event["progress"] = self._service.progress(job_id)

    async def _listen(self, loop: asyncio.AbstractEventLoop) -> None:
        def wake() -> None:
            loop.call_soon_threadsafe(self._wake.set)

        while not self._stop_listening.is_set():
            try:
                await asyncio.to_thread(self._feed.listen, wake, self._stop_listening)
            except Exception:
                log.warning("LISTEN connection lost; polling until it is back", exc_info=True)
                await asyncio.sleep(self._poll_seconds)

    # ── streams ────────────────────────────────────────────────────────────────
    async def events(self, after: int, job_id: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every event with ``seq > after`` (of one job, or of all), then live ones,
        forever: the caller decides when to stop. Yields batches' events one by one."""
        cursor = after
        while True:
            if cursor < self.floor:
                cursor, batch = await self._from_database(cursor, job_id)
            else:
                start = bisect.bisect_right(self._seqs, cursor)
                batch = [e for e in self._window[start:] if job_id is None or e["job_id"] == job_id]
                cursor = max(cursor, self.cursor)
            if batch:
                for message in coalesce(batch):
                    yield message
                continue
            async with self._changed:
                if cursor >= self.cursor:
                    await self._changed.wait()

    async def _from_database(
        self, cursor: int, job_id: str | None
    ) -> tuple[int, list[dict[str, Any]]]:
        seen_by_hub = self.cursor  # everything up to here is committed
        if job_id is None:
            batch = await asyncio.to_thread(self._feed.after, cursor, limit=_READ_LIMIT)
        else:
            batch = await asyncio.to_thread(
                self._service.events_after, job_id, cursor, limit=_READ_LIMIT
            )
        await asyncio.to_thread(self._attach_progress, batch)
        if len(batch) == _READ_LIMIT:
            return batch[-1]["seq"], batch
        # A short read has seen every event up to what the hub had read before it.
        return max(seen_by_hub, batch[-1]["seq"] if batch else cursor), batch


def coalesce(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge each run of consecutive progress events of one job into one message whose
    ``seq`` is the run's last and ``seqs`` lists all of it, so a client resuming from
    any message's ``seq`` misses nothing and sees nothing twice."""
    messages: list[dict[str, Any]] = []
    for event in events:
        previous = messages[-1] if messages else None
        if (
            previous is not None
            and event["type"] in PROGRESS_TYPES
            and previous["type"] == "progress"
            and previous["job_id"] == event["job_id"]
        ):
            previous["seqs"].append(event["seq"])
            previous["seq"] = event["seq"]
            for state, count in _counts(event).items():
                previous["data"][state] = previous["data"].get(state, 0) + count
            previous["created_at"] = event["created_at"]
            if "progress" in event:
                previous["progress"] = event["progress"]
            continue
        if event["type"] in PROGRESS_TYPES:
            event = {
                **event,
                "type": "progress",
                "seqs": [event["seq"]],
                "data": _counts(event),
            }
        messages.append(event)
    return messages


def _counts(event: dict[str, Any]) -> dict[str, int]:
    data = dict(event["data"] or {})
    if event["type"] == "items_added":
        return {"added": data.get("count", 0)}
    return data
