"""Schedules on both databases with real parts: many workers ticking one schedule
queue one job per tick; missed ticks are caught up once; a tick whose previous job
is still active is skipped and counted; a worker that died mid-tick is followed by
the next; and the database's clock, not a worker's, says when a tick is due."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select, update

from photo_pipeline.config import Settings
from photo_pipeline.db import write_session
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.db.schema import jobs, schedules
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.clock import CLOCK_OFFSET_ENV
from photo_pipeline.jobs.handlers import HandlerRegistry, registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.schedules.book import Schedules
from photo_pipeline.jobs.schedules.kinds import Kind, kinds
from photo_pipeline.jobs.schedules.ticks import Ticker, tick_key
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.library import open_library
from tests.support import schedule_kinds
from tests.support.cli_processes import environment, wait_until

TYPE = schedule_kinds.JOB_TYPE


def scheduled_jobs(session_factory) -> list[dict]:
    with session_factory() as session:
        rows = session.execute(
            select(jobs.c.id, jobs.c.idempotency_key, jobs.c.state)
            .where(jobs.c.job_type.in_([TYPE, schedule_kinds.LOCKED]))
            .order_by(jobs.c.seq)
        ).all()
    return [dict(row._mapping) for row in rows]


def finish(service: JobService, job_id: str) -> None:
    job = service.claim([TYPE], "test-worker")
    assert job is not None and job["id"] == job_id
    service.transition(job_id, JobState.SUCCEEDED, fencing_token=job["fencing_token"])


def tick_at_once(service: JobService, threads: int) -> list:
    """``threads`` workers, each with its own coordinator, tick at the same moment."""
    barrier = threading.Barrier(threads)
    results: list = []
    errors: list[BaseException] = []

    def run() -> None:
        ticker = Ticker(Schedules(service))
        barrier.wait()
        try:
            results.extend(ticker.tick_due())
        except BaseException as exc:  # pragma: no cover - shown below
            errors.append(exc)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    return results


def test_many_workers_queue_exactly_one_job_per_tick(service, clock, session_factory):
    book = Schedules(service)
    schedule = book.add(TYPE, cron="*/10 * * * *", time_zone="UTC")
    for tick in range(1, 4):
        clock.advance(minutes=10)
        done = tick_at_once(service, threads=8)
        queued = scheduled_jobs(session_factory)
        assert len(queued) == tick, queued
        assert sum(1 for t in done if t.created) == 1  # one worker made it
        newest = queued[-1]
        assert newest["idempotency_key"] == tick_key(schedule["id"], clock.now)
        assert book.get(schedule["id"])["last_job"]["id"] == newest["id"]
        finish(service, newest["id"])


def test_missed_ticks_are_caught_up_once(service, clock, session_factory):
    book = Schedules(service)
    schedule = book.add(TYPE, cron="0 3 * * *", time_zone="Europe/Paris")
    clock.advance(days=10)  # everything was down for ten nights
    ticker = Ticker(book)
    first = ticker.tick_due()
    assert ticker.tick_due() == []
    queued = scheduled_jobs(session_factory)
    assert len(queued) == 1 and len(first) == 1
    # The latest of the missed ticks: 03:00 in Paris on the last night.
    latest = datetime(2026, 1, 11, 2, 0, tzinfo=UTC)
    assert first[0].tick == latest
    shown = book.get(schedule["id"])
    assert shown["last_tick"] == latest
    assert shown["next_run"] == latest + timedelta(days=1)
    assert shown["skipped_ticks"] == 0


def test_a_tick_is_skipped_while_the_previous_job_is_active(service, clock, session_factory):
    book = Schedules(service)
    schedule = book.add(TYPE, every=timedelta(hours=1))
    ticker = Ticker(book)
    clock.advance(hours=1)
    [first] = ticker.tick_due()
    clock.advance(hours=1)
    [skipped] = tick_at_once(service, threads=4)  # one worker records the skip
    assert skipped.job_id is None and first.job_id in str(skipped.skipped)
    shown = book.get(schedule["id"])
    assert shown["skipped_ticks"] == 1
    assert first.job_id in shown["last_skip_reason"] and "queued" in shown["last_skip_reason"]
    assert len(scheduled_jobs(session_factory)) == 1
    finish(service, first.job_id)
    clock.advance(hours=1)
    [third] = ticker.tick_due()
    assert third.created and len(scheduled_jobs(session_factory)) == 2
    assert book.get(schedule["id"])["last_job"]["id"] == third.job_id


def test_a_lock_another_job_holds_skips_the_tick_naming_it(service, clock, session_factory):
    holder = service.enqueue("test.other", lock="test.lock")
    book = Schedules(service)
    schedule = book.add(schedule_kinds.LOCKED, every=timedelta(minutes=5))
    clock.advance(minutes=5)
    [tick] = Ticker(book).tick_due()
    assert tick.job_id is None and "lock_held" in str(tick.skipped)
    shown = book.get(schedule["id"])
    assert shown["skipped_ticks"] == 1 and shown["next_run"] == clock.now + timedelta(minutes=5)
    assert scheduled_jobs(session_factory) == []
    assert holder["id"]


def test_a_worker_that_died_mid_tick_is_followed_by_the_next(service, clock, session_factory):
    calls = []

    def start_then_die(service_, params, key):
        calls.append(key)
        if len(calls) == 1:  # the database went away after the tick was decided
            raise DatabaseUnavailable("database_unavailable", "gone")
        return service_.submit(TYPE, params=params, idempotency_key=key)

    kinds.register(Kind("test.dies_mid_tick", start_then_die))
    book = Schedules(service)
    book.add("test.dies_mid_tick", every=timedelta(minutes=1))
    clock.advance(minutes=1)
    ticker = Ticker(book)
    with pytest.raises(DatabaseUnavailable):
        ticker.tick_due()
    clock.advance(seconds=59)  # not the next tick yet: the pending one is finished
    [done] = ticker.tick_due()
    assert done.created and calls[0] == calls[1]
    assert len(scheduled_jobs(session_factory)) == 1


def test_a_paused_schedule_does_not_tick_and_resumes_without_catching_up(
    service, clock, session_factory
):
    book = Schedules(service)
    schedule = book.add(TYPE, every=timedelta(hours=1))
    book.pause(schedule["id"])
    assert book.pause(schedule["id"])["paused"]  # idempotent
    clock.advance(hours=5)
    ticker = Ticker(book)
    assert ticker.tick_due() == []
    resumed = book.resume(schedule["id"])
    assert resumed["next_run"] == datetime(2026, 1, 1, 18, 0, tzinfo=UTC)
    assert ticker.tick_due() == [] and scheduled_jobs(session_factory) == []
    clock.advance(hours=1)
    assert len(ticker.tick_due()) == 1


def test_a_removed_schedule_stops(service, clock, session_factory):
    book = Schedules(service)
    schedule = book.add(TYPE, every=timedelta(minutes=1))
    book.remove(schedule["id"])
    clock.advance(minutes=3)
    assert Ticker(book).tick_due() == []
    with pytest.raises(Exception) as gone:
        book.remove(schedule["id"])
    assert getattr(gone.value, "code", None) == "schedule_not_found"


def test_the_worker_runtime_ticks_and_runs_the_job(service, clock, session_factory):
    book = Schedules(service)
    schedule = book.add(TYPE, every=timedelta(minutes=30))
    clock.advance(minutes=30)
    worker = Worker(
        service,
        WorkerRegistry(session_factory, clock=clock),
        registry,
        WorkerConfig(job_types=(TYPE,), burst=True, poll_seconds=0.05),
    )
    worker.run()  # burst: ticks on its first turn, runs what it queued, then exits
    [job] = scheduled_jobs(session_factory)
    assert job["state"] == JobState.SUCCEEDED
    assert book.get(schedule["id"])["last_job"]["state"] == JobState.SUCCEEDED


LONG = "test.long_running"


def test_a_worker_running_one_job_at_a_time_ticks_while_it_runs(service, clock, session_factory):
    """``--jobs 1``: a long job must not hold the schedules back until it ends. The
    long job makes the tick due and then waits for the tick's job to be queued."""
    book = Schedules(service)
    book.add(TYPE, every=timedelta(minutes=30))
    seen: list[bool] = []

    def long_running(ctx) -> None:
        clock.advance(minutes=30)
        wait_until(lambda: bool(scheduled_jobs(session_factory)), "the tick's job", timeout=30)
        seen.append(True)

    handlers = HandlerRegistry()
    handlers.register(LONG, long_running)
    handlers.register(TYPE, schedule_kinds.scheduled)
    service.enqueue(LONG)
    worker = Worker(
        service,
        WorkerRegistry(session_factory, clock=clock),
        handlers,
        WorkerConfig(job_types=(LONG, TYPE), jobs=1, burst=True, poll_seconds=0.05),
    )
    worker.run()
    assert seen == [True], "the schedule did not tick while the job ran"
    [job] = scheduled_jobs(session_factory)
    assert job["state"] == JobState.SUCCEEDED


# ── real worker processes on the database's clock ────────────────────────────────


def burst_workers(db_url, tmp_path, count: int, offset_seconds: int) -> None:
    """``count`` real `photo-pipeline worker --burst` processes at once, their own
    clocks shifted by ``offset_seconds``; each ticks on its first turn, then exits."""
    # The library made first: workers starting at once on a new one race to write the
    # home's marker, and one may find the database's id before the marker is there.
    settings = Settings.from_env({"PHOTO_PIPELINE_HOME": str(tmp_path / "home")})
    open_library(replace(settings, database_url=db_url)).close()
    env = {**environment(db_url, tmp_path / "home"), CLOCK_OFFSET_ENV: str(offset_seconds)}
    command = [sys.executable, "-m", "photo_pipeline", "worker", "--burst", "--types", TYPE]
    command += ["--import", "tests.support.schedule_kinds", "--poll-seconds", "0.05"]
    processes = [
        subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) for _ in range(count)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err


def test_worker_processes_tick_once_by_the_database_clock(db_url, session_factory, tmp_path):
    service = JobService(session_factory)  # the database's clock
    book = Schedules(service)
    schedule = book.add(TYPE, every=timedelta(hours=1))
    # Workers whose own clocks are two hours fast: by theirs the tick is long due,
    # by the database's it is an hour away. None queues it.
    burst_workers(db_url, tmp_path, count=3, offset_seconds=7200)
    assert scheduled_jobs(session_factory) == []
    # Made 61 minutes ago by the database's clock: the tick is due. Workers whose
    # clocks are three hours slow queue it, once among them.
    made = schedule["created_at"] - timedelta(minutes=61)
    with write_session(session_factory) as session:
        session.execute(
            update(schedules)
            .where(schedules.c.id == schedule["id"])
            .values(created_at=made, next_due=made + timedelta(hours=1))
        )
    burst_workers(db_url, tmp_path, count=4, offset_seconds=-3 * 3600)
    [job] = scheduled_jobs(session_factory)
    assert job["state"] == JobState.SUCCEEDED
    shown = book.get(schedule["id"])
    assert shown["last_job"]["id"] == job["id"]
    assert job["idempotency_key"] == tick_key(schedule["id"], shown["last_tick"])
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(schedules)) == 1


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # Spring forward (Paris, 2026-03-29): 02:30 is skipped; it ticks at 03:30 CEST.
        (datetime(2026, 3, 28, 12, tzinfo=UTC), datetime(2026, 3, 29, 1, 30, tzinfo=UTC)),
        # Fall back (2026-10-25): 02:30 happens twice; it ticks at the first only.
        (datetime(2026, 10, 24, 12, tzinfo=UTC), datetime(2026, 10, 25, 0, 30, tzinfo=UTC)),
    ],
)
def test_a_nightly_schedule_ticks_once_on_a_dst_night(
    service, clock, session_factory, start, expected
):
    clock.now = start
    book = Schedules(service)
    book.add(TYPE, cron="30 2 * * *", time_zone="Europe/Paris")
    ticker = Ticker(book)
    ticked = []
    for _ in range(24 * 4):  # a worker looking every quarter of an hour for a day
        clock.advance(minutes=15)
        for tick in ticker.tick_due():
            ticked.append(tick.tick)
            finish(service, tick.job_id)
    assert ticked == [expected]
    assert len(scheduled_jobs(session_factory)) == 1
