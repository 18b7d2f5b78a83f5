"""Enqueue: validation, idempotency, the one-active-job lock, prerequisites."""

from datetime import UTC, datetime, timedelta

import pytest

from photo_pipeline.jobs import (
    InvalidArgument,
    JobBlocked,
    JobConflict,
    JobNotFound,
    JobState,
)


def finish(service, job):
    """Claim ``job`` (the only runnable one of its type) and let it succeed."""
    claimed = service.claim([job["job_type"]], "finisher")
    assert claimed["id"] == job["id"]
    return service.transition(job["id"], "succeeded", fencing_token=claimed["fencing_token"])


def test_enqueue_stores_the_request(service, clock):
    job = service.enqueue(
        "scan", items=["b", "a"], params={"root": "/photos", "n": [1, 2]}, priority=5
    )
    assert job["state"] == JobState.QUEUED
    assert job["params"] == {"root": "/photos", "n": [1, 2]}
    assert job["priority"] == 5
    assert job["run_after"] == clock.now
    assert job["created_at"].tzinfo is not None
    assert [i["item_key"] for i in service.items(job["id"])] == ["b", "a"]
    assert service.progress(job["id"]) == {"total": 2, "done": 0, "by_state": {"queued": 2}}
    assert service.get(job["id"]) == job


def test_same_idempotency_key_and_request_returns_the_original(service):
    first = service.enqueue("scan", idempotency_key="k", items=["x"], params={"a": 1})
    again = service.enqueue("scan", idempotency_key="k", items=["x"], params={"a": 1})
    assert again["id"] == first["id"]
    assert len(service.list_jobs()) == 1


@pytest.mark.parametrize(
    "different",
    [
        {"job_type": "render"},
        {"lock": "library"},
        {"items": ["y"]},
        {"params": {"a": 2}},
        {"priority": 1},
        {"max_attempts": 9},
    ],
)
def test_idempotency_key_reused_for_another_request_is_refused(service, different):
    request = {"job_type": "scan", "items": ["x"], "params": {"a": 1}}
    service.enqueue(idempotency_key="k", **request)
    with pytest.raises(JobConflict) as err:
        service.enqueue(idempotency_key="k", **{**request, **different})
    assert err.value.code == "idempotency_conflict"
    assert len(service.list_jobs()) == 1


def test_lock_allows_one_active_job(service):
    holder = service.enqueue("organize", lock="library")
    with pytest.raises(JobBlocked) as err:
        service.enqueue("organize", lock="library")
    assert err.value.code == "lock_held"
    assert holder["id"] in err.value.detail
    assert service.blockers("library") == [
        {"id": holder["id"], "state": "queued", "job_type": "organize"}
    ]
    # Other locks and unlocked jobs are unaffected.
    service.enqueue("organize", lock="other")
    service.enqueue("organize")
    finish(service, holder)
    assert service.blockers("library") == []
    assert service.enqueue("organize", lock="library")["state"] == JobState.QUEUED


def test_cancelled_lock_holder_releases_the_lock(service):
    holder = service.enqueue("organize", lock="library")
    service.cancel(holder["id"])
    assert service.enqueue("organize", lock="library")["state"] == JobState.QUEUED


def test_delayed_job_waits_for_run_after(service, clock):
    later = clock.now + timedelta(minutes=5)
    job = service.enqueue("scan", run_after=later)
    assert service.claim(["scan"], "w") is None
    clock.advance(minutes=5)
    assert service.claim(["scan"], "w")["id"] == job["id"]


def test_prerequisites_hold_a_job_until_they_succeed(service):
    scan = service.enqueue("scan")
    other = service.enqueue("scan")
    render = service.enqueue("render", prerequisites=[scan["id"], other["id"]])
    assert render["waiting_for"] == 2
    assert service.claim(["render"], "w") is None
    finish(service, scan)
    assert service.claim(["render"], "w") is None
    finish(service, other)
    assert service.claim(["render"], "w")["id"] == render["id"]
    assert "prerequisites_met" in [e["type"] for e in service.events(render["id"])]


def test_prerequisite_already_succeeded_does_not_hold(service):
    scan = service.enqueue("scan")
    finish(service, scan)
    render = service.enqueue("render", prerequisites=[scan["id"]])
    assert render["waiting_for"] == 0
    assert service.claim(["render"], "w")["id"] == render["id"]


def test_failed_prerequisite_cancels_dependents_transitively(service):
    scan = service.enqueue("scan", max_attempts=1)
    render = service.enqueue("render", prerequisites=[scan["id"]])
    similar = service.enqueue("similar", prerequisites=[render["id"]])
    claimed = service.claim(["scan"], "w")
    failed = service.transition(
        scan["id"], "failed", fencing_token=claimed["fencing_token"], error=("boom", "it broke")
    )
    assert failed["state"] == JobState.FAILED
    for dependent in (render, similar):
        job = service.get(dependent["id"])
        assert job["state"] == JobState.CANCELLED
        assert job["error_code"] == "prerequisite_failed"


def test_retried_prerequisite_does_not_cancel_dependents(service):
    scan = service.enqueue("scan", max_attempts=2)
    render = service.enqueue("render", prerequisites=[scan["id"]])
    claimed = service.claim(["scan"], "w")
    again = service.transition(scan["id"], "failed", fencing_token=claimed["fencing_token"])
    assert again["state"] == JobState.RETRY_QUEUED
    assert service.get(render["id"])["state"] == JobState.QUEUED


def test_enqueue_refuses_bad_prerequisites(service):
    with pytest.raises(JobBlocked) as err:
        service.enqueue("render", prerequisites=["no-such-job"])
    assert err.value.code == "unknown_prerequisite"
    scan = service.enqueue("scan")
    service.cancel(scan["id"])
    with pytest.raises(JobBlocked) as err:
        service.enqueue("render", prerequisites=[scan["id"]])
    assert err.value.code == "prerequisite_failed"
    assert [j["id"] for j in service.list_jobs()] == [scan["id"]]


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"job_type": ""}, "invalid_job_type"),
        ({"job_type": "x" * 101}, "invalid_job_type"),
        ({"job_type": "has space"}, "invalid_job_type"),
        ({"job_type": None}, "invalid_job_type"),
        ({"params": {"when": datetime(2026, 1, 1)}}, "invalid_params"),
        ({"params": {"nan": float("nan")}}, "invalid_params"),
        ({"params": ["not", "an", "object"]}, "invalid_params"),
        ({"lock": ""}, "invalid_lock"),
        ({"idempotency_key": "k" * 201}, "invalid_idempotency_key"),
        ({"items": ["a", "a"]}, "duplicate_item"),
        ({"items": [""]}, "invalid_item_key"),
        ({"items": "abc"}, "invalid_items"),
        ({"priority": 2**40}, "invalid_priority"),
        ({"max_attempts": 0}, "invalid_max_attempts"),
        ({"run_after": datetime(2026, 1, 1)}, "invalid_run_after"),
    ],
)
def test_bad_input_is_refused_with_a_code_and_nothing_written(service, kwargs, code):
    request = {"job_type": "scan", **kwargs}
    with pytest.raises(InvalidArgument) as err:
        service.enqueue(request.pop("job_type"), **request)
    assert err.value.code == code
    assert service.list_jobs() == []


def test_unknown_job_is_a_not_found_error(service):
    assert service.get("nope") is None
    for call in (
        lambda: service.transition("nope", "succeeded"),
        lambda: service.cancel("nope"),
        lambda: service.progress("nope"),
        lambda: service.events_after("nope"),
        lambda: service.set_item("nope", "a", "running"),
        lambda: service.heartbeat("nope", "w"),
    ):
        with pytest.raises(JobNotFound) as err:
            call()
        assert err.value.code == "job_not_found"


def test_huge_item_list_is_stored_in_one_transaction(service):
    keys = [f"photo-{n:05d}.jpg" for n in range(5000)]
    job = service.enqueue("scan", items=keys)
    assert service.progress(job["id"])["total"] == 5000
    assert [e["type"] for e in service.events(job["id"])] == ["queued"]


def test_times_are_aware_utc(service):
    job = service.enqueue("scan", run_after=datetime(2030, 5, 1, 12, tzinfo=UTC))
    assert job["run_after"] == datetime(2030, 5, 1, 12, tzinfo=UTC)
    assert job["run_after"].utcoffset() == timedelta(0)


def test_failure_cascades_through_a_diamond_of_prerequisites(service):
    scan = service.enqueue("scan", max_attempts=1)
    render = service.enqueue("render", prerequisites=[scan["id"]])
    similar = service.enqueue("similar", prerequisites=[scan["id"], render["id"]])
    claimed = service.claim(["scan"], "w")
    service.transition(scan["id"], "failed", fencing_token=claimed["fencing_token"])
    for dependent in (render, similar):
        assert service.get(dependent["id"])["state"] == JobState.CANCELLED
    cancelled_events = [e for e in service.events(similar["id"]) if e["type"] == "state:cancelled"]
    assert len(cancelled_events) == 1


def test_join_equivalent_joins_the_same_request_waiting_on_the_same_prerequisites(service):
    scan, other = service.enqueue("scan"), service.enqueue("scan")
    first = service.submit("render", params={"s": 1}, prerequisites=[scan["id"]])
    assert first.created
    again = service.submit(
        "render", params={"s": 1}, prerequisites=[scan["id"]], join_equivalent=True
    )
    assert (again.job["id"], again.created) == (first.job["id"], False)
    # Another request, or the same after other prerequisites, is a job of its own.
    for request in (
        {"params": {"s": 2}, "prerequisites": [scan["id"]]},
        {"params": {"s": 1}, "prerequisites": [scan["id"], other["id"]]},
        {"params": {"s": 1}, "prerequisites": [other["id"]]},
    ):
        assert service.submit("render", join_equivalent=True, **request).created
    # Without the flag, a second one as before.
    assert service.submit("render", params={"s": 1}, prerequisites=[scan["id"]]).created


def test_join_equivalent_joins_no_job_that_is_over(service):
    scan = service.enqueue("scan")
    first = service.submit("render", params={"s": 1}, prerequisites=[scan["id"]]).job
    service.cancel(first["id"])
    again = service.submit(
        "render", params={"s": 1}, prerequisites=[scan["id"]], join_equivalent=True
    )
    assert again.created and again.job["id"] != first["id"]


def test_join_equivalent_needs_prerequisites(service):
    with pytest.raises(InvalidArgument) as refused:
        service.submit("render", params={"s": 1}, join_equivalent=True)
    assert refused.value.code == "invalid_request"
