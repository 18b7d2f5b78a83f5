"""Photo job types: each a handler turning a job's items into media calls and database
rows. Importing this package registers them on ``photo_pipeline.jobs.handlers.registry``.
"""

# Each module registers its job types: scan, render, similar, organize (and
# organize.undo), verify, places, timeshift (and its undo), dedupe (its undo, purge).
from photo_pipeline.pipeline import (  # noqa: F401
    dedupe,
    organize,
    places,
    render,
    scan,
    similar,
    timeshift,
    verify,
)
