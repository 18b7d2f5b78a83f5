"""Which XMP sidecar holds an asset's curation: beside the asset's first present file
(by file id), the sidecar already there in whatever spelling (``IMG_1.CR2.xmp``, as
darktable and digiKam name it, or ``IMG_1.xmp``, as Lightroom does; any case), else
``IMG_1.xmp``, unless another file of that stem is beside it (``IMG_1.CR2`` with
``IMG_1.JPG``, two assets): then ``IMG_1.CR2.xmp``, so that no two assets share one."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import files, sources
from photo_pipeline.media.sidecar import sidecar_names
from photo_pipeline.pipeline.curation.assets import chunks
from photo_pipeline.pipeline.file_states import PRESENT
from photo_pipeline.pipeline.files import paths


@dataclass(frozen=True)
class Sidecar:
    """Where an asset's sidecar is (or will be), and the photo it is beside."""

    path: str
    photo: str
    exists: bool


def photos_of(session: Session, asset_ids: list[int]) -> dict[int, str]:
    """Each asset's first present file, as an absolute path (assets without one left
    out: nothing to write beside)."""
    found: dict[int, str] = {}
    for chunk in chunks(sorted(set(asset_ids))):
        rows = session.execute(
            select(files.c.asset_id, files.c.path, sources.c.path.label("root"))
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id.in_(chunk), files.c.state == PRESENT)
            .order_by(files.c.asset_id, files.c.id)
        )
        for row in rows:
            found.setdefault(row.asset_id, os.path.join(row.root, paths.from_text(row.path)))
    return found


def sidecar_of(photo: str) -> Sidecar:
    """The sidecar of the file at ``photo``."""
    folder, name = os.path.split(photo)
    try:
        present = _listing(folder, os.stat(folder).st_mtime_ns)
    except OSError:
        present = ()
    by_key = {paths.name_key(entry): entry for entry in present}
    for candidate in sidecar_names(name):
        there = by_key.get(paths.name_key(candidate))
        if there is not None:
            return Sidecar(os.path.join(folder, there), photo, True)
    stem = os.path.splitext(name)[0]
    companions = [
        entry
        for entry in present
        if entry != name
        and not entry.lower().endswith(".xmp")
        and os.path.splitext(entry)[0].casefold() == stem.casefold()
    ]
    own = f"{name}.xmp" if companions or stem == name else f"{stem}.xmp"
    return Sidecar(os.path.join(folder, own), photo, False)


@functools.lru_cache(maxsize=8)  # assets come a folder at a time
def _listing(folder: str, mtime_ns: int) -> tuple[str, ...]:
    """The names in ``folder``, listed once per version of it (its mtime)."""
    return tuple(os.listdir(folder))
