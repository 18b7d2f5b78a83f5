"""The state machine as stored: legal moves, refusals, cancel, retry with backoff."""

from datetime import timedelta
from itertools import product

import pytest

from photo_pipeline.jobs import (
    ALLOWED_TRANSITIONS,
    InvalidArgument,
    InvalidTransition,
    JobBlocked,
    JobState,
    RetryPolicy,
)
from photo_pipeline.jobs.service import JobService

S = JobState


def job_in_state(service, state: JobState, *, items=()):
    """Drive a fresh job into ``state`` through the public API only."""
    job = service.enqueue("t", items=items, max_attempts=5)
    if state is S.QUEUED:
        return service.get(job["id"])
    if state is S.CANCELLED:
        return service.cancel(job["id"])
    claimed = service.claim(["t"], "w")
    token = claimed["fencing_token"]
    if state is S.RUNNING:
        return claimed
    if state is S.CANCELLING:
        return service.cancel(job["id"])
    if state is S.SUCCEEDED:
        return service.transition(job["id"], S.SUCCEEDED, fencing_token=token)
    if state is S.FAILED:
        return service.transition(job["id"], S.FAILED, fencing_token=token, retry=False)
    if state is S.RETRY_QUEUED:
        return service.transition(job["id"], S.FAILED, fencing_token=token)
    raise AssertionError(state)


@pytest.mark.parametrize(("source", "target"), list(product(S, S)))
def test_every_transition_is_allowed_or_refused_per_the_table(service, source, target):
    job = job_in_state(service, source)
    assert job["state"] == source
    allowed = target in ALLOWED_TRANSITIONS[source] and target is not S.RUNNING
    if not allowed:
        with pytest.raises(InvalidTransition):
            service.transition(job["id"], target)
        assert service.get(job["id"]) == job
        return
    result = service.transition(job["id"], target)
    # Unleased cancelling completes at once; failed with attempts left re-queues.
    expected = {
        (S.QUEUED, S.CANCELLING): S.CANCELLED,
        (S.RETRY_QUEUED, S.CANCELLING): S.CANCELLED,
        (S.RUNNING, S.FAILED): S.RETRY_QUEUED,
    }.get((source, target), target)
    assert result["state"] == expected
    assert result["version"] > job["version"]


@pytest.mark.parametrize("terminal", [S.SUCCEEDED, S.CANCELLED])
def test_terminal_states_have_no_way_out(service, terminal):
    job = job_in_state(service, terminal)
    for target in S:
        with pytest.raises(InvalidTransition):
            service.transition(job["id"], target)
    with pytest.raises(InvalidTransition):
        service.cancel(job["id"])
    assert service.claim(["t"], "w") is None
    assert service.get(job["id"])["state"] == terminal


def test_unknown_state_is_an_argument_error(service):
    job = service.enqueue("t")
    with pytest.raises(InvalidArgument) as err:
        service.transition(job["id"], "done")
    assert err.value.code == "invalid_state"


def test_succeeding_with_unfinished_items_is_refused(service):
    job = job_in_state(service, S.RUNNING, items=["a", "b"])
    token = job["fencing_token"]
    service.set_items(job["id"], [("a", "running")], fencing_token=token)
    service.set_items(job["id"], [("a", "succeeded")], fencing_token=token)
    with pytest.raises(InvalidTransition) as err:
        service.transition(job["id"], S.SUCCEEDED, fencing_token=token)
    assert err.value.code == "items_pending"
    service.set_items(job["id"], [("b", "running")], fencing_token=token)
    service.set_items(job["id"], [("b", "failed", ("corrupt", "bad"))], fencing_token=token)
    assert service.transition(job["id"], S.SUCCEEDED, fencing_token=token)["state"] == S.SUCCEEDED


def test_cancel_queued_job_cancels_its_items(service):
    job = service.enqueue("t", items=["a", "b"])
    cancelled = service.cancel(job["id"], reason="user changed their mind")
    assert cancelled["state"] == S.CANCELLED
    assert cancelled["error_message"] == "user changed their mind"
    assert service.progress(job["id"])["by_state"] == {"cancelled": 2}


def test_cancel_running_job_drains_through_cancelling(service):
    job = job_in_state(service, S.RUNNING, items=["a", "b", "c"])
    token = job["fencing_token"]
    service.set_items(job["id"], [("a", "running")], fencing_token=token)
    service.set_items(job["id"], [("a", "succeeded")], fencing_token=token)
    assert service.cancel(job["id"])["state"] == S.CANCELLING
    assert service.cancel(job["id"])["state"] == S.CANCELLING  # idempotent
    # The worker still holds the lease while it drains, and acknowledges.
    assert service.heartbeat(job["id"], "w", fencing_token=token)
    done = service.transition(job["id"], S.CANCELLED, fencing_token=token)
    assert done["state"] == S.CANCELLED and done["lease_owner"] is None
    assert service.progress(job["id"])["by_state"] == {"succeeded": 1, "cancelled": 2}


def test_failure_with_attempts_left_requeues_with_backoff(session_factory, clock):
    policy = RetryPolicy(base_seconds=10, max_seconds=100)
    service = JobService(session_factory, clock=clock, retry_policy=policy, recover_every=None)
    job = service.enqueue("t", items=["a", "b"], max_attempts=3)
    delays = []
    for attempt in (1, 2):
        claimed = service.claim(["t"], "w")
        assert claimed["attempts"] == attempt
        token = claimed["fencing_token"]
        service.set_items(job["id"], [("a", "running")], fencing_token=token)
        retried = service.transition(
            job["id"], S.FAILED, fencing_token=token, error=("handler_error", "boom")
        )
        assert retried["state"] == S.RETRY_QUEUED
        assert retried["error_code"] == "handler_error"
        # The interrupted item is queued again for the retry.
        assert service.progress(job["id"])["by_state"] == {"queued": 2}
        delay = retried["run_after"] - clock.now
        delays.append(delay)
        assert service.claim(["t"], "w") is None
        clock.advance(seconds=delay.total_seconds())
    assert timedelta(seconds=5) <= delays[0] <= timedelta(seconds=10)
    assert timedelta(seconds=10) <= delays[1] <= timedelta(seconds=20)
    last = service.claim(["t"], "w")
    failed = service.transition(job["id"], S.FAILED, fencing_token=last["fencing_token"])
    assert failed["state"] == S.FAILED
    assert failed["finished_at"] == clock.now


def test_manual_retry_grants_another_attempt(service):
    job = job_in_state(service, S.FAILED)
    retried = service.retry(job["id"])
    assert retried["state"] == S.RETRY_QUEUED
    assert retried["error_code"] is None and retried["finished_at"] is None
    assert service.claim(["t"], "w")["id"] == job["id"]


def test_retry_refused_when_lock_taken_meanwhile(service):
    """pg-boss #535: a state change hitting the lock index is refused cleanly."""
    failed = service.enqueue("organize", lock="library", max_attempts=1)
    claimed = service.claim(["organize"], "w")
    service.transition(failed["id"], S.FAILED, fencing_token=claimed["fencing_token"])
    holder = service.enqueue("organize", lock="library")
    with pytest.raises(JobBlocked) as err:
        service.retry(failed["id"])
    assert err.value.code == "lock_held"
    assert holder["id"] in err.value.detail
    assert service.get(failed["id"])["state"] == S.FAILED
