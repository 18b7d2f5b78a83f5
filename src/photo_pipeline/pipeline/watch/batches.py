"""Settled paths handed over as scans of exactly those paths (``scan``'s ``paths``),
each followed by the render and near-duplicate jobs an import queues (joined to the
ones already waiting): a burst of thousands of files is a few scans, not a job per
file nor a rescan of the source. A scan is durable once queued: a watcher killed
after that loses nothing of the batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from photo_pipeline.config import Settings
from photo_pipeline.jobs import JobService, LockHeld
from photo_pipeline.pipeline.files import paths


def queue_scan(
    service: JobService, settings: Settings, source: dict[str, Any], changed: Sequence[str]
) -> str | None:
    """Queue a scan of ``changed`` (paths relative to ``source``) and its follow-up
    jobs; returns the scan's id, or None while another scan of the source is active
    (its lock is held: the caller keeps the paths and tries again)."""
    # Here, not at the top: the job modules load the decoders.
    from photo_pipeline.pipeline.ingest import scan
    from photo_pipeline.pipeline.near import similar
    from photo_pipeline.pipeline.renditions import render

    rendering = render.render_settings(settings)
    params = {
        "sources": [
            {
                "id": source["id"],
                "path": source["path"],
                "paths": [paths.to_text(relative) for relative in changed],
            }
        ],
        "max_pixels": settings.max_pixels,
        "render": scan.render_params(settings.home, rendering),
        "video_time_limit": settings.video_time_limit,
    }
    try:
        queued = service.submit(scan.JOB_TYPE, lock=scan.lock_for(source["id"]), params=params)
    except LockHeld:
        return None
    scan_id = queued.job["id"]
    renders = render.enqueue_render(
        service, settings.home, rendering, prerequisites=[scan_id], join_equivalent=True
    )
    similar.enqueue_similar(
        service,
        settings.home,
        max_distance=settings.near_distance,
        prerequisites=[renders.job["id"]],
        join_equivalent=True,
    )
    return str(scan_id)


def scan_active(service: JobService, source_id: int) -> bool:
    """Whether a scan of the source is queued or running (its lock held)."""
    from photo_pipeline.pipeline.ingest.scan import lock_for

    return bool(service.blockers(lock_for(source_id)))
