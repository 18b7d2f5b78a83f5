"""Leases that expire: recovery, fencing of the old owner, and the races known to
have hit other queues."""

import threading

import pytest
from psycopg import pq
from sqlalchemy import text

from photo_pipeline.db import read_session
from photo_pipeline.jobs import JobConflict, JobState
from photo_pipeline.jobs.context import JobContext, LeaseLost
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.service import JobService

S = JobState


def running_job(service, *, items=(), max_attempts=3, lease=30, worker="w1"):
    job = service.enqueue("t", items=items, max_attempts=max_attempts)
    claimed = service.claim(["t"], worker, lease_seconds=lease)
    assert claimed["id"] == job["id"]
    return claimed


def test_expired_lease_requeues_job_and_interrupted_items(service, clock):
    job = running_job(service, items=["done", "busy", "todo", "bad"])
    token = job["fencing_token"]
    service.set_items(
        job["id"],
        [("done", "running"), ("busy", "running"), ("bad", "running")],
        fencing_token=token,
    )
    service.set_items(
        job["id"], [("done", "succeeded"), ("bad", "failed", ("corrupt", "x"))], fencing_token=token
    )
    clock.advance(seconds=29)
    assert service.recover_stale() == []
    clock.advance(seconds=2)
    assert service.recover_stale() == [job["id"]]
    recovered = service.get(job["id"])
    assert recovered["state"] == S.RETRY_QUEUED
    assert recovered["error_code"] == "lease_expired"
    assert recovered["lease_owner"] is None
    states = {i["item_key"]: i["state"] for i in service.items(job["id"])}
    assert states == {"done": "succeeded", "busy": "queued", "todo": "queued", "bad": "failed"}
    # The path went through legal states only.
    types = [e["type"] for e in service.events(job["id"])]
    assert types[-2:] == ["state:failed", "state:retry_queued"]


def test_abandoned_cancellation_is_finished(service, clock):
    job = running_job(service, items=["a", "b"])
    service.set_item(job["id"], "a", "running", fencing_token=job["fencing_token"])
    service.cancel(job["id"])
    clock.advance(seconds=31)
    assert service.recover_stale() == [job["id"]]
    assert service.get(job["id"])["state"] == S.CANCELLED
    assert service.progress(job["id"])["by_state"] == {"cancelled": 2}


@pytest.mark.parametrize("crash", ["lease_expired", "worker_died"])
def test_crashes_spend_interruptions_not_attempts(service, clock, crash):
    """A worker that dies or stops heartbeating is not the handler's fault: the
    attempt is refunded and the separate, larger interruption budget is spent."""
    job = service.enqueue("t", max_attempts=3)
    budget = RetryPolicy().max_interruptions
    assert budget > 3
    for n in range(1, budget + 1):
        clock.advance(seconds=3600)  # past any backoff
        claimed = service.claim(["t"], f"w{n}", lease_seconds=10)
        assert claimed["id"] == job["id"]
        assert (claimed["attempts"], claimed["interruptions"]) == (1, n - 1)
        if crash == "lease_expired":
            clock.advance(seconds=11)
            service.recover_stale()
        else:
            service.recover_stale(dead_workers=[f"w{n}"])
    final = service.get(job["id"])
    assert final["state"] == S.FAILED
    assert (final["attempts"], final["interruptions"]) == (0, budget)
    assert final["error_code"] == crash
    clock.advance(seconds=3600)
    assert service.claim(["t"], "w99") is None
    # A manual retry brings a fresh budget.
    assert service.retry(job["id"])["interruptions"] == 0


def test_handler_failures_still_spend_attempts_after_crashes(service, clock):
    job = running_job(service, max_attempts=2, lease=10)
    clock.advance(seconds=11)
    service.recover_stale()
    clock.advance(seconds=3600)
    claimed = service.claim(["t"], "w2")
    failed = service.transition(
        job["id"], S.FAILED, fencing_token=claimed["fencing_token"], error=("handler_error", "x")
    )
    assert (failed["state"], failed["attempts"], failed["interruptions"]) == (
        S.RETRY_QUEUED,
        1,
        1,
    )
    clock.advance(seconds=3600)
    claimed = service.claim(["t"], "w3")
    failed = service.transition(
        job["id"], S.FAILED, fencing_token=claimed["fencing_token"], error=("handler_error", "x")
    )
    assert (failed["state"], failed["attempts"]) == (S.FAILED, 2)


def test_reclaimed_job_fences_out_the_old_owner(service, clock):
    old = running_job(service, items=["a"], worker="old", lease=10)
    clock.advance(seconds=11)
    service.recover_stale()
    clock.advance(seconds=3600)
    new = service.claim(["t"], "new")
    assert new["fencing_token"] > old["fencing_token"]
    stale = old["fencing_token"]
    with pytest.raises(JobConflict) as err:
        service.transition(old["id"], S.SUCCEEDED, fencing_token=stale)
    assert err.value.code == "stale_fencing_token"
    with pytest.raises(JobConflict):
        service.set_item(old["id"], "a", "running", fencing_token=stale)
    with pytest.raises(JobConflict):
        service.add_items(old["id"], ["b"], fencing_token=stale)
    assert not service.heartbeat(old["id"], "old", fencing_token=stale)
    with pytest.raises(JobConflict) as err:
        service.transition(old["id"], S.SUCCEEDED, worker_id="old")
    assert err.value.code == "not_lease_owner"
    assert service.get(old["id"])["lease_owner"] == "new"
    assert service.items(old["id"])[0]["state"] == "queued"


def test_the_old_owner_cannot_confirm_a_lease_recovered_or_taken_over(service, clock):
    """Before a step on the user's files, a worker asks the database, not its last
    heartbeat: stopped past its lease, it finds the job gone to another."""
    old = running_job(service, items=["a"], worker="old", lease=10)
    ctx = JobContext(service, old, "old", shutdown=threading.Event())
    ctx.confirm_lease()  # held
    clock.advance(seconds=11)
    service.recover_stale()
    with pytest.raises(LeaseLost):
        ctx.confirm_lease()
    assert ctx.should_stop
    clock.advance(seconds=3600)
    new = service.claim(["t"], "new")
    JobContext(service, new, "new", shutdown=threading.Event()).confirm_lease()
    stale = JobContext(service, old, "new", shutdown=threading.Event())  # the old token
    with pytest.raises(LeaseLost):
        stale.confirm_lease()


def test_recovered_but_unclaimed_job_refuses_old_owner_writes(service, clock):
    old = running_job(service, items=["a"], lease=10)
    clock.advance(seconds=11)
    service.recover_stale()
    with pytest.raises(JobConflict) as err:
        service.set_item(old["id"], "a", "running", fencing_token=old["fencing_token"])
    assert err.value.code == "lease_lost"


def test_recovery_never_overwrites_a_job_finished_meanwhile(service, clock):
    """River #1302: the sweep must re-check the row, not update by id."""
    job = running_job(service, lease=10)
    clock.advance(seconds=11)
    # The worker finishes after its lease ran out but before any sweep.
    done = service.transition(job["id"], S.SUCCEEDED, fencing_token=job["fencing_token"])
    assert done["state"] == S.SUCCEEDED
    assert service.recover_stale() == []
    assert service.get(job["id"])["state"] == S.SUCCEEDED


def test_late_heartbeat_never_leaves_a_job_finished_and_failed(service, clock):
    """Solid Queue #589: whichever of the sweep and the late worker acts first wins,
    and the other is refused."""
    job = running_job(service, lease=10)
    clock.advance(seconds=11)
    assert service.recover_stale() == [job["id"]]
    assert not service.heartbeat(job["id"], "w1", fencing_token=job["fencing_token"])
    with pytest.raises(JobConflict):
        service.transition(job["id"], S.SUCCEEDED, fencing_token=job["fencing_token"])
    assert service.get(job["id"])["state"] == S.RETRY_QUEUED
    # The other order: a late heartbeat revives the lease, and the sweep leaves it be.
    clock.advance(seconds=3600)
    again = service.claim(["t"], "w2", lease_seconds=10)
    clock.advance(seconds=11)
    assert service.heartbeat(
        job["id"], "w2", lease_seconds=10, fencing_token=again["fencing_token"]
    )
    assert service.recover_stale() == []
    done = service.transition(job["id"], S.SUCCEEDED, fencing_token=again["fencing_token"])
    assert done["state"] == S.SUCCEEDED


def test_claim_recovers_stale_jobs_automatically(session_factory, clock):
    from datetime import timedelta

    service = JobService(session_factory, clock=clock, recover_every=timedelta(seconds=5))
    crashed = service.enqueue("t")
    service.claim(["t"], "crashed-worker", lease_seconds=10)
    clock.advance(seconds=11)
    assert service.claim(["t"], "w2") is None  # recovered, now waiting out its backoff
    assert service.get(crashed["id"])["state"] == S.RETRY_QUEUED
    clock.advance(seconds=3600)
    assert service.claim(["t"], "w2")["id"] == crashed["id"]


def test_lease_expiry_boundary_is_exact(service, clock):
    """Integer microseconds on both backends: expired strictly after the instant."""
    from datetime import timedelta

    job = running_job(service, lease=10)
    expires = service.get(job["id"])["lease_expires_at"]
    assert service.recover_stale(now=expires) == []
    assert service.recover_stale(now=expires + timedelta(microseconds=1)) == [job["id"]]


def test_renew_lease_reports_a_cancel_request(service):
    job = running_job(service)
    assert service.renew_lease(job["id"], "w1", fencing_token=job["fencing_token"]) == S.RUNNING
    service.cancel(job["id"])
    assert service.renew_lease(job["id"], "w1") == S.CANCELLING
    assert service.renew_lease(job["id"], "other") is None


def test_set_items_reports_the_job_state(service):
    job = running_job(service, items=["a"])
    token = job["fencing_token"]
    assert service.set_items(job["id"], [("a", "running")], fencing_token=token) == S.RUNNING
    service.cancel(job["id"])
    assert service.set_items(job["id"], [("a", "succeeded")], fencing_token=token) == S.CANCELLING


def test_release_hands_the_job_back_without_spending_an_attempt(service, clock):
    job = running_job(service, items=["done", "busy"], max_attempts=1)
    token = job["fencing_token"]
    service.set_items(job["id"], [("done", "running"), ("busy", "running")], fencing_token=token)
    service.set_items(job["id"], [("done", "succeeded")], fencing_token=token)
    released = service.release(job["id"], fencing_token=token)
    assert released["state"] == S.RETRY_QUEUED
    assert released["attempts"] == 0 and released["run_after"] == clock.now
    assert released["error_code"] == "released"
    assert service.progress(job["id"])["by_state"] == {"succeeded": 1, "queued": 1}
    again = service.claim(["t"], "w2")
    assert again["id"] == job["id"] and again["attempts"] == 1
    with pytest.raises(JobConflict):
        service.release(job["id"], fencing_token=token)


def test_release_of_a_cancelling_job_cancels_it(service):
    job = running_job(service, items=["a"])
    service.cancel(job["id"])
    assert service.release(job["id"], fencing_token=job["fencing_token"])["state"] == S.CANCELLED


def test_jobs_of_a_dead_worker_are_recovered_before_their_lease_ends(service):
    dead = running_job(service, worker="dead-worker", lease=600)
    service.enqueue("t")
    alive = service.claim(["t"], "live-worker", lease_seconds=600)
    assert service.recover_stale(dead_workers=["dead-worker"]) == [dead["id"]]
    recovered = service.get(dead["id"])
    assert recovered["state"] == S.RETRY_QUEUED and recovered["error_code"] == "worker_died"
    assert service.get(alive["id"])["state"] == S.RUNNING


def test_jobs_of_a_worker_marked_dead_by_someone_else_are_recovered(
    service, session_factory, clock
):
    """Whoever finds a worker dead, every later sweep voids its leases (the finder
    and the recoverer need not be the same process)."""
    import socket
    import subprocess

    from sqlalchemy import insert

    from photo_pipeline.db import write_session
    from photo_pipeline.db.schema import workers
    from photo_pipeline.jobs.workers import WorkerRegistry

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer exists
    with write_session(session_factory) as session:
        session.execute(
            insert(workers).values(
                id="gone-worker",
                host=socket.gethostname(),
                pid=gone.pid,
                job_types=["t"],
                state="running",
                started_at=clock.now,
                heartbeat_at=clock.now,
            )
        )
    job = running_job(service, worker="gone-worker", lease=600)
    assert WorkerRegistry(session_factory, clock=clock).find_dead_on_this_host() == ["gone-worker"]
    assert service.recover_stale() == [job["id"]]
    assert service.get(job["id"])["error_code"] == "worker_died"


def _frozen_mid_pipeline(pgconn) -> None:
    pgconn.enter_pipeline_mode()
    pgconn.send_query_params(b"SELECT 1", None)  # and no Sync: stopped inside executemany


def _frozen_mid_copy(pgconn) -> None:
    pgconn.send_query(b"COPY frozen_scratch FROM STDIN")
    pgconn.flush()
    while pgconn.is_busy():  # the server's answer: send the data now
        pgconn.consume_input()
    assert pgconn.get_result().status == pq.ExecStatus.COPY_IN
    pgconn.put_copy_data(b"1\n")  # and no end of data: stopped inside a COPY


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("stopped", [_frozen_mid_pipeline, _frozen_mid_copy])
def test_a_client_frozen_inside_a_transaction_cannot_keep_its_job(service, clock, stopped):
    """A worker process stopped (SIGSTOP, a paused VM) while its transaction holds the
    job's row: recovery skips locked rows, and PostgreSQL's idle-in-transaction timeout
    does not end a session stopped inside a pipeline or a COPY (it is *active*,
    waiting to read). The job would never be recovered; its holder is ended instead."""
    from photo_pipeline.jobs.recovery import STUCK_CLIENT_SECONDS
    from tests.support.cli_processes import wait_until

    job = running_job(service, lease=10, worker="frozen-worker")
    pooled = service.session_factory.kw["bind"].raw_connection()  # the schema's search_path
    frozen = pooled.driver_connection
    holder = frozen.info.backend_pid
    try:
        frozen.execute("CREATE TEMP TABLE frozen_scratch (v int)")
        frozen.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (job["id"],))
        stopped(frozen.pgconn)
        frozen.pgconn.flush()
        clock.advance(seconds=11)
        # Recovery skips the row while it is locked; once the holder has been silent
        # for STUCK_CLIENT_SECONDS, it is ended and the job comes back.
        wait_until(
            lambda: service.recover_stale() == [job["id"]],
            "recovery to end the frozen holder and take the job back",
            timeout=30 * STUCK_CLIENT_SECONDS,
        )
        assert service.get(job["id"])["state"] == S.RETRY_QUEUED
        with read_session(service.session_factory) as session:
            alive = session.scalar(
                text(f"SELECT count(*) FROM pg_stat_activity WHERE pid = {holder}")
            )
        assert alive == 0, "the frozen holder's session was not ended"
    finally:
        pooled.invalidate()
