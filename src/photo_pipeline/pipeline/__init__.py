"""Photo job types: each a handler turning a job's items into media calls and database
rows. Importing this package registers them on ``photo_pipeline.jobs.handlers.registry``.
"""

from photo_pipeline.pipeline import scan  # noqa: F401  (registers "scan")
