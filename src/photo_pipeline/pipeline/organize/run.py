"""The ``organize`` job: holds the library lock, journals its whole plan before it
touches a file, then places each file with ``transfer`` (temp file, fsync, hash check,
link into place, never over an existing name). Every step is safe to repeat, so a
crash at any instant is resumed from the journal and the disk."""

from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path

from sqlalchemy.orm import Session

from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.files import paths, roots, transfer
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.scope import Scope
from photo_pipeline.pipeline.organize import in_order
from photo_pipeline.pipeline.organize.journal import (
    DONE,
    FAILED,
    Entry,
    Journal,
    Recorded,
)
from photo_pipeline.pipeline.organize.plan import (
    DestinationState,
    build_plan,
    catalogue_candidates,
)
from photo_pipeline.pipeline.organize.start import JOB_TYPE, check_destination
from photo_pipeline.pipeline.organize.template import inside, parse


@registry.handler(JOB_TYPE)
def organize(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    params = ctx.params
    destination = params["destination"]
    catalog = Catalog(ctx.session_factory)
    journal = Journal(ctx.session_factory, ctx.job_id, (ctx.job_id, ctx.fencing_token))
    entries = journal.load()
    # The destination is opened first, before anything below it is read: a folder on
    # its path swapped for a link since the job was queued is refused (root_changed).
    dest_device = transfer.root_device(destination, create=True)
    if not entries:
        # First run: the whole plan is journalled before any file is touched.
        roots.require_sources_inside(ctx.session_factory, params.get("roots"), destination)
        check_destination(ctx.session_factory, destination)
        plan = build_plan(
            catalogue_candidates(ctx.session_factory, destination),
            parse(params["template"]),
            move=params["move"],
            existing=DestinationState(destination),
            keep_duplicates=params.get("keep_duplicates", False),
            scope=Scope.of_params(params),
        )
        for planned in plan:
            inside(destination, paths.from_text(planned.dest_path))
        journal.write_plan(plan)
        entries = journal.load()
    # Registered as it was opened: a real path, not resolved again (a link swapped in
    # now would register the folder it leads to).
    dest_source = catalog.add_source(Path(destination), resolved=True)["id"]
    work = [e for e in entries if e.action != "skip"]
    for start in range(0, len(work), 1000):
        ctx.add_items(e.item_key for e in work[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    # Temp files of an interrupted earlier attempt (one listing per folder).
    dest_folders = [(destination, os.path.dirname(paths.from_text(e.dest_path))) for e in work]
    transfer.sweep_temp_files(dest_folders, JOB_TYPE, ctx.job_id)

    # A copy's new name is made durable with its folder's fsync, once per folder for
    # a batch of copies, before the journal says they are done. (A move syncs each
    # file's folder at once: its source goes next.)
    unsynced: set[str] = set()

    def write_journal() -> RowWriter | None:
        for folder in sorted(unsynced):
            fd = transfer.open_folder(destination, folder)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        unsynced.clear()
        return journal.writer(lambda s, batch: _catalogue_organized(s, dest_source, batch))

    ctx.before_flush(write_journal)
    link_device = dest_device if params.get("hard_links", True) else None

    def place(entry: Entry) -> os.stat_result:
        try:
            return _organize_one(entry, destination, ctx, params["move"], link_device)
        except OSError as exc:  # an I/O error on this file fails it, not the job
            raise transfer.write_error(exc, exc.filename or entry.dest(destination)) from exc

    def record(key: str, entry: Entry, placed: Future[os.stat_result] | None) -> None:
        if placed is None:
            ctx.succeed(key)  # done before a crash; only its item was not yet recorded
            return
        try:
            info = placed.result()
        except ItemError as exc:
            failure = {"state": FAILED, "error_code": exc.code, "error_message": exc.message}
            journal.record(entry, failure)
            ctx.fail(key, exc.code, exc.message)
            return
        done = {
            "state": DONE,
            "dest_inode": info.st_ino,
            "dest_mtime_ns": info.st_mtime_ns,
            "error_code": None,
            "error_message": None,
        }
        if not params["move"]:
            unsynced.add(os.path.dirname(paths.from_text(entry.dest_path)))
        journal.record(entry, done, info)
        ctx.succeed(key)

    in_order.run_in_order(
        ctx, by_seq, place, record, lambda entry: entry.state == DONE, name="organize"
    )
    ctx.flush()
    transfer.sweep_temp_files(dest_folders, JOB_TYPE, ctx.job_id)


def _organize_one(
    entry: Entry, destination: str, ctx: JobContext, move: bool, link_device: int | None
) -> os.stat_result:
    """Place one file; safe to run again after a crash at any point."""
    inside(destination, paths.from_text(entry.dest_path))
    source_rel, dest_rel = paths.from_text(entry.source_path), paths.from_text(entry.dest_path)
    names = transfer.PrivateNames(JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token)
    with (
        transfer.spot(entry.source_root, source_rel) as source,
        transfer.spot(destination, dest_rel, create=True) as dest,
    ):
        if move:
            transfer.unpark_leftovers(source, names.prefix)  # parked by a run that died mid-remove
            # A read-only card or share: refused before a copy is made, which a later
            # run would take for done and never remove the source.
            if not os.access(".", os.W_OK | os.X_OK, dir_fd=source.fd):
                raise ItemError(
                    "source_not_removable",
                    f"{source.path}: its folder is read-only, so it cannot be moved; "
                    "nothing was copied",
                )
        there = transfer.hash_at(dest)
        if there is not None and there[0] != entry.content_hash:
            raise ItemError(
                "destination_taken", f"{dest.path}: a different file has this name; kept it"
            )
        seen = None  # placed by an earlier run: the source is checked by its bytes alone
        if there is None:
            link = move and link_device is not None and os.fstat(source.fd).st_dev == link_device
            try:
                info, seen = transfer.place(
                    source, dest, names.temp, entry.content_hash, link=link, sync_folder=move
                )
                there = (entry.content_hash, transfer.Identity.of(info))
            except ItemError as exc:
                # Lost a race for the name: fine if the winner placed this very content.
                there = transfer.hash_at(dest)
                if exc.code != "destination_taken" or not there or there[0] != entry.content_hash:
                    raise
        if move:
            kept = transfer.checked(ctx.confirm_lease, transfer.still_there(dest, there[1]))
            transfer.retire(source, entry.content_hash, seen, names.parking, kept=kept)
        return os.stat(dest.name, dir_fd=dest.fd, follow_symlinks=False)


def _catalogue_organized(session: Session, dest_source: int, batch: list[Recorded]) -> None:
    """Keep the catalogue true to the disk: a moved file's row follows it into the
    destination (a source itself), a copied photo gets a row there too."""
    rows = [
        {
            "move": entry.action == "move",
            "file_id": entry.file_id,
            "photo": entry.kind != "sidecar",
            "content_hash": entry.content_hash,
            "source_id": dest_source,
            "path": entry.dest_path,
            "size": info.st_size,
            "mtime_ns": info.st_mtime_ns,
            "inode": info.st_ino,
        }
        for entry, values, info in batch
        if values["state"] == DONE
    ]
    Catalog.record_organized(session, rows, utc_now())
