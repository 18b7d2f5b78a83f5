"""A state change writes all of its events (the job's own and those of the dependents
it releases) with one insert, and finishing a job with no dependents sends no
statement for them."""

from __future__ import annotations

from photo_pipeline.jobs import JobService, JobState
from tests.support.sql_statements import statements


def test_a_success_without_dependents_is_one_update_and_one_insert(session_factory, backend):
    service = JobService(session_factory, recover_every=None)
    service.enqueue("t")
    job = service.claim(["t"], "w")
    with statements(service) as seen:
        service.transition(job["id"], JobState.SUCCEEDED, fencing_token=job["fencing_token"])
    if backend == "sqlite":
        assert seen["UPDATE"] == 1 and seen["INSERT"] == 1
    assert [e["type"] for e in service.events(job["id"])][-1] == "state:succeeded"


def test_a_success_writes_its_event_and_its_dependents_in_one_insert(session_factory, backend):
    service = JobService(session_factory, recover_every=None)
    first = service.enqueue("t")
    after = [service.enqueue("u", prerequisites=[first["id"]]) for _ in range(3)]
    job = service.claim(["t"], "w")
    with statements(service) as seen:
        service.transition(job["id"], JobState.SUCCEEDED, fencing_token=job["fencing_token"])
    if backend == "sqlite":
        assert seen["INSERT"] == 1
    else:
        assert sum(seen.values()) == 1
    feed = [e for j in [first, *after] for e in service.events(j["id"])]
    met = sorted((e["seq"], e["job_id"]) for e in feed if e["type"] == "prerequisites_met")
    done = [e["seq"] for e in feed if e["type"] == "state:succeeded"]
    assert [job_id for _, job_id in met] == sorted(j["id"] for j in after)
    assert done[0] < met[0][0]  # the prerequisite's event first


def test_a_failure_retried_writes_both_events_in_one_insert(session_factory):
    service = JobService(session_factory, recover_every=None)
    service.enqueue("t", max_attempts=2)
    job = service.claim(["t"], "w")
    with statements(service) as seen:
        retried = service.transition(
            job["id"], JobState.FAILED, fencing_token=job["fencing_token"], error=("x", "boom")
        )
    assert retried["state"] == JobState.RETRY_QUEUED
    assert seen["INSERT"] == 1
    kinds = [e["type"] for e in service.events(job["id"])]
    assert kinds[-2:] == ["state:failed", "state:retry_queued"]
