"""The ``dedupe_undo`` job: puts a dedupe job's quarantined files back where they
were (same bytes, mtime, mode), newest first, and removes the emptied quarantine."""

from __future__ import annotations

from sqlalchemy.orm import Session

from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.dedupe.journal import (
    RESTORED,
    SKIPPED,
    Journal,
    Recorded,
)
from photo_pipeline.pipeline.dedupe.start import UNDO_JOB_TYPE, quarantine_folder
from photo_pipeline.pipeline.dedupe.steps import put_back
from photo_pipeline.pipeline.files import transfer
from photo_pipeline.pipeline.library.catalog import PRESENT, Catalog


@registry.handler(UNDO_JOB_TYPE)
def undo(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    dedupe_id = ctx.params["dedupe_job_id"]
    quarantine = quarantine_folder(ctx.params["home"], dedupe_id)
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    # Newest first; entries not recorded quarantined are looked at too (a crash may
    # have placed them): each step looks at the disk before it acts.
    work = [e for e in reversed(journal.of_job(dedupe_id)) if e.state != SKIPPED]
    for start in range(0, len(work), 1000):
        ctx.add_items(e.item_key for e in work[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    transfer.sweep_temp_files((e.source_folder() for e in work), UNDO_JOB_TYPE, ctx.job_id)

    def write_journal() -> RowWriter | None:
        return journal.writer(_catalogue_restored)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = by_seq[int(key.split(":", 1)[0])]
        if entry.state == RESTORED:
            ctx.succeed(key)
            continue
        try:
            try:
                ctx.confirm_lease()  # a worker stopped past its lease moves no more
                restored = put_back(entry, quarantine, ctx, UNDO_JOB_TYPE)
            except OSError as exc:
                raise transfer.write_error(exc, exc.filename or entry.source()) from exc
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            continue
        journal.record(entry, {"state": RESTORED, "undo_job_id": ctx.job_id}, restored)
        ctx.succeed(key)
    ctx.flush()
    transfer.sweep_temp_files((e.source_folder() for e in work), UNDO_JOB_TYPE, ctx.job_id)
    if not ctx.should_stop:
        transfer.remove_empty_tree(quarantine)


def _catalogue_restored(session: Session, batch: list[Recorded]) -> None:
    rows = [
        {
            "file_id": entry.file_id,
            "state": PRESENT if entry.kind != "sidecar" else "failed",
            "size": info.st_size,
            "mtime_ns": info.st_mtime_ns,
            "inode": info.st_ino,
        }
        for entry, _, info in batch
        if info is not None and entry.file_id is not None
    ]
    Catalog.record_restored(session, rows, utc_now())
