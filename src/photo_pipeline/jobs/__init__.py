"""Durable jobs: the coordinator, its state machine and errors. Knows nothing of photos."""

from photo_pipeline.jobs.errors import (
    InvalidArgument,
    InvalidTransition,
    JobBlocked,
    JobConflict,
    JobError,
    JobNotFound,
    LockHeld,
)
from photo_pipeline.jobs.items import ItemUpdate
from photo_pipeline.jobs.outcomes import Outcome, outcome, problems
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.service import Enqueued, JobService, JobSnapshot, Joins, utc_now
from photo_pipeline.jobs.states import (
    ACTIVE_STATES,
    ALLOWED_TRANSITIONS,
    CLAIMABLE_STATES,
    ITEM_TRANSITIONS,
    TERMINAL_STATES,
    ItemState,
    JobState,
    can_transition,
)

__all__ = [
    "ACTIVE_STATES",
    "ALLOWED_TRANSITIONS",
    "CLAIMABLE_STATES",
    "ITEM_TRANSITIONS",
    "TERMINAL_STATES",
    "Enqueued",
    "InvalidArgument",
    "InvalidTransition",
    "ItemState",
    "ItemUpdate",
    "JobBlocked",
    "JobConflict",
    "JobError",
    "JobNotFound",
    "JobService",
    "JobSnapshot",
    "JobState",
    "Joins",
    "LockHeld",
    "Outcome",
    "RetryPolicy",
    "can_transition",
    "outcome",
    "problems",
    "utc_now",
]
