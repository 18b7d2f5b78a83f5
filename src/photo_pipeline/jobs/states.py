"""The job and item state machines.

::

    queued ─▶ running ─▶ succeeded
      │          │ ╲──▶ failed ─▶ retry_queued ─▶ running
      │          ╲──▶ cancelling ─▶ cancelled
      ╰──▶ cancelled

Terminal states (succeeded, cancelled) have no way out, so a duplicate terminal
transition is refused. ``failed`` is final unless somebody retries the job.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "queued"  # waiting for a worker (maybe delayed, or waiting on prerequisites)
    RUNNING = "running"  # leased to one worker, identified by the fencing token
    CANCELLING = "cancelling"  # cancel requested; the worker drains and acknowledges
    CANCELLED = "cancelled"  # terminal: stopped on request or because a prerequisite failed
    SUCCEEDED = "succeeded"  # terminal: every item reached a terminal state
    FAILED = "failed"  # the job itself failed and has no automatic retry left
    RETRY_QUEUED = "retry_queued"  # failed or interrupted, waiting to run again at run_after


class ItemState(StrEnum):
    QUEUED = "queued"  # not processed yet (or interrupted and made resumable again)
    RUNNING = "running"  # a worker is processing it
    SUCCEEDED = "succeeded"  # done; never run again
    FAILED = "failed"  # this item's input is bad (e.g. a corrupt photo); the job goes on
    CANCELLED = "cancelled"  # the job was cancelled before the item ran


class WorkerState(StrEnum):
    RUNNING = "running"  # registered and working
    STOPPED = "stopped"  # exited cleanly
    DEAD = "dead"  # found gone by another worker; its leases are void


# Jobs that occupy a lock or may still run.
ACTIVE_STATES = frozenset(
    {JobState.QUEUED, JobState.RUNNING, JobState.CANCELLING, JobState.RETRY_QUEUED}
)
TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.CANCELLED})
CLAIMABLE_STATES = frozenset({JobState.QUEUED, JobState.RETRY_QUEUED})
# States in which a worker holds a lease (and so may be fenced out).
LEASED_STATES = frozenset({JobState.RUNNING, JobState.CANCELLING})
# States after which a job will not run again unless somebody acts.
FINISHED_STATES = frozenset({JobState.SUCCEEDED, JobState.CANCELLED, JobState.FAILED})

ALLOWED_TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.CANCELLING}),
    JobState.RUNNING: frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLING}),
    JobState.CANCELLING: frozenset({JobState.CANCELLED, JobState.SUCCEEDED, JobState.FAILED}),
    JobState.FAILED: frozenset({JobState.RETRY_QUEUED}),
    JobState.RETRY_QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.CANCELLING}),
    JobState.SUCCEEDED: frozenset(),
    JobState.CANCELLED: frozenset(),
}

ITEM_TRANSITIONS: dict[ItemState, frozenset[ItemState]] = {
    ItemState.QUEUED: frozenset({ItemState.RUNNING, ItemState.CANCELLED}),
    # running -> queued is an interrupted item being made resumable again.
    ItemState.RUNNING: frozenset(
        {ItemState.SUCCEEDED, ItemState.FAILED, ItemState.CANCELLED, ItemState.QUEUED}
    ),
    ItemState.FAILED: frozenset({ItemState.QUEUED, ItemState.RUNNING}),
    ItemState.SUCCEEDED: frozenset(),
    ItemState.CANCELLED: frozenset(),
}
ITEM_DONE_STATES = frozenset({ItemState.SUCCEEDED, ItemState.FAILED, ItemState.CANCELLED})


def can_transition(current: str, target: str) -> bool:
    """Whether the job state machine allows ``current -> target``."""
    return target in ALLOWED_TRANSITIONS.get(JobState(current), frozenset())


def can_transition_item(current: str, target: str) -> bool:
    """Whether an item may go ``current -> target`` (staying put is always allowed)."""
    return current == target or target in ITEM_TRANSITIONS.get(ItemState(current), frozenset())
