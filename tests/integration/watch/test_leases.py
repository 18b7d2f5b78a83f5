"""The watcher lease of a source: one holder at a time, renewed by heartbeat, taken
over when it expires on the database's clock or at once when its holder's process on
this host is gone, given back on a clean stop, and gone with its source."""

from __future__ import annotations

import subprocess
import sys

from sqlalchemy import update

from photo_pipeline.db import write_session
from photo_pipeline.db.schema import source_watchers
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.ingest.sources import remove_source
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.watch.leases import Leases, Status, active_watchers
from tests.support.cli_processes import wait_until

WATCHING = Status("inotify")


def _source(session_factory, tmp_path) -> int:
    folder = tmp_path / "phone"
    folder.mkdir()
    return int(Catalog(session_factory).add_source(folder)["id"])


def test_one_holder_at_a_time_until_it_gives_the_lease_back(session_factory, tmp_path):
    source = _source(session_factory, tmp_path)
    first, second = Leases(session_factory, "a:1:x", 30), Leases(session_factory, "b:2:y", 30)
    assert first.acquire(source, WATCHING)
    assert not second.acquire(source, WATCHING)
    assert first.renew(source, Status("poll", "a reason", pending=3, pending_age=2.5))
    assert not second.acquire(source, WATCHING)
    [row] = active_watchers(session_factory)
    assert (row["holder"], row["mode"], row["reason"], row["pending"]) == (
        "a:1:x",
        "poll",
        "a reason",
        3,
    )
    assert row["lag_seconds"] >= 2.5
    first.release(source)
    assert active_watchers(session_factory) == []
    assert second.acquire(source, WATCHING)
    assert not first.renew(source, WATCHING)  # lost: its watcher stops


def test_an_expired_lease_is_taken_over_by_the_database_clock(session_factory, tmp_path):
    source = _source(session_factory, tmp_path)
    first, second = Leases(session_factory, "a:1:x", 0.2), Leases(session_factory, "b:2:y", 30)
    assert first.acquire(source, WATCHING)
    # No renewal: the lease runs out on the database's clock, whatever this one says.
    wait_until(lambda: second.acquire(source, WATCHING), "the takeover", 30)
    assert not first.renew(source, WATCHING)
    assert [w["holder"] for w in active_watchers(session_factory)] == ["b:2:y"]


def test_a_dead_holder_on_this_host_is_taken_over_at_once(session_factory, tmp_path):
    source = _source(session_factory, tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its pid names no process now
    holder = Leases(session_factory, "here:dead:x", 3600)
    assert holder.acquire(source, WATCHING)
    with write_session(session_factory) as session:
        session.execute(update(source_watchers).values(pid=gone.pid))
    alive = Leases(session_factory, "here:alive:y", 3600)
    other = Leases(session_factory, "here:other:z", 3600)
    assert alive.acquire(source, WATCHING)  # its hour-long lease notwithstanding
    assert not other.acquire(source, WATCHING)  # the new holder's process is alive


def test_a_forgotten_source_takes_its_lease_with_it(session_factory, tmp_path):
    source = _source(session_factory, tmp_path)
    leases = Leases(session_factory, "a:1:x", 30)
    assert leases.acquire(source, WATCHING)
    remove_source(JobService(session_factory), source)
    assert active_watchers(session_factory) == []
    assert not leases.renew(source, WATCHING)
