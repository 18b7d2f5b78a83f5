"""The ``dedupe`` job: moves every copy but one of each group into the quarantine
(``<home>/quarantine/<job id>/<source-relative path>``) with ``files.transfer``.
The keeper must be there and hash to what the plan saw (else ``keeper_missing`` /
``keeper_changed``), the copy is re-hashed as it is placed (else
``content_changed``), and the original is removed only by ``retire``, which proves
the bytes removed are the ones placed. A link within one filesystem, else a copy
(fsynced, verified, mode and mtime kept). A crash at any instant is resumed from the
journal and the disk; every step is safe to repeat."""

from __future__ import annotations

import contextlib
import os

from sqlalchemy.orm import Session

from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.dedupe.journal import (
    QUARANTINED,
    SKIPPED,
    Entry,
    Journal,
    Recorded,
)
from photo_pipeline.pipeline.dedupe.plan import build_dedupe_plan
from photo_pipeline.pipeline.dedupe.start import JOB_TYPE, quarantine_folder
from photo_pipeline.pipeline.dedupe.steps import (
    check_keeper,
    keeper_still_there,
    put_back,
)
from photo_pipeline.pipeline.files import paths, roots, transfer
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.scope import Scope


@registry.handler(JOB_TYPE)
def dedupe(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    quarantine = quarantine_folder(ctx.params["home"], ctx.job_id)
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    entries = journal.of_job(ctx.job_id)
    if not entries:
        # First run: the whole plan is journalled before any file is touched.
        roots.require_sources_inside(ctx.session_factory, ctx.params.get("roots"))
        journal.write_plan(
            ctx.job_id,
            build_dedupe_plan(
                ctx.session_factory, near=ctx.params["near"], scope=Scope.of_params(ctx.params)
            ),
        )
        entries = journal.of_job(ctx.job_id)
    for start in range(0, len(entries), 1000):
        ctx.add_items(e.item_key for e in entries[start : start + 1000])
    by_seq = {e.seq: e for e in entries}
    # Which entries are photos of a bundle: a sidecar moves only after all of them.
    photos_of: dict[tuple[int, str, str], list[int]] = {}
    for entry in entries:
        if entry.kind != "sidecar":
            photos_of.setdefault(entry.bundle, []).append(entry.seq)
    moved = {e.seq for e in entries if e.state == QUARANTINED}
    # Made private, and never reached through a link (root_changed).
    q_device: int | None = transfer.root_device(quarantine, create=True, mode=0o700)
    if not ctx.params.get("hard_links", True):
        q_device = None
    folders = [(quarantine, os.path.dirname(paths.from_text(e.quarantine_path))) for e in entries]
    transfer.sweep_temp_files(folders, JOB_TYPE, ctx.job_id)

    def write_journal() -> RowWriter | None:
        return journal.writer(_catalogue_quarantined)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = by_seq[int(key.split(":", 1)[0])]
        if entry.state == QUARANTINED:
            ctx.succeed(key)  # done before a crash; only its item was not yet recorded
            continue
        try:
            try:
                if entry.kind == "sidecar" and not set(photos_of.get(entry.bundle, [])) <= moved:
                    raise ItemError("photo_kept", f"{entry.source()}: its photo stays; so does it")
                ctx.confirm_lease()  # a worker stopped past its lease moves no more
                info = _quarantine_one(entry, quarantine, ctx, q_device)
            except OSError as exc:  # an I/O error on this file fails it, not the job
                raise transfer.write_error(exc, exc.filename or entry.source()) from exc
        except ItemError as exc:
            failure = {"state": SKIPPED, "error_code": exc.code, "error_message": exc.message}
            journal.record(entry, failure)
            ctx.fail(key, exc.code, exc.message)
            continue
        moved.add(entry.seq)
        done = {
            "state": QUARANTINED,
            "quarantined_at": utc_now(),
            "error_code": None,
            "error_message": None,
        }
        journal.record(entry, done, info)
        ctx.succeed(key)
    ctx.flush()
    transfer.sweep_temp_files(folders, JOB_TYPE, ctx.job_id)
    if not ctx.should_stop:
        transfer.remove_empty_tree(quarantine)


def _quarantine_one(
    entry: Entry, quarantine: str, ctx: JobContext, q_device: int | None
) -> os.stat_result:
    """Move one copy into the quarantine; safe to run again after a crash at any point."""
    try:
        check_keeper(entry)
    except ItemError:
        # A run that died after placing this copy: it goes back before the skip.
        put_back(entry, quarantine, ctx, JOB_TYPE)
        raise
    source_rel, q_rel = paths.from_text(entry.source_path), paths.from_text(entry.quarantine_path)
    names = transfer.PrivateNames(JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token)
    with (
        transfer.spot(entry.source_root, source_rel) as source,
        transfer.spot(quarantine, q_rel, create=True) as held,
    ):
        # Parked by a run that died mid-remove (the original, or a withdrawn copy).
        transfer.unpark_leftovers(source, names.prefix)
        transfer.unpark_leftovers(held, names.prefix)
        there = transfer.hash_at(held)
        if there is not None and there[0] != entry.content_hash:
            raise ItemError("destination_taken", f"{held.path}: another file is there; kept it")
        seen = None  # placed by an earlier run: the original is checked by its bytes alone
        if there is None:
            link = q_device is not None and os.fstat(source.fd).st_dev == q_device
            info, seen = transfer.place(source, held, names.temp, entry.content_hash, link=link)
            there = (entry.content_hash, transfer.Identity.of(info))
        kept = transfer.checked(ctx.confirm_lease, transfer.still_there(held, there[1]))
        try:
            transfer.retire(source, entry.content_hash, seen, names.parking, kept=kept)
        except ItemError:
            _withdraw(held, entry, names.parking)  # the original stays: so no second copy
            raise
        return os.stat(held.name, dir_fd=held.fd, follow_symlinks=False)


def _withdraw(held: transfer.Spot, entry: Entry, parking: str) -> None:
    """Take back a copy placed in the quarantine whose original could not be removed
    (changed or in use), so that no file is both in place and quarantined. Only when
    that loses no bytes: another name of the same inode remains (a hard link), or the
    keeper holds these very bytes (an exact copy)."""
    try:
        info = os.stat(held.name, dir_fd=held.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if info.st_nlink > 1:
        transfer.remove(held)
    elif entry.kind == "copy":
        with contextlib.suppress(ItemError):
            kept = keeper_still_there(entry, check_keeper(entry))
            transfer.retire(held, entry.content_hash, None, parking, kept=kept)


def _catalogue_quarantined(session: Session, batch: list[Recorded]) -> None:
    ids = [
        entry.file_id
        for entry, values, _ in batch
        if values["state"] == QUARANTINED and entry.file_id is not None
    ]
    Catalog.record_quarantined(session, ids, utc_now())
