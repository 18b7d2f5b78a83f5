"""A catalogued file's sidecars, found beside it and read within the library's roots.

Two kinds say when and where a photo or video was taken, read when the scan reads the
file:

* an editor's XMP sidecar (``media.sidecar``): its capture time and position replace
  the file's own;
* a Google Takeout JSON (``media.takeout``): its capture time replaces only the file's
  mtime, its position fills a missing one.

An asset otherwise keeps what was read when its content was first catalogued; a file
with sidecars is different: when one beside it is added, edited or removed, the scan
reads the file again (``beside_changed_sidecars``), and when the sidecars it reads
differ from those it was last read with (their stamp, ``files.sidecars``) its asset
takes what the file and its sidecars say now, unless the user shifted its date
(``timeshift``). The stamp is stored with the file's row in the same transaction, so
a scan killed in between reads the file again and still follows. A sidecar that is
there but cannot be read (a time-out, no exiftool, a symlink whose real path leaves
the roots) is passed over with a warning: a new file is catalogued from what it holds
itself, and a catalogued one, with its asset, is left as it was.
"""

from __future__ import annotations

import functools
import logging
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from photo_pipeline.media import MediaError, MediaMetadata
from photo_pipeline.media.errors import UNSUPPORTED_FORMAT
from photo_pipeline.media.sidecar import (
    MAX_SIDECAR_BYTES,
    SidecarFacts,
    read_sidecar,
    sidecar_names,
    with_sidecar,
)
from photo_pipeline.media.takeout import MAX_JSON_BYTES, read_takeout, with_takeout
from photo_pipeline.media.takeout_names import takeout_names
from photo_pipeline.pipeline.files import paths, roots
from photo_pipeline.pipeline.library.catalog.record import SIDECARS_UNREAD

log = logging.getLogger(__name__)


def with_sidecars_of(
    path: str, metadata: MediaMetadata, allowed: Sequence[str], time_limit: float
) -> tuple[MediaMetadata, str | None]:
    """``metadata`` of the file at ``path`` with what its sidecars say, and the stamp
    of the sidecars read (``name:size:mtime_ns`` of each, the name in its stored form,
    ``paths.to_text``; None: none; SIDECARS_UNREAD: one is there but could not be read,
    exiftool missing included)."""
    folder, name = os.path.split(path)
    stamps: list[str] = []
    xmp = _read_first(
        folder,
        _present_in_any_case(folder, sidecar_names(name)),
        allowed,
        MAX_SIDECAR_BYTES,
        lambda opened: read_sidecar(opened, time_limit),
        stamps,
    )
    if xmp:
        metadata = with_sidecar(metadata, xmp)
    takeout = _read_first(
        folder, takeout_names(name), allowed, MAX_JSON_BYTES, _read_takeout, stamps
    )
    if takeout:
        metadata = with_takeout(metadata, takeout)
    if SIDECARS_UNREAD in stamps:
        return metadata, SIDECARS_UNREAD
    return metadata, ";".join(stamps) or None


def beside_changed_sidecars(folder: str, changed: set[str]) -> list[str]:
    """The names of the files in ``folder`` whose sidecars are among ``changed``
    (names of sidecars added, changed or removed), for the scan to read again."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    folded = {paths.name_key(name) for name in changed}
    return [
        entry.name
        for entry in entries
        if not entry.name.startswith(".")
        and entry.name not in changed
        and not (
            folded.isdisjoint(paths.name_key(n) for n in sidecar_names(entry.name))
            and changed.isdisjoint(takeout_names(entry.name))
        )
    ]


def _present_in_any_case(folder: str, names: Sequence[str]) -> Sequence[str]:
    """``names`` as they are, else the names in ``folder`` that differ from one of them
    only in case (``img_1.xmp`` beside ``IMG_1.JPG``, from a card or a share that did
    not keep case) or in the Unicode spelling of an accent (``paths.name_key``):
    organize keeps such a sidecar with its photo, so the scan reads it too."""
    if any(os.path.lexists(os.path.join(folder, name)) for name in names):
        return names
    try:
        by_case = _names_by_case(folder, os.stat(folder).st_mtime_ns)
    except OSError:
        return names
    return [found for name in names for found in by_case.get(paths.name_key(name), ())]


@functools.lru_cache(maxsize=8)  # items run in path order: a folder at a time
def _names_by_case(folder: str, mtime_ns: int) -> dict[str, tuple[str, ...]]:
    """The names in ``folder`` by ``paths.name_key``, listed once per version of the
    folder (its mtime) rather than once per photo in it."""
    found: dict[str, list[str]] = {}
    for entry in os.scandir(folder):
        found.setdefault(paths.name_key(entry.name), []).append(entry.name)
    return {key: tuple(sorted(names)) for key, names in found.items()}


def may_be_sidecar(name: str) -> bool:
    """Whether a file of this name may be some file's sidecar (XMP or Takeout JSON)."""
    return name.lower().endswith((".xmp", ".json"))


def _read_first(
    folder: str,
    names: Sequence[str],
    allowed: Sequence[str],
    max_bytes: int,
    read: Callable[[str], SidecarFacts | None],
    stamps: list[str],
) -> SidecarFacts | None:
    """``read`` the first of ``names`` there is in ``folder`` (given the path of the
    opened file), or None; its stamp goes into ``stamps`` (SIDECARS_UNREAD: it is
    there but did not read)."""
    for name in names:
        sidecar = os.path.join(folder, name)
        if not os.path.lexists(sidecar):
            continue
        try:
            with roots.pinned(sidecar, allowed) as opened:
                info = opened.stat
                if not stat.S_ISREG(info.st_mode):
                    raise MediaError(UNSUPPORTED_FORMAT, "not a regular file")
                if info.st_size > max_bytes:
                    raise MediaError(UNSUPPORTED_FORMAT, f"{info.st_size} bytes: too big")
                facts = read(opened.path)
        except (roots.PathOutsideRoots, MediaError, OSError) as exc:
            log.warning("%s: sidecar not read (%s)", sidecar, exc)
            facts = None
        if facts is None:
            stamps.append(SIDECARS_UNREAD)
        else:  # its name as paths are stored: one not UTF-8 goes into no text column
            stamps.append(f"{paths.to_text(name)}:{info.st_size}:{info.st_mtime_ns}")
        return facts
    return None


def _read_takeout(path: str) -> SidecarFacts:
    facts = read_takeout(Path(path).read_bytes())
    if facts is None:
        raise MediaError(UNSUPPORTED_FORMAT, "not a Takeout JSON")
    return facts
