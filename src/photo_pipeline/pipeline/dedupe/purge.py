"""The ``dedupe_purge`` job: deletes files quarantined before a cutoff for good, each
only while its keeper is still there and the quarantined bytes are the ones moved."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import dedupe_entries
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.dedupe.journal import PURGED, QUARANTINED, Journal, Recorded
from photo_pipeline.pipeline.dedupe.start import PURGE_JOB_TYPE, quarantine_folder
from photo_pipeline.pipeline.dedupe.steps import (
    check_keeper,
    keeper_still_there,
)
from photo_pipeline.pipeline.files import paths, transfer
from photo_pipeline.pipeline.library.catalog import Catalog


@registry.handler(PURGE_JOB_TYPE)
def purge(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    home = ctx.params["home"]
    before = datetime.fromisoformat(ctx.params["before"])
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    entries = journal.load(
        dedupe_entries.c.state.in_([QUARANTINED, PURGED]),
        dedupe_entries.c.quarantined_at < before,
    )
    # Entries purged by this very job before a crash keep their items; others' stay.
    mine = _purged_by(ctx)
    work = [e for e in entries if e.state == QUARANTINED or e.id in mine]
    keys = {f"{e.id}:{paths.display(e.source_path)}"[:2000]: e for e in work}
    ctx.add_items(list(keys))

    def write_journal() -> RowWriter | None:
        return journal.writer(_catalogue_purged)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = keys[key]
        if entry.state == PURGED:
            ctx.succeed(key)
            continue
        quarantine = quarantine_folder(home, entry.job_id)
        try:
            kept = transfer.checked(  # never the last copy
                ctx.confirm_lease, keeper_still_there(entry, check_keeper(entry))
            )
            try:
                with transfer.spot(quarantine, paths.from_text(entry.quarantine_path)) as held:
                    names = transfer.PrivateNames(
                        PURGE_JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token
                    )
                    transfer.unpark_leftovers(held, names.prefix)  # a run that died mid-remove
                    transfer.retire(held, entry.content_hash, None, names.parking, kept=kept)
            except ItemError as exc:
                if exc.code != "missing":
                    raise
            except OSError as exc:
                raise transfer.write_error(exc, exc.filename or quarantine) from exc
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            continue
        journal.record(entry, {"state": PURGED, "purge_job_id": ctx.job_id})
        ctx.succeed(key)
    ctx.flush()
    if not ctx.should_stop:
        for job_id in {e.job_id for e in work}:
            transfer.remove_empty_tree(quarantine_folder(home, job_id))


def _purged_by(ctx: JobContext) -> set[int]:
    """Entries this purge job deleted already (before a crash)."""
    with read_session(ctx.session_factory) as session:
        return set(
            session.scalars(
                select(dedupe_entries.c.id).where(dedupe_entries.c.purge_job_id == ctx.job_id)
            )
        )


def _catalogue_purged(session: Session, batch: list[Recorded]) -> None:
    Catalog.record_purged(session, [e.file_id for e, _, _ in batch if e.file_id is not None])
