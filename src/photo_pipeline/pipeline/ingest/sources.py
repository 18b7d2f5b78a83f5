"""Registered sources: listed with what they hold and who watches them, watched or
not (``set_watch``: a watcher, ``pipeline.watch``, catalogues what arrives), and
removed from the catalogue.

Removing a source forgets it: its file rows go, and so do the assets no other file
holds (their renditions' rows and near-duplicate pairs with them, by the schema's
cascades). Nothing on disk is touched: the folder and its photos stay where they are,
and importing it again brings them back. It is refused while a job could be using
the source (its scan, or a job that holds the library lock: organize, dedupe …).

A source outside ``PHOTO_PIPELINE_ALLOWED_ROOTS`` (registered through a link swapped
in before #28, say) makes every API dedupe and organize answer 403: ``serve`` says so
once at start, with the command that removes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import delete, exists, func, select, update

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.files import roots
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.locks import LIBRARY_LOCK


class SourceNotFound(PhotoPipelineError):
    code = "source_not_found"
    status = 404


class SourceBusy(PhotoPipelineError):
    code = "source_busy"
    status = 409


def set_watch(service: JobService, source_ids: Sequence[int], watch: bool) -> list[dict[str, Any]]:
    """Watch the sources ``source_ids`` (or stop watching them); returns their rows. A
    running ``serve`` or ``watch`` takes a newly watched source within seconds, and
    stops the watcher of one no longer watched."""
    ids = list(source_ids)
    with write_session(service.session_factory) as session:
        rows = {
            row.id: dict(row._mapping)
            for row in session.execute(select(sources).where(sources.c.id.in_(ids)))
        }
        for source_id in ids:
            if source_id not in rows:
                raise SourceNotFound("source_not_found", f"no source {source_id}")
        session.execute(update(sources).where(sources.c.id.in_(ids)).values(watch=watch))
    return [{**rows[source_id], "watch": watch} for source_id in ids]


def list_sources(
    service: JobService, allowed_roots: Sequence[Path | str] = ()
) -> list[dict[str, Any]]:
    """Every source: id, path, when it was added and last scanned, its file count,
    whether it is watched and by whom (``watcher``: host, mode, lag; None while no live
    watcher holds it), and whether it lies outside ``allowed_roots`` (when any are set)."""
    from photo_pipeline.pipeline.watch.leases import active_watchers

    counted = (
        select(files.c.source_id, func.count().label("files"))
        .group_by(files.c.source_id)
        .subquery()
    )
    query = (
        select(sources, func.coalesce(counted.c.files, 0).label("files"))
        .outerjoin(counted, counted.c.source_id == sources.c.id)
        .order_by(sources.c.id)
    )
    allowed = [str(root) for root in allowed_roots]
    with read_session(service.session_factory) as session:
        rows = [dict(row._mapping) for row in session.execute(query)]
    watchers = {w["source_id"]: w for w in active_watchers(service.session_factory)}
    for row in rows:
        row["outside_allowed_roots"] = bool(allowed) and not roots.is_inside(row["path"], allowed)
        watcher = watchers.get(row["id"])
        row["watcher"] = (
            None
            if watcher is None
            else {k: watcher[k] for k in ("host", "holder", "mode", "reason", "lag_seconds")}
        )
    return rows


def remove_source(service: JobService, source_id: int) -> dict[str, Any]:
    """Forget the source ``source_id`` (see the module docstring); returns its row with
    the counts of file rows and assets removed."""
    # Here, not at the top: the scan module loads the decoders, and listing sources
    # must start fast.
    from photo_pipeline.pipeline.ingest.scan import lock_for

    holders = [*service.blockers(lock_for(source_id)), *service.blockers(LIBRARY_LOCK)]
    if holders:
        named = ", ".join(f"{h['job_type']} {h['id']}" for h in holders)
        raise SourceBusy(
            "source_busy",
            f"source {source_id} may be in use by {named}: remove it once that has ended",
        )
    return _forget(service, source_id)


@transactional
def _forget(service: JobService, source_id: int) -> dict[str, Any]:
    with write_session(service.session_factory) as session:
        row = session.execute(select(sources).where(sources.c.id == source_id)).first()
        if row is None:
            raise SourceNotFound("source_not_found", f"no source {source_id}")
        held = select(files.c.asset_id).where(files.c.source_id == source_id).distinct()
        orphaned = list(
            session.scalars(
                select(assets.c.id).where(
                    assets.c.id.in_(held),
                    ~exists().where(
                        files.c.asset_id == assets.c.id, files.c.source_id != source_id
                    ),
                )
            )
        )
        removed_files = session.scalar(
            select(func.count()).select_from(files).where(files.c.source_id == source_id)
        )
        session.execute(delete(files).where(files.c.source_id == source_id))
        for start in range(0, len(orphaned), 500):
            chunk = orphaned[start : start + 500]
            # A Live Photo half kept elsewhere pairs with nothing any more.
            session.execute(update(assets).where(assets.c.live_of.in_(chunk)).values(live_of=None))
            session.execute(delete(assets).where(assets.c.id.in_(chunk)))
        session.execute(delete(sources).where(sources.c.id == source_id))
    return {
        **dict(row._mapping),
        "files_removed": removed_files or 0,
        "assets_removed": len(orphaned),
    }


def sources_outside(service: JobService, allowed_roots: Sequence[Path | str]) -> list[str]:
    """The paths of the sources outside ``allowed_roots`` (none set: none). Paths only:
    ``serve`` asks at every start, and counting files would read the whole table."""
    allowed = [str(root) for root in allowed_roots]
    if not allowed:
        return []
    registered = Catalog(service.session_factory).source_paths()
    return [path for path in registered if not roots.is_inside(path, allowed)]
