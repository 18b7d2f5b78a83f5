"""Schedules: durable periodic jobs. A schedule queues a job of a registered type
(:mod:`.kinds`) at each tick of a cron expression in its time zone, or of an interval
(:mod:`.timing`); every worker ticks the due ones (:mod:`.ticks`), and the database
makes each tick queue its job exactly once. :mod:`.book` keeps the schedules.

Nothing is imported here: registering a kind (every command does, through
``pipeline.job_types``) must not load ``croniter``."""
