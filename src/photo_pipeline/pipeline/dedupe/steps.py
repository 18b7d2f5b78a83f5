"""Steps the dedupe jobs share: checking a keeper, putting a quarantined copy back,
removing emptied quarantine folders."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.pipeline.dedupe.journal import PURGED, QUARANTINED, Entry
from photo_pipeline.pipeline.files import paths, transfer


def check_keeper(entry: Entry) -> transfer.Identity:
    """The keeper must be there and be what the plan saw: else the group is skipped.
    Returns the keeper's identity, for ``keeper_still_there``."""
    where = os.path.join(entry.keeper_root, paths.display(entry.keeper_path))
    try:
        with transfer.spot(entry.keeper_root, paths.from_text(entry.keeper_path)) as place:
            found = transfer.hash_at(place)
    except ItemError as exc:
        if exc.code != "missing":
            raise
        found = None
    if found is None:
        raise ItemError("keeper_missing", f"{where}: the copy kept is gone; this one stays")
    if found[0] != entry.keeper_hash:
        raise ItemError(
            "keeper_changed", f"{where}: the copy kept changed since the plan; this one stays"
        )
    return found[1]


def keeper_still_there(entry: Entry, identity: transfer.Identity) -> Callable[[], None]:
    """``retire``'s last check when the keeper holds the bytes of a copy to remove: it
    must still be the file ``check_keeper`` hashed."""

    def check() -> None:
        try:
            with transfer.spot(entry.keeper_root, paths.from_text(entry.keeper_path)) as place:
                transfer.still_there(place, identity)()
        except ItemError as exc:
            if exc.code != "missing":
                raise
            where = os.path.join(entry.keeper_root, paths.display(entry.keeper_path))
            raise ItemError("copy_gone", f"{where}: the copy kept is gone; this one stays") from exc

    return check


def put_back(entry: Entry, quarantine: str, ctx: JobContext, kind: str) -> os.stat_result | None:
    """Move a quarantined copy back to its path. Returns the restored file's stat, or
    None when this entry never reached the quarantine (nothing to put back)."""
    expected = entry.content_hash
    q_rel, source_rel = paths.from_text(entry.quarantine_path), paths.from_text(entry.source_path)
    names = transfer.PrivateNames(kind, ctx.job_id, entry.seq, ctx.fencing_token)
    with contextlib.ExitStack() as stack:
        try:
            held = stack.enter_context(transfer.spot(quarantine, q_rel))
        except ItemError as exc:
            if exc.code != "missing":
                raise
            return already_back(entry)
        transfer.unpark_leftovers(held, names.prefix)  # parked by a run that died mid-remove
        there = transfer.hash_at(held)
        if there is None:
            return already_back(entry)
        if there[0] != expected:
            raise ItemError(
                "quarantine_changed", f"{held.path}: changed in the quarantine; kept there"
            )
        source = stack.enter_context(transfer.spot(entry.source_root, source_rel, create=True))
        at_source = transfer.hash_at(source)
        seen = None
        if at_source is None:
            link = os.fstat(held.fd).st_dev == os.fstat(source.fd).st_dev
            info, seen = transfer.place(held, source, names.temp, expected, link=link)
            at_source = (expected, transfer.Identity.of(info))
        elif at_source[0] != expected:
            raise ItemError(
                "source_taken", f"{source.path}: another file now has this name; left alone"
            )
        kept = transfer.checked(ctx.confirm_lease, transfer.still_there(source, at_source[1]))
        transfer.retire(held, expected, seen, names.parking, kept=kept)
        return os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)


def already_back(entry: Entry) -> os.stat_result | None:
    """Nothing in the quarantine: the copy is back in place already (a run that died
    after putting it back), was never moved, or is gone (purged or deleted by hand)."""
    try:
        with transfer.spot(entry.source_root, paths.from_text(entry.source_path)) as source:
            at_source = transfer.hash_at(source)
            if at_source is not None and at_source[0] == entry.content_hash:
                return os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)
    except ItemError as exc:
        if exc.code != "missing":
            raise
    if entry.state == PURGED:
        raise ItemError("purged", f"{entry.source()}: purged from the quarantine for good")
    if entry.state != QUARANTINED:
        return None  # never moved
    raise ItemError("missing", f"{entry.source()}: its quarantined copy is gone")
