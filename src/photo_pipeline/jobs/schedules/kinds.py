"""The job types a schedule may queue, and how: each checks its params when a
schedule is made and queues its job when a tick falls due.

The layer that knows the job types registers them on :data:`kinds` (the photo
pipeline's in ``pipeline.scheduled``). A worker ticks only the schedules whose type
it has registered: a process that does not know how to queue a type leaves its
ticks to one that does, instead of queueing it wrongly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.errors import InvalidArgument

if TYPE_CHECKING:
    from photo_pipeline.jobs.enqueue import Enqueued
    from photo_pipeline.jobs.service import JobService

# Queues the job of one tick: (service, params, idempotency key) -> the job. The key
# names the tick; the same key must return the same job (it is how a tick is queued
# once across every worker).
Start = Callable[["JobService", dict[str, Any], str], "Enqueued"]
# Checks (and normalises) a schedule's params; raises InvalidArgument.
CheckParams = Callable[[dict[str, Any]], dict[str, Any]]


def no_params(params: dict[str, Any]) -> dict[str, Any]:
    if params:
        raise InvalidArgument("invalid_params", f"takes no params, got {sorted(params)}")
    return {}


@dataclass(frozen=True)
class Kind:
    job_type: str
    start: Start
    check_params: CheckParams = no_params
    description: str = ""


class Kinds:
    def __init__(self) -> None:
        self._kinds: dict[str, Kind] = {}

    def register(self, kind: Kind) -> Kind:
        check.job_type(kind.job_type)
        self._kinds[kind.job_type] = kind
        return kind

    def get(self, job_type: str) -> Kind:
        kind = self._kinds.get(job_type)
        if kind is None:
            known = ", ".join(sorted(self._kinds)) or "none"
            raise InvalidArgument(
                "unknown_job_type", f"{job_type!r} cannot be scheduled; schedulable: {known}"
            )
        return kind

    def job_types(self) -> list[str]:
        return sorted(self._kinds)

    def all(self) -> list[Kind]:
        return [self._kinds[name] for name in sorted(self._kinds)]

    def __contains__(self, job_type: object) -> bool:
        return job_type in self._kinds


def plain(job_type: str, *, lock: str | None = None, description: str = "") -> Kind:
    """A job type queued as it is, with its params (and ``lock``) and the tick's key."""

    def start(service: JobService, params: dict[str, Any], key: str) -> Enqueued:
        return service.submit(job_type, lock=lock, params=params, idempotency_key=key)

    return Kind(job_type, start, lambda params: check.params(params), description)


# The process-wide kinds that every worker's ticks use.
kinds = Kinds()
