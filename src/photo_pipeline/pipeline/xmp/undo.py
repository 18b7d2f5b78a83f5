"""The ``xmp_write_undo`` job: the sidecars an ``xmp_write`` job wrote put back exactly
as its journal has them (or removed, where there was none), each only while it still
holds what the job wrote; the catalogue then takes what the restored sidecar says."""

from __future__ import annotations

import os

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import xmp_entries, xmp_sidecars
from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.media.exiftool import ExiftoolError
from photo_pipeline.media.xmp import file_sha256, read_sidecar, remove_temp, temp_of, write_bytes
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.xmp.readback import take_from_sidecar
from photo_pipeline.pipeline.xmp.write import CHANGED_SINCE, UNDO_JOB_TYPE, WRITE_FAILED


@registry.handler(UNDO_JOB_TYPE)
def xmp_write_undo(ctx: JobContext) -> None:
    """Put back each sidecar the job wrote, if it still holds what the job wrote; the
    catalogue then takes what the restored sidecar says (``readback``)."""
    factory = ctx.session_factory
    target = ctx.params["job_id"]
    for key in ctx.items():
        asset_id = int(key)
        with read_session(factory) as session:
            entry = session.execute(
                select(xmp_entries).where(
                    xmp_entries.c.job_id == target, xmp_entries.c.asset_id == asset_id
                )
            ).first()
        if entry is None or entry.state == "planned":
            ctx.fail(key, "not_written", f"xmp_write {target} did not write asset {asset_id}")
            continue
        if entry.state == "undone":
            ctx.succeed(key)  # undone before a crash
            continue
        path = paths.from_text(entry.path)
        remove_temp(temp_of(path))
        if file_sha256(path) != entry.new_sha256:
            ctx.fail(
                key,
                CHANGED_SINCE,
                f"{paths.display(entry.path)} changed after the write (another program, or "
                "a later xmp_write): undo that one first",
            )
            continue
        try:
            if entry.existed:
                write_bytes(path, entry.old_bytes or b"")
            else:
                os.unlink(path)
            restored = read_sidecar(path) if entry.existed else None
        except (OSError, ExiftoolError) as exc:
            ctx.fail(key, WRITE_FAILED, str(exc))
            continue
        _mark_undone(factory, target, ctx.job_id, asset_id, path if entry.existed else None)
        if restored is not None:
            take_from_sidecar(factory, asset_id, path, *restored)
        ctx.succeed(key)


@transactional
def _mark_undone(
    factory: sessionmaker[Session], job_id: str, undo_job_id: str, asset_id: int, path: str | None
) -> None:
    now = utc_now()
    with write_session(factory) as session:
        session.execute(
            update(xmp_entries)
            .where(xmp_entries.c.job_id == job_id, xmp_entries.c.asset_id == asset_id)
            .values(state="undone", undone_at=now, undo_job_id=undo_job_id)
        )
        if path is None:  # there was no sidecar: the record goes with it
            session.execute(delete(xmp_sidecars).where(xmp_sidecars.c.asset_id == asset_id))
