"""A job type schedules may queue, for the tests of jobs.schedules: registered on the
process-wide kinds (as pipeline.scheduled registers the photo ones) with a handler
that does nothing, so that `photo-pipeline worker --import tests.support.schedule_kinds`
ticks and runs it."""

from __future__ import annotations

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.schedules.kinds import kinds, plain

JOB_TYPE = "test.scheduled"
LOCKED = "test.scheduled_locked"  # queued holding the lock "test.lock"

kinds.register(plain(JOB_TYPE))
kinds.register(plain(LOCKED, lock="test.lock"))


@registry.handler(JOB_TYPE)
def scheduled(ctx: JobContext) -> None:
    pass
