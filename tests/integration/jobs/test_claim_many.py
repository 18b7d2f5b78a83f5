"""``claim_many``: up to ``limit`` jobs leased in one statement, each exactly as a
single claim leases one (its own lease, fencing token and event), in the single
claim's order, never one job to two claimers."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from photo_pipeline.db import open_database
from photo_pipeline.jobs import InvalidArgument, JobService, JobState, LockHeld
from tests.support import concurrency_bodies
from tests.support.sql_statements import statements

from .test_concurrency import run_processes


def test_claims_up_to_the_limit_in_the_single_claims_order(service, clock):
    start = clock.now
    late = service.enqueue("t", run_after=start + timedelta(seconds=2))
    first = service.enqueue("t")
    second = service.enqueue("t")
    urgent = service.enqueue("t", priority=10, run_after=start + timedelta(seconds=1))
    low = service.enqueue("t", priority=-1)
    clock.advance(seconds=3)
    batch = service.claim_many(["t"], "w", limit=3)
    rest = service.claim_many(["t"], "w", limit=10)
    assert [j["id"] for j in batch] == [urgent["id"], first["id"], second["id"]]
    assert [j["id"] for j in rest] == [late["id"], low["id"]]
    assert service.claim_many(["t"], "w", limit=10) == []


def test_across_types_the_order_is_the_single_claims(service, clock):
    start = clock.now
    late = service.enqueue("a", run_after=start - timedelta(seconds=1))
    early = service.enqueue("b", run_after=start - timedelta(seconds=5))
    urgent = service.enqueue("a", priority=5)
    later_b = service.enqueue("b", run_after=start - timedelta(seconds=5))
    service.enqueue("c")  # not asked for
    batch = service.claim_many(["a", "b"], "w", limit=10)
    assert [j["id"] for j in batch] == [urgent["id"], early["id"], later_b["id"], late["id"]]


def test_each_job_gets_its_own_lease_token_and_event(service, clock):
    jobs = [service.enqueue("t") for _ in range(3)]
    batch = service.claim_many(["t"], "w1", limit=5, lease_seconds=30)
    assert sorted(j["id"] for j in batch) == sorted(j["id"] for j in jobs)
    for job in batch:
        assert job["state"] == JobState.RUNNING and job["lease_owner"] == "w1"
        assert job["lease_expires_at"] == clock.now + timedelta(seconds=30)
        assert job["fencing_token"] == 1 and job["attempts"] == 1
        events = service.events(job["id"])
        assert [e["type"] for e in events] == ["queued", "claimed"]
        assert events[-1]["message"] == "w1"
        assert events[-1]["data"] == {"fencing_token": 1, "attempt": 1}
    # Each lease is its own: one finishes, one goes stale, one is renewed.
    one, two, three = batch
    service.transition(one["id"], JobState.SUCCEEDED, fencing_token=one["fencing_token"])
    assert service.heartbeat(three["id"], "w1", fencing_token=three["fencing_token"])
    assert service.get(two["id"])["state"] == JobState.RUNNING
    assert service.get(one["id"])["state"] == JobState.SUCCEEDED


def test_a_claim_of_many_is_one_statement(session_factory, backend):
    db_service = JobService(session_factory, recover_every=None)
    for _ in range(4):
        db_service.enqueue("t")
    with statements(db_service) as seen:
        batch = db_service.claim_many(["t"], "w", limit=4)
    assert len(batch) == 4
    if backend == "postgresql":
        assert sum(seen.values()) == 1
    else:  # the update, one insert of the four events (and the write lock)
        assert seen["UPDATE"] == 1 and seen["INSERT"] == 1


def test_prerequisites_hold_back_their_dependents(service):
    first = service.enqueue("t")
    after = service.enqueue("t", prerequisites=[first["id"]])
    batch = service.claim_many(["t"], "w", limit=5)
    assert [j["id"] for j in batch] == [first["id"]]
    service.transition(first["id"], JobState.SUCCEEDED, fencing_token=batch[0]["fencing_token"])
    assert [j["id"] for j in service.claim_many(["t"], "w", limit=5)] == [after["id"]]


def test_locked_jobs_are_claimed_and_keep_their_locks(service):
    a = service.enqueue("t", lock="folder:a")
    b = service.enqueue("t", lock="folder:b")
    batch = service.claim_many(["t"], "w", limit=5)
    assert {j["id"] for j in batch} == {a["id"], b["id"]}
    with pytest.raises(LockHeld):
        service.enqueue("t", lock="folder:a")
    for job in batch:
        service.transition(job["id"], JobState.SUCCEEDED, fencing_token=job["fencing_token"])
    assert service.enqueue("t", lock="folder:a")["state"] == JobState.QUEUED


@pytest.mark.parametrize("limit", [0, -1, 1001, 2.0, "3", True, None])
def test_a_bad_limit_is_refused(service, limit):
    job = service.enqueue("t")
    with pytest.raises(InvalidArgument) as err:
        service.claim_many(["t"], "w", limit=limit)
    assert err.value.code == "invalid_claim_limit"
    assert service.get(job["id"])["state"] == JobState.QUEUED


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_two_threads_claiming_at_once_never_share_a_job(db_url):
    factory = open_database(db_url)
    service = JobService(factory, recover_every=None)
    try:
        service.enqueue_many([{"job_type": "t"}] * 300)
        barrier = threading.Barrier(2)

        def claimer(worker_id: str) -> list[str]:
            barrier.wait(timeout=60)
            claimed: list[str] = []
            while batch := service.claim_many(["t"], worker_id, limit=5):
                claimed.extend(j["id"] for j in batch)
            return claimed

        with ThreadPoolExecutor(2) as pool:
            got = list(pool.map(claimer, ["w1", "w2"]))
        every = got[0] + got[1]
        assert len(every) == 300 and len(set(every)) == 300
        owners = {j["id"]: j["lease_owner"] for j in service.list_jobs(limit=300)}
        assert all(owners[i] == "w1" for i in got[0]) and all(owners[i] == "w2" for i in got[1])
    finally:
        factory.kw["bind"].dispose()


@pytest.mark.slow
def test_four_processes_claiming_many_take_every_job_exactly_once(service, db_url):
    service.enqueue_many([{"job_type": "noop"}] * 1000)
    claimed = run_processes(
        concurrency_bodies.claim_many_until_empty, db_url, [(f"worker-{n}",) for n in range(4)]
    )
    every = [job_id for batch in claimed for job_id in batch]
    assert len(every) == 1000
    assert len(set(every)) == 1000
    assert {j["state"] for j in service.list_jobs(limit=1000)} == {JobState.SUCCEEDED}
    claims = [e for j in service.list_jobs(limit=1000) for e in service.events(j["id"])]
    assert sum(1 for e in claims if e["type"] == "claimed") == 1000


def test_a_worker_with_free_slots_claims_them_in_one_statement(session_factory):
    from sqlalchemy import event

    from photo_pipeline.jobs.handlers import HandlerRegistry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    live = JobService(session_factory, recover_every=None)
    claims: list[str] = []
    claims_when_all_ran: list[int] = []
    # The three run at once (or the barrier breaks); once all three are in, before any
    # is let go, count the claim statements sent so far.
    together = threading.Barrier(
        3, action=lambda: claims_when_all_ran.append(len(claims)), timeout=60
    )
    handlers = HandlerRegistry()
    handlers.register("t", lambda _ctx: together.wait())
    jobs = live.enqueue_many([{"job_type": "t"}] * 3)

    def seen(_conn, _cursor, sql: str, *_args) -> None:
        leases = "lease_expires_at" in sql and "attempts" in sql
        if leases and ("SKIP LOCKED" in sql or sql.startswith("UPDATE jobs SET state")):
            claims.append(sql)

    engine = session_factory.kw["bind"]
    event.listen(engine, "before_cursor_execute", seen)
    try:
        config = WorkerConfig(job_types=("t",), jobs=3, burst=True, poll_seconds=0.05)
        Worker(live, WorkerRegistry(session_factory), handlers, config).run()
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert {live.get(j["id"])["state"] for j in jobs} == {JobState.SUCCEEDED}
    assert claims_when_all_ran == [1]
    claimed = [e for j in jobs for e in live.events(j["id"]) if e["type"] == "claimed"]
    assert len({e["created_at"] for e in claimed}) == 1  # one statement's time
