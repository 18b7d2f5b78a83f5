"""enqueue_many: many jobs in one transaction, all or none, checked and refused as
enqueue is (idempotency keys, locks, prerequisites, arguments)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from photo_pipeline.db.schema import job_events, job_items, jobs
from photo_pipeline.jobs import InvalidArgument, JobBlocked, JobConflict, JobState
from tests.support.sql_statements import statements


def count(session_factory, table) -> int:
    with session_factory() as session:
        return session.scalar(select(func.count()).select_from(table))


def test_jobs_are_created_in_order_with_their_items_and_events(service, session_factory):
    scan = service.enqueue("scan")
    queued = service.enqueue_many(
        [
            {"job_type": "render", "items": ["a", "b"], "prerequisites": [scan["id"]]},
            {"job_type": "render", "lock": "folder-1", "priority": 3, "params": {"n": 1}},
            {"job_type": "verify", "idempotency_key": "k1", "max_attempts": 5},
        ]
    )
    assert [j["job_type"] for j in queued] == ["render", "render", "verify"]
    assert queued[0]["waiting_for"] == 1 and queued[1]["waiting_for"] == 0
    assert queued[1]["lock_key"] == "folder-1" and queued[1]["priority"] == 3
    assert queued[1]["params"] == {"n": 1} and queued[2]["max_attempts"] == 5
    assert service.progress(queued[0]["id"])["total"] == 2
    assert service.prerequisites([queued[0]["id"]]) == {queued[0]["id"]: [scan["id"]]}
    for job in queued:
        assert service.get(job["id"]) == job
        assert [e["type"] for e in service.events(job["id"])] == ["queued"]
    # Enqueue order holds within the batch and after it.
    later = service.enqueue("render")
    claimed = [service.claim(["render"], "w")["id"] for _ in range(2)]
    assert claimed == [queued[1]["id"], later["id"]]  # priority 3 first; the first waits


def test_idempotent_replays_and_repeats_return_the_original(service):
    original = service.enqueue("scan", idempotency_key="k1", params={"p": 1})
    results = service.submit_many(
        [
            {"job_type": "scan", "idempotency_key": "k1", "params": {"p": 1}},
            {"job_type": "scan", "idempotency_key": "k2"},
            {"job_type": "scan", "idempotency_key": "k2"},
        ]
    )
    assert [r.created for r in results] == [False, True, False]
    assert results[0].job["id"] == original["id"]
    assert results[1].job["id"] == results[2].job["id"]
    assert service.enqueue_many([{"job_type": "scan", "idempotency_key": "k2"}]) == [
        service.get(results[1].job["id"])
    ]


@pytest.mark.parametrize(
    ("batch", "error", "code"),
    [
        ([{"job_type": "scan", "idempotency_key": "k1", "params": {"p": 2}}],
         JobConflict, "idempotency_conflict"),
        ([{"job_type": "x", "idempotency_key": "k9"}, {"job_type": "y", "idempotency_key": "k9"}],
         JobConflict, "idempotency_conflict"),
        ([{"job_type": "x", "lock": "held"}], JobBlocked, "lock_held"),
        ([{"job_type": "x", "lock": "l2"}, {"job_type": "y", "lock": "l2"}],
         JobBlocked, "lock_held"),
        ([{"job_type": "x", "prerequisites": ["nope"]}], JobBlocked, "unknown_prerequisite"),
        ([{"job_type": "x", "prerequisites": ["FAILED"]}], JobBlocked, "prerequisite_failed"),
        ([{"job_type": "bad type!"}], InvalidArgument, "invalid_job_type"),
        ([{"job_type": "x", "items": ["a", "a"]}], InvalidArgument, "duplicate_item"),
        ([{"job_type": "x", "priority": "high"}], InvalidArgument, "invalid_priority"),
        ([{"job_type": "x", "colour": "red"}], InvalidArgument, "invalid_request"),
        (["x"], InvalidArgument, "invalid_request"),
    ],
)  # fmt: skip
def test_a_refused_job_refuses_the_whole_batch(service, session_factory, batch, error, code):
    service.enqueue("scan", idempotency_key="k1", params={"p": 1})
    holder = service.enqueue("x", lock="held")
    failed = service.enqueue("x", max_attempts=1)
    claimed = service.claim(["x"], "w")
    assert claimed["id"] == holder["id"]
    service.claim(["x"], "w")
    service.transition(failed["id"], JobState.FAILED, fencing_token=1, error=("e", "boom"))
    batch = [
        {**spec, "prerequisites": [failed["id"]]}
        if spec_has(spec, "prerequisites", ["FAILED"])
        else spec
        for spec in batch
    ]
    before = (count(session_factory, jobs), count(session_factory, job_events))
    with pytest.raises(error) as refused:
        service.enqueue_many([{"job_type": "fine", "items": ["i"]}, *batch])
    assert refused.value.code == code
    assert (count(session_factory, jobs), count(session_factory, job_events)) == before
    assert count(session_factory, job_items) == 0
    if code == "lock_held" and batch[0].get("lock") == "held":
        assert refused.value.extra["blocking_jobs"] == [holder["id"]]


def spec_has(spec: object, key: str, value: object) -> bool:
    return isinstance(spec, dict) and spec.get(key) == value


def test_statements_do_not_grow_with_the_batch(service, backend):
    def sent(size: int, offset: int) -> int:
        batch = [
            {"job_type": "t", "idempotency_key": f"k{offset + n}", "lock": f"l{offset + n}",
             "items": ["a", "b"]}
            for n in range(size)
        ]  # fmt: skip
        with statements(service) as seen:
            assert len(service.enqueue_many(batch)) == size
        return sum(seen.values())

    assert sent(500, 0) == sent(5, 1000)


def test_an_empty_batch_writes_nothing(service, session_factory):
    assert service.enqueue_many([]) == []
    assert count(session_factory, jobs) == 0
