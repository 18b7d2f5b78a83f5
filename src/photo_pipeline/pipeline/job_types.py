"""Importing this module names every photo job type on
``photo_pipeline.jobs.handlers.registry`` with the module that runs it: scan, render,
similar, organize (and its undo), verify, places, timeshift (and its undo), dedupe
(its undo, purge), rescan, xmp_write (and its undo); and, through ``scheduled``, the
job types a schedule may queue. A module is imported when a job of its type first
runs, so a worker waiting on an organize does not load the decoders a scan needs."""

from photo_pipeline.jobs.handlers import registry
from photo_pipeline.pipeline import scheduled  # noqa: F401  (the job types schedules queue)
from photo_pipeline.pipeline.files.lease_signals import ignore_lease_breaks

_PIPELINE = "photo_pipeline.pipeline"
PROVIDERS = {
    "scan": f"{_PIPELINE}.ingest.scan",
    "render": f"{_PIPELINE}.renditions.render",
    "similar": f"{_PIPELINE}.near.similar",
    "organize": f"{_PIPELINE}.organize.run",
    "organize.undo": f"{_PIPELINE}.organize.undo",
    "verify": f"{_PIPELINE}.verify",
    "places": f"{_PIPELINE}.ingest.places",
    "timeshift": f"{_PIPELINE}.timeshift.job",
    "timeshift_undo": f"{_PIPELINE}.timeshift.job",
    "dedupe": f"{_PIPELINE}.dedupe.run",
    "dedupe_undo": f"{_PIPELINE}.dedupe.undo",
    "dedupe_purge": f"{_PIPELINE}.dedupe.purge",
    "rescan": f"{_PIPELINE}.rescan",
    "xmp_write": f"{_PIPELINE}.xmp.write",
    "xmp_write_undo": f"{_PIPELINE}.xmp.undo",
}
# Jobs whose journals their undo (and dedupe's purge) read: ``prune`` keeps them.
UNDOABLE = ("organize", "timeshift", "dedupe", "xmp_write")

ignore_lease_breaks()  # before any job thread can take a lease

for _job_type, _module in PROVIDERS.items():
    registry.defer(_job_type, _module)


def _faces_missing() -> str | None:
    from photo_pipeline.media.faces import missing_models

    return missing_models()


# Faces run only where dlib and its models are installed (a second host, say).
registry.defer("faces", f"{_PIPELINE}.faces.job", missing=_faces_missing)
