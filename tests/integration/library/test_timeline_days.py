"""The timeline's summary under concurrent writers on PostgreSQL: two transactions that
count the same two days in opposite orders would deadlock on the day rows; the
triggers' advisory lock (migration 0029) makes the second wait for the first instead,
and both counts land."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select, text

from photo_pipeline.db.schema import assets, timeline_days
from tests.support.catalogue_rows import add_assets
from tests.support.cli_processes import wait_until

A, B = "2015-01-02", "2015-01-03"  # the days of assets 1 and 2 (catalogue_rows)


def test_writers_counting_days_in_opposite_orders_queue_instead_of_deadlocking(
    backend, session_factory
):
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    add_assets(session_factory, [1, 2])  # the two day rows exist: an insert locks them
    engine = session_factory.kw["bind"]

    def insert(conn, asset_id: int, day: str) -> None:
        conn.execute(
            text(
                "INSERT INTO assets (id, content_hash, size, format, mime, width, height,"
                " orientation, taken_local, taken_source, created_at, updated_at) VALUES"
                " (:id, :hash, 1, 'jpeg', 'image/jpeg', 1, 1, 1, :local, 'exif_original',"
                " 0, 0)"
            ),
            {"id": asset_id, "hash": f"{asset_id:064x}", "local": f"{day}T12:00:00"},
        )

    second_pid: list[int] = []
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with engine.begin() as conn:
                second_pid.append(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
                insert(conn, 11, B)  # waits here for the first transaction
                insert(conn, 12, A)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    with engine.begin() as first:
        insert(first, 21, A)
        thread = threading.Thread(target=second)
        thread.start()

        def second_waits() -> bool:
            if not second_pid:
                return False
            with engine.connect() as probe:
                waiting = probe.execute(
                    text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"),
                    {"pid": second_pid[0]},
                ).scalar()
            return waiting == "Lock"

        wait_until(second_waits, "the second writer to wait for the first")
        insert(first, 22, B)  # a deadlock here, were the day rows the first lock
    thread.join()
    assert not errors, errors
    with session_factory() as session:
        counted = dict(session.execute(select(timeline_days.c.day, timeline_days.c.count)).all())
        shown = session.scalar(select(assets.c.id).where(assets.c.id == 12))
    assert counted == {A: 3, B: 3} and shown == 12
