"""What a photo job's item keys and lock name, in a person's words.

Item keys are the handlers' own (``jobs`` knows nothing of photos): ``source id:path``
for a scan or a verify, an asset id first for render, similar, places and
timeshift, ``entry number:path`` for organize and dedupe and their undos. A person
wants the file's name and its folder, not a source id: ``1:2024/IMG_0003.JPG`` is
``IMG_0003.JPG`` in ``/photos/2024``. A lock key (``scan:1``, ``library``) says
in words what it keeps to one job at a time.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import files, sources
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.library.locks import LIBRARY_LOCK

# How each job type builds its item keys.
_SOURCE_FILE = frozenset({"scan", "verify"})  # source id:path in the source
_ASSET = frozenset({"render", "similar", "faces", "places", "timeshift", "timeshift_undo"})
_ENTRY = frozenset({"organize", "organize.undo", "dedupe", "dedupe_undo", "dedupe_purge"})
_SCAN_LOCK = "scan:"
_LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class ItemPlace:
    """An item's file as a person names it: its name and the folder it is in (None
    when the key names no file, or the folder is not known), and the imported folder
    (source) it belongs to, when known."""

    name: str
    folder: str | None
    source: str | None = None


def item_places(
    session_factory: sessionmaker[Session], job_type: str, keys: Iterable[str]
) -> dict[str, ItemPlace]:
    """Each item key of a ``job_type`` job as a file name and its folder."""
    keys = list(dict.fromkeys(keys))
    if job_type in _SOURCE_FILE:
        return _source_files(session_factory, keys)
    if job_type in _ASSET:
        return _assets(session_factory, keys)
    if job_type in _ENTRY:
        # The path is in its display form already (fenced_journal.SourceEntry), relative.
        return {key: _split(key.partition(":")[2] or key) for key in keys}
    return {key: ItemPlace(key, None) for key in keys}


def _split(path: str, root: str | None = None) -> ItemPlace:
    folder, name = os.path.split(path)
    if root is not None:
        folder = os.path.join(root, folder) if folder else root
    return ItemPlace(name or path, folder or None, root)


def _source_files(session_factory: sessionmaker[Session], keys: list[str]) -> dict[str, ItemPlace]:
    roots = _source_roots(session_factory, {key.partition(":")[0] for key in keys})
    found = {}
    for key in keys:
        source_id, _, stored = key.partition(":")
        found[key] = _split(paths.display(stored), roots.get(source_id)) if stored else _split(key)
    return found


def _source_roots(session_factory: sessionmaker[Session], ids: Iterable[str]) -> dict[str, str]:
    numbers = sorted({int(i) for i in ids if i.isdigit()})
    roots: dict[str, str] = {}
    with read_session(session_factory) as session:
        for start in range(0, len(numbers), _LOOKUP_CHUNK):
            chunk = numbers[start : start + _LOOKUP_CHUNK]
            query = select(sources.c.id, sources.c.path).where(sources.c.id.in_(chunk))
            roots.update({str(row.id): row.path for row in session.execute(query)})
    return roots


def _assets(session_factory: sessionmaker[Session], keys: list[str]) -> dict[str, ItemPlace]:
    """An asset's first catalogued file (the one its row was made from)."""
    ids = sorted({int(k.partition(":")[0]) for k in keys if k.partition(":")[0].isdigit()})
    where: dict[int, tuple[str, str]] = {}
    with read_session(session_factory) as session:
        for start in range(0, len(ids), _LOOKUP_CHUNK):
            chunk = ids[start : start + _LOOKUP_CHUNK]
            first = (
                select(files.c.asset_id, func.min(files.c.id).label("file_id"))
                .where(files.c.asset_id.in_(chunk))
                .group_by(files.c.asset_id)
                .subquery()
            )
            query = (
                select(first.c.asset_id, sources.c.path.label("root"), files.c.path)
                .join(files, files.c.id == first.c.file_id)
                .join(sources, sources.c.id == files.c.source_id)
            )
            where.update({row.asset_id: (row.root, row.path) for row in session.execute(query)})
    found = {}
    for key in keys:
        head = key.partition(":")[0]
        place = where.get(int(head)) if head.isdigit() else None
        found[key] = _split(paths.display(place[1]), place[0]) if place else ItemPlace(key, None)
    return found


def lock_words(
    session_factory: sessionmaker[Session], locks: Iterable[str | None]
) -> dict[str, str]:
    """What each lock keeps to one job at a time, in words."""
    keys = {lock for lock in locks if lock}
    scanned = {k.removeprefix(_SCAN_LOCK) for k in keys if k.startswith(_SCAN_LOCK)}
    roots = _source_roots(session_factory, scanned) if scanned else {}
    words = {}
    for key in keys:
        if key.startswith(_SCAN_LOCK):
            folder = roots.get(key.removeprefix(_SCAN_LOCK))
            words[key] = (
                f"scanning {folder}" if folder else "scanning a folder no longer registered"
            )
        elif key == LIBRARY_LOCK:
            words[key] = "the library: one organize, dedupe, timeshift or verify at a time"
        elif key == "places":  # pipeline.ingest.places.LOCK
            words[key] = "looking up places: one at a time"
        else:
            words[key] = key
    return words


# What to do about a failed item, by job type (None: any) and error code. ``{import}``
# is the command that reads the item's folder again.
_ADVICE = {
    ("verify", "content_changed"): "Its bytes are not the ones imported. If you did not "
    "edit it, restore it from a backup; if you did, catalogue the new version with "
    "{import}. Then run `photo-pipeline verify` again.",
    ("verify", "missing"): "Put it back from a backup, at the same place; if you removed "
    "it on purpose, {import} records it as gone. Then run `photo-pipeline verify` again.",
    ("verify", "symlink_outside_roots"): "It was replaced by a link to a place outside "
    "the library's folders: put the real file back (from a backup), then run "
    "`photo-pipeline verify` again.",
    ("verify", "unreadable_file"): "Check the file's permissions and the disk it is on, "
    "then run `photo-pipeline verify` again.",
    (None, "corrupt_file"): "The file is damaged or not what its name says: replace it "
    "from a backup or leave it out. {import} reads it again once it changes.",
    (None, "unreadable_file"): "Check the file's permissions and the disk it is on, "
    "then {import} reads it again.",
}


def advice(job_type: str, error_code: str | None, place: ItemPlace | None = None) -> str | None:
    """What a person can do about an item of a ``job_type`` job that failed with
    ``error_code`` (None when there is nothing better than the error message)."""
    if error_code is None:
        return None
    text = _ADVICE.get((job_type, error_code)) or _ADVICE.get((None, error_code))
    if text is None:
        return None
    source = place.source if place is not None else None
    command = f"photo-pipeline import {shlex.quote(source)}" if source else "photo-pipeline import"
    return text.replace("{import}", f"`{command}`")
