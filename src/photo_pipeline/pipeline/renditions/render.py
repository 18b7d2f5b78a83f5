"""The ``render`` job: a thumbnail and a preview per asset, into the rendition store.

Items are the assets whose renditions are missing or stale (made with other settings),
found when the job starts, so a job queued behind a scan renders what that scan did
not (videos; all of them after a scan without render settings), and a resumed job
renders exactly what is still missing.

An item renders its asset and stages the files (``pipeline.renditions.store``); each batch
of items is published (fsynced together, renamed) just before its rows are written
with the items, in the fenced transaction.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from photo_pipeline.config import Settings
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.media import MediaError, cost
from photo_pipeline.media.errors import TRANSIENT_CODES
from photo_pipeline.media.phash import to_text
from photo_pipeline.media.render import RenderResult, RenderSettings, render_file
from photo_pipeline.pipeline.files import paths, roots, transfer
from photo_pipeline.pipeline.library.unexpected import unexpected_failure
from photo_pipeline.pipeline.renditions.rows import Renditions
from photo_pipeline.pipeline.renditions.store import (
    RenderOutcome,
    StoredRendition,
    publish,
    relative_path,
    remove_files,
    stage,
    sweep_temp_files,
)

JOB_TYPE = "render"
_ADD_CHUNK = 1000


def render_settings(settings: Settings) -> RenderSettings:
    """The rendition settings of a library configuration (validated)."""
    return RenderSettings(
        thumbnail_size=settings.thumbnail_size,
        preview_size=settings.preview_size,
        format=settings.rendition_format,
        quality=settings.rendition_quality,
        max_pixels=settings.max_pixels,
        video_time_limit=settings.video_time_limit,
    )


def enqueue_render(
    service: JobService,
    home: Path,
    settings: RenderSettings,
    *,
    force: bool = False,
    prerequisites: list[str] | tuple[str, ...] = (),
    idempotency_key: str | None = None,
    join_equivalent: bool = False,
) -> Enqueued:
    """Queue a render job for the library at ``home`` (after ``prerequisites``); with
    ``join_equivalent``, the same render already waiting on them is returned instead."""
    return service.submit(
        JOB_TYPE,
        params={"home": str(home), "settings": settings.to_params(), "force": force},
        prerequisites=prerequisites,
        idempotency_key=idempotency_key,
        join_equivalent=join_equivalent,
    )


@registry.handler(JOB_TYPE)
def render(ctx: JobContext) -> None:
    home = Path(ctx.params["home"])
    settings = RenderSettings.from_params(ctx.params["settings"])
    fingerprint = settings.fingerprint()
    rows = Renditions(ctx.session_factory)
    swept = sweep_temp_files(home)  # leftovers of a worker killed mid-write
    if swept:
        ctx.log.info("removed %d abandoned temp files", swept)
    todo = rows.to_render(fingerprint, force=bool(ctx.params.get("force")))
    keys = [item_key(row) for row in todo]
    for start in range(0, len(keys), _ADD_CHUNK):
        ctx.add_items(keys[start : start + _ADD_CHUNK])
    ctx.log.info("%d assets to render", len(keys))

    done: list[RenderOutcome] = []

    def keep(_key: str, outcome: RenderOutcome) -> None:
        done.append(outcome)
        if outcome.error:
            # Memory short: once more, alone (a later render renders it anyway)
            raise ItemError(*outcome.error, transient=outcome.error[0] in TRANSIENT_CODES)
        if outcome.warning:
            ctx.log.warning("asset %s: %s", outcome.asset_id, outcome.warning)

    orphans: list[str] = []  # files of committed batches that no row points at

    def remove_orphans() -> None:
        for refused in remove_files(home, orphans):
            ctx.log.warning("old rendition not removed: %s", refused)
        orphans.clear()

    def record() -> RowWriter | None:
        remove_orphans()  # the previous batch's, committed by now
        if not done:
            return None  # nothing to write (a flush between two pages of items)
        batch = publish(home, done)  # durable under their names before any row names them
        done.clear()
        for outcome in batch:
            if outcome.error is None and not outcome.renditions and outcome.warning:
                ctx.log.warning("asset %s: %s", outcome.asset_id, outcome.warning)

        def write(session: Session) -> None:
            # Assigned, not appended: a retried transaction computes them again.
            orphans[:] = rows.record_in(session, batch, fingerprint)

        return write  # with the items: a render that lost its lease writes no rows

    ctx.before_flush(record)
    # Originals are read only where the library's files may really be (a catalogued
    # file replaced by a symlink to elsewhere since the scan is refused).
    allowed = roots.library_roots(ctx.session_factory)
    ctx.map(
        functools.partial(render_item_within, allowed),
        on_result=keep,
        # A huge progressive JPEG waits for memory (the worker's budget), not for luck.
        weigh=functools.partial(weigh_render_within, allowed),
    )
    if not ctx.should_stop:
        ctx.flush()
        remove_orphans()


def item_key(row: dict[str, Any]) -> str:
    """``asset_id:content_hash:path`` (the path in its stored text form)."""
    absolute = os.path.join(row["source_path"], paths.from_text(row["path"]))
    return f"{row['id']}:{row['content_hash']}:{paths.to_text(absolute)}"


def weigh_render_within(allowed: Sequence[str], params: dict[str, Any], key: str) -> int:
    """The memory rendering an asset will take (``media.cost``, from its original's
    header); an original outside ``allowed`` is not opened (its item fails unread)."""
    original = paths.from_text(key.split(":", 2)[2])
    try:
        roots.real_path_inside(original, allowed)
    except roots.PathOutsideRoots:
        return cost.FLOOR
    settings = RenderSettings.from_params(params["settings"])
    return cost.render_cost(
        original, size=max(settings.sizes.values()), max_pixels=settings.max_pixels
    )


def render_item_within(allowed: Sequence[str], params: dict[str, Any], key: str) -> RenderOutcome:
    """Render one asset and stage its files (runs in the worker's item pool); its
    original is read only when the opened file really lies inside ``allowed``."""
    asset_id, content_hash, stored = key.split(":", 2)
    settings = RenderSettings.from_params(params["settings"])
    try:
        with roots.pinned(paths.from_text(stored), allowed) as original:
            result = render_file(original.path, settings)
    except (MediaError, roots.PathOutsideRoots) as exc:
        return RenderOutcome(int(asset_id), error=(exc.code, exc.detail))
    except Exception as exc:  # one odd file must not fail the render of all the others
        error = unexpected_failure(exc, paths.display(stored))
        return RenderOutcome(int(asset_id), error=error)
    return stage_renditions(Path(params["home"]), int(asset_id), content_hash, result, settings)


def stage_renditions(
    home: Path, asset_id: int, content_hash: str, result: RenderResult, settings: RenderSettings
) -> RenderOutcome:
    """Stage the renditions of one rendered asset in the store (temp files, published
    with their batch); a write that fails (a full disk) is the outcome's error."""
    stored = [
        StoredRendition(
            rendition.kind,
            relative_path(content_hash, rendition.kind, settings.extension),
            rendition.format,
            rendition.width,
            rendition.height,
            len(rendition.data),
        )
        for rendition in result.renditions
    ]
    try:
        staged = stage(
            home, {s.path: r.data for s, r in zip(stored, result.renditions, strict=True)}
        )
    except roots.PathOutsideRoots as exc:
        return RenderOutcome(asset_id, error=(exc.code, exc.detail))
    except OSError as exc:  # a full disk fails the renditions it could not write
        failure = transfer.write_error(exc, exc.filename or str(home))
        return RenderOutcome(asset_id, error=(failure.code, failure.message))
    warning = "; ".join(f"{code}: {message}" for code, message in result.warnings) or None
    return RenderOutcome(asset_id, tuple(stored), to_text(result.phash), warning, staged=staged)
