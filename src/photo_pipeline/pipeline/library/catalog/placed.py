"""Files organize or dedupe put elsewhere (or an undo put back): their rows follow,
inside the caller's journal transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.schema import assets, files
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.file_states import PRESENT, QUARANTINED


def record_organized(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
    """Files organize placed: a moved file's row follows it to its new source and
    path (so a later scan sees it unchanged, not vanished); a copied photo gets a
    row of its own. Repeating a row changes nothing. A few statements for the
    whole batch (one per row took most of organize's journal time, measured)."""
    moved = [
        {"file_id": r["file_id"], **_placed(r, now)}
        for r in rows
        if r["move"] and r["file_id"] is not None
    ]
    if moved:
        # A scan of the destination may have catalogued the new path already.
        session.execute(
            files.delete().where(
                files.c.source_id == bindparam("source_id"),
                files.c.path == bindparam("path"),
                files.c.id != bindparam("file_id"),
            ),
            [{k: r[k] for k in ("source_id", "path", "file_id")} for r in moved],
        )
        session.execute(
            update(files)
            .where(files.c.id == bindparam("file_id"))
            .values({c: bindparam(c) for c in _PLACED_COLUMNS}),
            moved,
        )
    copied = [r for r in rows if not r["move"] and r["photo"]]
    if copied:
        asset_ids = _asset_ids(session, {r["content_hash"] for r in copied})
        statement = insert_for(session, files)
        changed = ("size", "mtime_ns", "inode", "updated_at", "state", "asset_id")
        set_ = {c: statement.excluded[c] for c in (*changed, "error_code", "error_message")}
        session.execute(
            statement.on_conflict_do_update(index_elements=["source_id", "path"], set_=set_),
            [
                {
                    **_placed(r, now),
                    "state": PRESENT,
                    "asset_id": asset_ids.get(r["content_hash"]),
                    "error_code": None,
                    "error_message": None,
                    "created_at": now,
                }
                for r in copied
            ],
        )
    # Their names are words of their assets' search documents.
    _refresh_search(session, [r["file_id"] for r in moved])
    if copied:
        search_index.refresh(session, asset_ids.values())


def record_unorganized(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
    """The reverse of ``record_organized`` for an undo: a moved file's row goes back
    to its original source and path, a copy's row is deleted."""
    at_dest = files.delete().where(
        files.c.source_id == bindparam("dest_source_id"),
        files.c.path == bindparam("dest_path"),
    )
    copies = [r for r in rows if not r["move"]]
    copied_assets: set[int | None] = set()
    for r in copies:
        copied_assets |= set(
            session.scalars(
                select(files.c.asset_id).where(
                    files.c.source_id == r["dest_source_id"], files.c.path == r["dest_path"]
                )
            )
        )
    if copies:
        session.execute(
            at_dest, [{k: r[k] for k in ("dest_source_id", "dest_path")} for r in copies]
        )
    back = []
    for source_id in {r["dest_source_id"] for r in rows if r["move"]}:
        wanted = [r for r in rows if r["move"] and r["dest_source_id"] == source_id]
        ids = _file_ids(session, source_id, [r["dest_path"] for r in wanted])
        back += [
            {"file_id": ids[r["dest_path"]], **_placed(r, now)}
            for r in wanted
            if r["dest_path"] in ids
        ]
    if back:
        session.execute(
            files.delete().where(
                files.c.source_id == bindparam("source_id"),
                files.c.path == bindparam("path"),
                files.c.id != bindparam("file_id"),
            ),
            [{k: r[k] for k in ("source_id", "path", "file_id")} for r in back],
        )
        session.execute(
            update(files)
            .where(files.c.id == bindparam("file_id"))
            .values({c: bindparam(c) for c in _PLACED_COLUMNS}),
            back,
        )
    _refresh_search(session, [r["file_id"] for r in back])
    search_index.refresh(session, copied_assets)


def record_quarantined(session: Session, file_ids: list[int], now: datetime) -> None:
    """Files dedupe moved into the quarantine: no longer present (duplicates and
    listings leave them out), their rows kept for the undo."""
    for start in range(0, len(file_ids), 500):
        session.execute(
            update(files)
            .where(files.c.id.in_(file_ids[start : start + 500]))
            .values(state=QUARANTINED, updated_at=now)
        )
    _refresh_search(session, file_ids)


def record_restored(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
    """Files an undo put back: present again, with what they are on disk now."""
    for row in rows:
        session.execute(
            update(files)
            .where(files.c.id == row["file_id"])
            .values(
                state=row["state"],
                size=row["size"],
                mtime_ns=row["mtime_ns"],
                inode=row["inode"],
                updated_at=now,
            )
        )
    _refresh_search(session, [row["file_id"] for row in rows])


def record_purged(session: Session, file_ids: list[int]) -> None:
    """Quarantined files deleted for good: their rows go."""
    for start in range(0, len(file_ids), 500):
        session.execute(
            files.delete().where(
                files.c.id.in_(file_ids[start : start + 500]), files.c.state == QUARANTINED
            )
        )


def _refresh_search(session: Session, file_ids: list[int]) -> None:
    """The search documents of these files' assets (their names are words of them)."""
    asset_ids: set[int | None] = set()
    for start in range(0, len(file_ids), 500):
        chunk = file_ids[start : start + 500]
        asset_ids |= set(session.scalars(select(files.c.asset_id).where(files.c.id.in_(chunk))))
    search_index.refresh(session, asset_ids)


_PLACED_COLUMNS = ("source_id", "path", "size", "mtime_ns", "inode", "updated_at")


def _placed(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Where a file organize placed (or its undo put back) is now, and its stat."""
    return {
        "source_id": row["source_id"],
        "path": row["path"],
        "size": row["size"],
        "mtime_ns": row["mtime_ns"],
        "inode": row["inode"],
        "updated_at": now,
    }


def _asset_ids(session: Session, hashes: set[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    ordered = sorted(hashes)
    for start in range(0, len(ordered), 500):
        query = select(assets.c.content_hash, assets.c.id).where(
            assets.c.content_hash.in_(ordered[start : start + 500])
        )
        found.update({h: i for h, i in session.execute(query)})
    return found


def _file_ids(session: Session, source_id: int, paths: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(paths), 500):
        query = select(files.c.path, files.c.id).where(
            files.c.source_id == source_id, files.c.path.in_(paths[start : start + 500])
        )
        found.update({p: i for p, i in session.execute(query)})
    return found
