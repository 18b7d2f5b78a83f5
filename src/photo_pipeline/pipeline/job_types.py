"""Importing this module registers every photo job type on
``photo_pipeline.jobs.handlers.registry``: scan, render, similar, organize (and its
undo), verify, places, timeshift (and its undo), dedupe (its undo, purge)."""

from photo_pipeline.pipeline import (  # noqa: F401
    dedupe,
    places,
    render,
    scan,
    similar,
    timeshift,
    verify,
)
from photo_pipeline.pipeline.organize import run, undo  # noqa: F401
