"""The event log read across jobs: numbers are handed out in commit order, never
reused, and PostgreSQL listeners are woken by commits."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import text

from photo_pipeline.db import write_session
from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.events import _PG_EVENT_ORDER_LOCK, EventFeed, write_event
from tests.support.cli_processes import wait_until


def test_feed_reads_every_job_in_order(service):
    a = service.enqueue("t.a")
    b = service.enqueue("t.b")
    service.cancel(a["id"])
    feed = EventFeed(service.session_factory)
    events = feed.after(0)
    assert [(e["job_id"], e["type"]) for e in events] == [
        (a["id"], "queued"),
        (b["id"], "queued"),
        (a["id"], "state:cancelled"),
    ]
    assert feed.after(events[0]["seq"]) == events[1:]
    assert feed.last_seq() == events[-1]["seq"]


def test_numbers_are_not_reused_after_the_newest_events_are_pruned(service, clock):
    old = service.enqueue("t.old")
    service.cancel(old["id"])
    feed = EventFeed(service.session_factory)
    last = feed.last_seq()
    clock.advance(days=30)
    assert service.prune(older_than=timedelta(days=7))["jobs"] == 1
    assert feed.after(0) == []
    new = service.enqueue("t.new")
    assert [e["seq"] > last for e in feed.after(0)] == [True]
    assert feed.after(last)[0]["job_id"] == new["id"]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_reader_never_passes_a_lower_number_still_to_commit(service):
    """Writer A takes a number and holds its transaction open; writer B, on another
    job, takes a higher one and commits without waiting for A. A reader then must not
    return B's event before A's commits: it waits for A and returns both, in order."""
    a = service.enqueue("t.a")
    b = service.enqueue("t.b")
    factory = service.session_factory
    feed = EventFeed(factory)
    before = feed.last_seq()
    read: list[list[dict]] = []

    def writer_b() -> None:
        with write_session(factory) as session:
            write_event(session, b["id"], "from_b", utc_now())

    def reader() -> None:
        read.append(feed.after(before))

    with write_session(factory) as session:
        write_event(session, a["id"], "from_a", utc_now())
        thread_b = threading.Thread(target=writer_b)
        thread_b.start()
        thread_b.join(30)
        assert not thread_b.is_alive()  # B committed while A is open: writers do not queue
        thread_r = threading.Thread(target=reader)
        thread_r.start()
        wait_until(lambda: _waiting_for_advisory_lock(factory), "the reader to wait for A")
        assert read == []
    thread_r.join(30)
    assert [[e["type"] for e in events] for events in read] == [["from_a", "from_b"]]
    seqs = [e["seq"] for e in read[0]]
    assert seqs == sorted(seqs)
    assert feed.last_seq() == seqs[-1]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_listeners_wake_on_commit(service):
    feed = EventFeed(service.session_factory)
    woken = threading.Event()
    stop = threading.Event()
    listener = threading.Thread(target=feed.listen, args=(woken.set, stop))
    listener.start()
    try:
        # LISTEN is in place once a NOTIFY from us reaches it; repeat until it does.
        wait_until(lambda: service.enqueue("t.ping") and woken.wait(0.2), "a wake-up")
    finally:
        stop.set()
        listener.join(30)
    assert not listener.is_alive()


def _waiting_for_advisory_lock(factory) -> bool:
    with factory() as session:
        waiting = text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND classid = :high AND objid = :low"
        )
        key = {"high": _PG_EVENT_ORDER_LOCK >> 32, "low": _PG_EVENT_ORDER_LOCK & 0xFFFFFFFF}
        return bool(session.scalar(waiting, key))
