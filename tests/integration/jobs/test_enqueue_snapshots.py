"""What enqueue_many returns for a new job is the job as stored: PostgreSQL builds
it without reading the rows back, so every column must match what ``get`` reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone


def test_new_jobs_are_returned_exactly_as_stored(service):
    scan = service.enqueue("scan")
    later = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=2)))
    queued = service.enqueue_many(
        [
            {"job_type": "render", "items": ["a", "b"], "prerequisites": [scan["id"]]},
            {"job_type": "render", "lock": "folder-é", "priority": -4, "run_after": later,
             "params": {"name": "Zoë", "sizes": [1, 2.5], "nested": {"ok": True, "no": None}}},
            {"job_type": "verify", "idempotency_key": "k1", "max_attempts": 7},
        ]
    )  # fmt: skip
    for job in queued:
        stored = service.get(job["id"])
        assert job == stored
        assert list(job) == list(stored)  # the same columns, in the same order
        for name, value in job.items():
            assert type(value) is type(stored[name]), name
            if isinstance(value, datetime):
                assert value.tzinfo == UTC and str(value) == str(stored[name]), name
    assert queued[1]["run_after"] == later
