"""Claim order, leases, heartbeats and the claim query plan."""

from datetime import timedelta

import pytest
from sqlalchemy import text

from photo_pipeline.jobs import InvalidArgument, JobState
from photo_pipeline.jobs.service import claim_candidate


def test_claim_order_is_priority_then_run_after_then_fifo(service, clock):
    start = clock.now
    late = service.enqueue("t", run_after=start + timedelta(seconds=2))
    first = service.enqueue("t")
    second = service.enqueue("t")
    urgent = service.enqueue("t", priority=10, run_after=start + timedelta(seconds=1))
    low = service.enqueue("t", priority=-1)
    clock.advance(seconds=3)
    order = [service.claim(["t"], "w")["id"] for _ in range(5)]
    assert order == [urgent["id"], first["id"], second["id"], late["id"], low["id"]]
    assert service.claim(["t"], "w") is None


def test_claim_only_takes_requested_types(service):
    scan = service.enqueue("scan")
    assert service.claim(["render"], "w") is None
    assert service.claim(["render", "scan"], "w")["id"] == scan["id"]


def test_claim_leases_and_bumps_fencing_token(service, clock):
    job = service.enqueue("t")
    claimed = service.claim(["t"], "w1", lease_seconds=30)
    assert claimed["state"] == JobState.RUNNING
    assert claimed["lease_owner"] == "w1"
    assert claimed["lease_expires_at"] == clock.now + timedelta(seconds=30)
    assert claimed["fencing_token"] == job["fencing_token"] + 1
    assert claimed["attempts"] == 1
    assert claimed["started_at"] == clock.now
    assert service.claim(["t"], "w2") is None


def test_heartbeat_extends_only_the_owners_lease(service, clock):
    service.enqueue("t")
    claimed = service.claim(["t"], "w1", lease_seconds=10)
    clock.advance(seconds=8)
    assert service.heartbeat(claimed["id"], "w1", lease_seconds=10)
    assert service.get(claimed["id"])["lease_expires_at"] == clock.now + timedelta(seconds=10)
    assert not service.heartbeat(claimed["id"], "w2", lease_seconds=10)
    assert not service.heartbeat(claimed["id"], "w1", fencing_token=claimed["fencing_token"] + 1)


@pytest.mark.parametrize("lease", [0, -5, float("inf"), float("nan"), "10", True, 10**9])
def test_bad_lease_is_refused(service, lease):
    job = service.enqueue("t")
    with pytest.raises(InvalidArgument) as err:
        service.claim(["t"], "w", lease_seconds=lease)
    assert err.value.code == "invalid_lease"
    assert str(lease)[:3] in err.value.detail
    assert service.get(job["id"])["state"] == JobState.QUEUED


def test_claim_refuses_empty_types_and_worker(service):
    with pytest.raises(InvalidArgument) as err:
        service.claim([], "w")
    assert err.value.code == "invalid_job_type"
    with pytest.raises(InvalidArgument) as err:
        service.claim(["t"], "")
    assert err.value.code == "invalid_worker_id"


def test_claim_walks_the_claim_index(service, session_factory, backend, clock):
    """The claim subquery is served by the partial claim index, with no sort step."""
    for _ in range(50):
        service.enqueue("t")
    query = claim_candidate(["t"], clock.now)
    sql = str(query.compile(session_factory.kw["bind"], compile_kwargs={"literal_binds": True}))
    with session_factory() as session:
        if backend == "sqlite":
            plan = " ".join(r[-1] for r in session.execute(text("EXPLAIN QUERY PLAN " + sql)))
        else:
            session.execute(text("SET LOCAL enable_seqscan = off"))
            session.execute(text("ANALYZE jobs"))
            plan = " ".join(r[0] for r in session.execute(text("EXPLAIN " + sql)))
    assert "ix_jobs_claim_order" in plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan
