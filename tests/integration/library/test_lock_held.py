"""A refused lock is a ``LockHeld`` naming its holders: still a ``JobBlocked`` with code
``lock_held`` for callers that catch that, and what the coordinator's ``submit_or_join``
(which the pipeline's rejoin paths use) catches."""

from __future__ import annotations

import pytest

from photo_pipeline.jobs import JobBlocked, JobService, LockHeld
from photo_pipeline.pipeline import dedupe, organize, verify
from photo_pipeline.pipeline.library import locks


def test_a_held_lock_is_refused_as_lock_held_naming_the_holder(session_factory):
    service = JobService(session_factory)
    holder = service.enqueue("t", lock="folder:1")
    with pytest.raises(LockHeld) as refused:
        service.enqueue("t", lock="folder:1")
    assert isinstance(refused.value, JobBlocked)
    assert refused.value.code == "lock_held"
    assert refused.value.blocking_jobs == [holder["id"]]


def test_submit_or_join_joins_the_holder_of_the_same_request_or_what_joins_accepts(
    session_factory,
):
    service = JobService(session_factory)
    first = service.submit_or_join("t", lock="folder:1", params={"a": 1})
    again = service.submit_or_join("t", lock="folder:1", params={"a": 1})
    assert first.created and (again.job["id"], again.created) == (first.job["id"], False)
    for other in ({"job_type": "t", "params": {"a": 2}}, {"job_type": "u", "params": {"a": 1}}):
        with pytest.raises(LockHeld) as refused:
            service.submit_or_join(other["job_type"], lock="folder:1", params=other["params"])
        assert refused.value.blocking_jobs == [first.job["id"]]
    seen = []
    joined = service.submit_or_join(
        "u", lock="folder:1", params={"a": 2}, joins=lambda job: seen.append(job["id"]) or True
    )
    assert (joined.job["id"], joined.created, seen) == (first.job["id"], False, [first.job["id"]])
    with pytest.raises(LockHeld):
        service.submit_or_join("t", lock="folder:1", params={"a": 1}, joins=lambda job: False)
    service.cancel(first.job["id"])  # the lock is free: a new job
    fresh = service.submit_or_join("t", lock="folder:1", params={"a": 1})
    assert fresh.created and fresh.job["id"] != first.job["id"]


def test_the_library_lock_refuses_with_library_busy_naming_the_job(session_factory):
    service = JobService(session_factory)
    holder = service.enqueue("organize", lock=organize.LIBRARY_LOCK)
    with pytest.raises(organize.LibraryBusy) as refused:
        verify.start_verify(service)
    assert isinstance(refused.value, LockHeld)
    assert refused.value.blocking_jobs == [holder["id"]]
    assert [b["id"] for b in refused.value.blockers] == [holder["id"]]


def test_enqueue_or_join_rejoins_only_the_same_request(session_factory):
    service = JobService(session_factory)
    first = locks.enqueue_or_join(service, "organize", {"destination": "/a"})
    again = locks.enqueue_or_join(service, "organize", {"destination": "/a"})
    assert first.created and not again.created
    assert again.job["id"] == first.job["id"]  # the running job of this very request
    with pytest.raises(locks.LibraryBusy) as refused:
        locks.enqueue_or_join(service, "organize", {"destination": "/b"})
    assert refused.value.blocking_jobs == [first.job["id"]]
    with pytest.raises(locks.LibraryBusy):  # without joining, the same request is refused
        locks.enqueue_library_job(service, "organize", {"destination": "/a"})


def test_a_verify_asked_again_rejoins_the_active_one_and_nothing_else(session_factory):
    service = JobService(session_factory)
    first = verify.start_verify(service)
    again = verify.start_verify(service, rejoin=True)
    assert (again.job["id"], again.created) == (first.job["id"], False)
    service.cancel(first.job["id"])
    holder = service.enqueue("organize", lock=organize.LIBRARY_LOCK)
    with pytest.raises(organize.LibraryBusy) as refused:
        verify.start_verify(service, rejoin=True)
    assert refused.value.blocking_jobs == [holder["id"]]


def test_a_purge_asked_again_rejoins_the_active_one_with_its_cutoff(session_factory, tmp_path):
    service = JobService(session_factory)
    first = dedupe.start_purge(service, tmp_path / "home", 30)
    again = dedupe.start_purge(service, tmp_path / "home", 30, rejoin=True)
    assert (again.job["id"], again.created) == (first.job["id"], False)
    assert again.job["params"]["before"] == first.job["params"]["before"]
    with pytest.raises(organize.LibraryBusy):  # another request is refused
        dedupe.start_purge(service, tmp_path / "home", 7, rejoin=True)
    with pytest.raises(organize.LibraryBusy):  # and so is this one, without joining
        dedupe.start_purge(service, tmp_path / "home", 30)
