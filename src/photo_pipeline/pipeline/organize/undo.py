"""The ``organize.undo`` job: reverses an organize job from its journal, newest entry
first (a few at once, as organize places them). Moved files go back (same name,
bytes, mtime), copies are removed (only when unchanged and the original is still
there), emptied folders go."""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import Future
from pathlib import Path

from sqlalchemy.orm import Session

from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.files import paths, transfer
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.organize import in_order
from photo_pipeline.pipeline.organize.journal import (
    DONE,
    SKIPPED,
    UNDONE,
    Entry,
    Journal,
    Recorded,
)
from photo_pipeline.pipeline.organize.start import UNDO_JOB_TYPE


@registry.handler(UNDO_JOB_TYPE)
def undo(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    organize_id = ctx.params["organize_job_id"]
    destination = ctx.params["destination"]
    journal = Journal(ctx.session_factory, organize_id, (ctx.job_id, ctx.fencing_token))
    # Newest first; entries not recorded done are undone too (a crash may have placed
    # them): each step looks at the disk before it acts.
    work = [e for e in reversed(journal.load()) if e.action != "skip" and e.state != SKIPPED]
    keys = [e.item_key for e in work]
    for start in range(0, len(keys), 1000):
        ctx.add_items(keys[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    _refuse_a_swapped_destination(destination)
    dest_source = Catalog(ctx.session_factory).add_source(Path(destination), resolved=True)["id"]
    transfer.sweep_temp_files((e.source_folder() for e in work), "undo", ctx.job_id)

    def write_journal() -> RowWriter | None:
        return journal.writer(lambda s, batch: _catalogue_undone(s, dest_source, batch))

    ctx.before_flush(write_journal)

    def reverse(entry: Entry) -> tuple[bool, os.stat_result | None]:
        try:
            return _undo_one(entry, destination, ctx)
        except OSError as exc:
            raise transfer.write_error(exc, exc.filename or entry.source()) from exc

    def take(
        key: str, entry: Entry, undone: Future[tuple[bool, os.stat_result | None]] | None
    ) -> None:
        if undone is None:
            ctx.succeed(key)  # undone before a crash; only its item was not yet recorded
            return
        try:
            restored = undone.result()
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            return
        journal.record(entry, {"state": UNDONE}, restored)
        ctx.succeed(key)

    in_order.run_in_order(
        ctx, by_seq, reverse, take, lambda entry: entry.state == UNDONE, name="undo"
    )
    ctx.flush()
    transfer.sweep_temp_files((e.source_folder() for e in work), "undo", ctx.job_id)
    if not ctx.should_stop:
        # Folders the job created and that are empty again go.
        transfer.remove_empty_folders(
            destination, (os.path.dirname(paths.from_text(e.dest_path)) for e in work)
        )


def _undo_one(
    entry: Entry, destination: str, ctx: JobContext
) -> tuple[bool, os.stat_result | None]:
    """Reverse one entry. Returns whether anything was placed to reverse, and the
    restored source's stat for a move."""
    expected = entry.content_hash
    source_rel, dest_rel = paths.from_text(entry.source_path), paths.from_text(entry.dest_path)
    names = transfer.PrivateNames("undo", ctx.job_id, entry.seq, ctx.fencing_token)
    with contextlib.ExitStack() as stack:
        dest: transfer.Spot | None = None
        there: tuple[str, transfer.Identity] | None = None
        try:
            dest = stack.enter_context(transfer.spot(destination, dest_rel))
        except ItemError as exc:
            if exc.code != "missing":
                raise
        if dest is not None:
            transfer.unpark_leftovers(dest, names.prefix)  # parked by a run that died mid-remove
            there = transfer.hash_at(dest)
        if (there and there[0]) != expected and entry.state != DONE:
            return False, None  # this job never placed it (it failed, or never ran)
        if there is not None and there[0] != expected:
            raise ItemError("destination_changed", f"{dest and dest.path}: changed since organize")
        if entry.action == "copy":
            if dest is not None and there is not None:
                with transfer.spot(entry.source_root, source_rel) as source:
                    original = transfer.hash_at(source)
                    if original is None:
                        raise ItemError(
                            "missing", f"{source.path}: the original is gone; the copy is kept"
                        )
                    if original[0] != expected:
                        raise ItemError(
                            "source_changed",
                            f"{source.path}: the original changed since; the copy is kept",
                        )
                    kept = transfer.checked(
                        ctx.confirm_lease, transfer.still_there(source, original[1])
                    )
                    transfer.retire(dest, expected, there[1], names.parking, kept=kept)
            return True, None
        source = stack.enter_context(transfer.spot(entry.source_root, source_rel, create=True))
        at_source = transfer.hash_at(source)
        seen = None
        if at_source is None:
            if dest is None or there is None:
                raise ItemError("missing", f"{entry.dest(destination)}: the moved file is gone")
            link = os.fstat(dest.fd).st_dev == os.fstat(source.fd).st_dev
            info, seen = transfer.place(dest, source, names.temp, expected, link=link)
            at_source = (expected, transfer.Identity.of(info))
        elif at_source[0] != expected:
            raise ItemError(
                "source_taken", f"{source.path}: another file now has this name; left alone"
            )
        if dest is not None:
            kept = transfer.checked(ctx.confirm_lease, transfer.still_there(source, at_source[1]))
            transfer.retire(dest, expected, seen, names.parking, kept=kept)
        return True, os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)


def _catalogue_undone(session: Session, dest_source: int, batch: list[Recorded]) -> None:
    rows = []
    for entry, _, (placed, restored) in batch:
        if not placed:
            continue
        rows.append(
            {
                "move": entry.action == "move",
                "dest_source_id": dest_source,
                "dest_path": entry.dest_path,
                "source_id": entry.source_id,
                "path": entry.source_path,
                "size": restored.st_size if restored else None,
                "mtime_ns": restored.st_mtime_ns if restored else None,
                "inode": restored.st_ino if restored else None,
            }
        )
    Catalog.record_unorganized(session, rows, utc_now())


def _refuse_a_swapped_destination(destination: str) -> None:
    """A destination reached through a symlink now is refused (``root_changed``); one
    that is gone is not (each entry then finds its file missing)."""
    try:
        os.close(transfer.open_root(destination))
    except ItemError as exc:
        if exc.code != "missing":
            raise
