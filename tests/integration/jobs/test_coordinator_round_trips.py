"""Claim and finish each cost one statement on PostgreSQL (a few, in one transaction,
on SQLite) with the same guarantees: the claim's event, the finish's fence, item and
dependents, and a loud refusal of a stale token. A pooled connection the server
ended is replaced without an error."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from photo_pipeline.db import open_database
from photo_pipeline.jobs import InvalidTransition, JobConflict, JobService, JobState
from tests.support.databases import PG_URL
from tests.support.sql_statements import statements


@pytest.fixture
def db_service(session_factory) -> JobService:
    """The coordinator as production runs it: the database's clock."""
    return JobService(session_factory, recover_every=None)


def test_claim_is_one_statement_with_its_event(db_service, backend):
    job = db_service.enqueue("t")
    with statements(db_service) as seen:
        claimed = db_service.claim(["t"], "w1")
    assert claimed["id"] == job["id"] and claimed["fencing_token"] == 1
    if backend == "postgresql":
        assert sum(seen.values()) == 1
    events = db_service.events(job["id"])
    assert [e["type"] for e in events] == ["queued", "claimed"]
    assert events[-1]["message"] == "w1"
    assert events[-1]["data"] == {"fencing_token": 1, "attempt": 1}


def test_finish_is_one_statement_and_releases_dependents(db_service, backend):
    first = db_service.enqueue("t")
    second = db_service.enqueue("t")
    after = db_service.enqueue("u", prerequisites=[first["id"], second["id"]])
    claimed = db_service.claim(["t"], "w1")
    with statements(db_service) as seen:
        done = db_service.transition(
            claimed["id"], JobState.SUCCEEDED, fencing_token=claimed["fencing_token"]
        )
    assert done["state"] == JobState.SUCCEEDED and done["lease_owner"] is None
    assert done["finished_at"] is not None
    if backend == "postgresql":
        assert sum(seen.values()) == 1
    assert db_service.get(after["id"])["waiting_for"] == 1
    assert db_service.claim(["u"], "w2") is None
    other = db_service.claim(["t"], "w1")
    db_service.transition(other["id"], JobState.SUCCEEDED, fencing_token=other["fencing_token"])
    assert db_service.get(after["id"])["waiting_for"] == 0
    assert [e["type"] for e in db_service.events(after["id"])] == ["queued", "prerequisites_met"]
    assert db_service.claim(["u"], "w2")["id"] == after["id"]
    assert [e["type"] for e in db_service.events(first["id"])][-1] == "state:succeeded"


def test_finish_refuses_a_stale_token_loudly(db_service, session_factory):
    job = db_service.enqueue("t")
    old = db_service.claim(["t"], "w1", lease_seconds=1)
    with session_factory.begin() as session:  # the lease runs out
        session.execute(text("UPDATE jobs SET lease_expires_at = 0"))
    assert db_service.recover_stale() == [job["id"]]
    with session_factory.begin() as session:  # no backoff: runnable now
        session.execute(text("UPDATE jobs SET run_after = 0"))
    new = db_service.claim(["t"], "w2")
    with pytest.raises(JobConflict) as refused:
        db_service.transition(job["id"], JobState.SUCCEEDED, fencing_token=old["fencing_token"])
    assert refused.value.code == "stale_fencing_token"
    with pytest.raises(JobConflict) as refused:
        db_service.transition(
            job["id"], JobState.SUCCEEDED, worker_id="w1", fencing_token=new["fencing_token"]
        )
    assert refused.value.code == "not_lease_owner"
    assert db_service.get(job["id"])["state"] == JobState.RUNNING
    done = db_service.transition(
        job["id"], JobState.SUCCEEDED, worker_id="w2", fencing_token=new["fencing_token"]
    )
    assert done["state"] == JobState.SUCCEEDED


def test_finish_refuses_unfinished_items(db_service):
    job = db_service.enqueue("t", items=["a", "b"])
    claimed = db_service.claim(["t"], "w1")
    token = claimed["fencing_token"]
    db_service.set_items(job["id"], [("a", "running"), ("b", "running")], fencing_token=token)
    db_service.set_items(job["id"], [("a", "succeeded")], fencing_token=token)
    with pytest.raises(InvalidTransition) as refused:
        db_service.transition(job["id"], JobState.SUCCEEDED, fencing_token=token)
    assert refused.value.code == "items_pending"
    assert db_service.get(job["id"])["state"] == JobState.RUNNING
    db_service.set_items(job["id"], [("b", "succeeded")], fencing_token=token)
    done = db_service.transition(job["id"], "succeeded", fencing_token=token)
    assert done["state"] == "succeeded"


def test_finish_of_a_cancelling_job_succeeds_as_before(db_service):
    job = db_service.enqueue("t")
    claimed = db_service.claim(["t"], "w1")
    db_service.cancel(job["id"])
    done = db_service.transition(
        job["id"], JobState.SUCCEEDED, fencing_token=claimed["fencing_token"]
    )
    assert done["state"] == JobState.SUCCEEDED


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_pooled_connection_the_server_ended_is_replaced(db_url):
    factory = open_database(db_url)
    service = JobService(factory, recover_every=None)
    try:
        service.enqueue("t")
        service.enqueue("t")
        with factory() as session:  # the connection the pool will hand out next
            pid = session.scalar(text("SELECT pg_backend_pid()"))
        admin = create_engine(PG_URL)
        with admin.begin() as conn:
            # Returns once the backend has exited (or after 10 s, false).
            assert conn.scalar(text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": pid})
        admin.dispose()
        assert service.claim(["t"], "w1") is not None  # no DatabaseUnavailable
        with factory() as session:
            assert session.scalar(text("SELECT pg_backend_pid()")) != pid
    finally:
        factory.kw["bind"].dispose()
