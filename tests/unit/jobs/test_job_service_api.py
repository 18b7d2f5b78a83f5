"""JobService stays the seed's facade (spec/job_service_seed.txt): every method the
seed declared is still there and still takes the seed's arguments, however the
coordinator is split into modules behind it; the names other packages import from
``photo_pipeline.jobs.service`` and ``photo_pipeline.jobs.handlers`` still resolve."""

import inspect

import pytest

from photo_pipeline.jobs import errors, handlers, service
from photo_pipeline.jobs.service import JobService

# The seed's calls, as its callers wrote them (positional, then by keyword).
SEED_CALLS = {
    "enqueue": (("scan",), {"lock": "library", "idempotency_key": "k", "items": ["a"]}),
    "claim": ((["scan"], "worker-1"), {"lease_seconds": 60}),
    "heartbeat": (("job", "worker-1"), {"lease_seconds": 60}),
    "transition": (
        ("job", "failed"),
        {"worker_id": "worker-1", "fencing_token": 1, "error": ("code", "message")},
    ),
    "cancel": (("job",), {}),
    "set_item": (("job", "a", "failed"), {"error": ("code", "message"), "fencing_token": 1}),
    "progress": (("job",), {}),
    "recover_stale": ((), {"now": None}),
    "blockers": (("library",), {}),
    "get": (("job",), {}),
    "events": (("job",), {}),
    "events_after": (("job", 0), {}),
}


@pytest.mark.parametrize("name", sorted(SEED_CALLS))
def test_the_seed_methods_take_the_seed_arguments(name: str) -> None:
    args, kwargs = SEED_CALLS[name]
    signature = inspect.signature(getattr(JobService, name))
    signature.bind(object(), *args, **kwargs)  # raises TypeError if it no longer fits


def test_the_constructor_takes_a_session_factory_alone() -> None:
    inspect.signature(JobService).bind(object())


def test_names_other_modules_import_still_resolve() -> None:
    for name in ("Clock", "Enqueued", "JobService", "JobSnapshot", "claim_candidate", "utc_now"):
        assert hasattr(service, name), name
    # ItemError moved to jobs.errors; handlers written against jobs.handlers still work.
    assert handlers.ItemError is errors.ItemError
