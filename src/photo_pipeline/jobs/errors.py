"""Errors of the job coordinator, each with a stable ``code``, and ``ItemError``,
which a handler raises to fail one item."""

from __future__ import annotations

from photo_pipeline.errors import PhotoPipelineError


class JobError(PhotoPipelineError):
    """Root of the coordinator's errors."""

    code = "job_error"
    status = 409


class InvalidArgument(JobError):
    """A caller passed a value the coordinator cannot accept (names field and value)."""

    code = "invalid_argument"
    status = 422


class JobNotFound(JobError):
    """Unknown job or item (``job_not_found``, ``item_not_found``)."""

    code = "job_not_found"
    status = 404


class JobBlocked(JobError):
    """Refused by a prerequisite or the one-mutating-job lock (``lock_held``,
    ``prerequisite_failed``, ``unknown_prerequisite``)."""

    code = "lock_held"


class LockHeld(JobBlocked):
    """Another job holds a lock the request needs (``lock_held``); ``blocking_jobs``
    (in ``extra``) names them when known. A ``JobBlocked``, so callers catching that
    still see it."""

    code = "lock_held"

    def __init__(self, detail: str = "", **extra: object) -> None:
        super().__init__("lock_held", detail, **extra)

    @property
    def blocking_jobs(self) -> list[str]:
        blocking = self.extra.get("blocking_jobs", [])
        return [str(job_id) for job_id in blocking] if isinstance(blocking, list) else []


class InvalidTransition(JobError):
    """The state machine does not allow the requested change."""

    code = "invalid_transition"


class JobConflict(JobError):
    """Another owner or request won: a stale fencing token, a lost lease, or an
    idempotency key reused for a different request."""

    code = "conflict"


class ItemError(Exception):
    """An item's own input is bad (a corrupt photo, say): fails that item, not the
    job. Any other exception from a handler fails the job, which is retried.

    ``transient``: the failure is of the moment (memory ran short while other items
    ran), not of the item: ``JobContext.map`` runs the item once more, alone, after
    the others, and fails it only if that fails too."""

    def __init__(self, code: str, message: str = "", *, transient: bool = False) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.transient = transient
