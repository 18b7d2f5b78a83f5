"""Curation in XMP: what a person decided about a photo (rating, favourite, reject,
keywords, albums) read from and written to an XMP sidecar with exiftool, which keeps
every field it is not asked to change. No database, no job: ``pipeline.xmp`` decides
what to write where, and journals it.

The fields (the standard ones where a standard exists):

=============  ==================================================================
rating 0-5     ``xmp:Rating`` (0: the tag is removed; -1 read as rejected, the XMP
               spec's and Lightroom's reject)
favourite      ``xmpDM:good`` (the XMP Dynamic Media "good take" flag: a boolean)
reject         ``xmp:Label`` = ``Rejected``; a colour label another program set is
               left alone, and read as no reject
tags           ``lr:hierarchicalSubject`` (the whole paths, ``Places|France|Paris``)
               and ``dc:subject`` (every level's name, as Lightroom writes it)
albums         MWG collections, ``mwg-coll:Collections`` (``CollectionName`` = the
               album's name, ``CollectionURI`` = ``urn:photo-pipeline:album:ID``)
people         MWG regions, ``mwg-rs:Regions`` (``media.xmp_regions``), written
               with the curation when asked
=============  ==================================================================

A sidecar is written whole or not at all (:func:`write_sidecar`): exiftool writes an
edited copy to a temporary file in the same folder, which is read back and checked,
flushed to disk, and renamed over the sidecar; the folder is flushed after.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from photo_pipeline.media.exiftool import ExiftoolError, ExiftoolPool, shared_pool
from photo_pipeline.media.xmp_regions import (
    READ_ARGS,
    Regions,
    WantedRegions,
    parse_regions,
    tag_list,
    tag_number,
)

REJECTED_LABEL = "Rejected"
ALBUM_URI = "urn:photo-pipeline:album:"
TEMP_MARK = ".pp-xmp.xmp"  # ends the name of a sidecar being written: .IMG_1.xmp.pp-xmp.xmp
_READ = (
    "-struct",
    "-XMP-xmp:Rating",
    "-XMP-xmp:Label",
    "-XMP-xmpDM:Good",
    "-XMP-dc:Subject",
    "-XMP-lr:HierarchicalSubject",
    "-XMP-mwg-coll:Collections",
)
# A photo's own metadata: its rating and keywords (XMP, else IPTC).
_EMBEDDED = (*_READ, "-IPTC:Keywords")
_SEPARATOR = "|"


class XmpWriteError(Exception):
    """A sidecar could not be written (exiftool refused it, or what it wrote is not
    what was asked): the sidecar there is left as it was."""


@dataclass(frozen=True)
class XmpCuration:
    """Curation as a sidecar holds it. ``label`` is ``xmp:Label`` as found (a colour
    label of another program is kept); ``tags`` are paths joined by ``|``."""

    rating: int = 0
    favorite: bool = False
    rejected: bool = False
    tags: tuple[str, ...] = ()
    albums: tuple[str, ...] = ()
    label: str | None = field(default=None, compare=False)

    def fields(self) -> dict[str, Any]:
        """The compared fields as plain values (JSON-ready), tags and albums sorted."""
        return {
            "rating": self.rating,
            "favorite": self.favorite,
            "rejected": self.rejected,
            "tags": sorted(self.tags, key=str.casefold),
            "albums": sorted(self.albums, key=str.casefold),
        }


def parse_curation(found: dict[str, Any]) -> XmpCuration:
    """The curation in exiftool's answer (``-G0:1 -struct -n``) to the ``_READ`` tags."""
    rating_value = tag_number(found.get("XMP:XMP-xmp:Rating"))
    label = found.get("XMP:XMP-xmp:Label")
    label = label if isinstance(label, str) and label else None
    rejected = rating_value == -1 or (label or "").casefold() in {"rejected", "reject"}
    rating = 0 if rating_value is None else max(0, min(5, round(rating_value)))
    good = found.get("XMP:XMP-xmpDM:Good")
    favorite = good is True or (isinstance(good, str) and good.casefold() == "true")
    hierarchical = _texts(found.get("XMP:XMP-lr:HierarchicalSubject"))
    flat = _texts(found.get("XMP:XMP-dc:Subject")) or _texts(found.get("IPTC:Keywords"))
    levels = {level.casefold() for path in hierarchical for level in path.split(_SEPARATOR)}
    tags = _unique([*hierarchical, *(name for name in flat if name.casefold() not in levels)])
    albums = []
    for collection in tag_list(found.get("XMP:XMP-mwg-coll:Collections")):
        if isinstance(collection, dict):
            name = collection.get("CollectionName")
            if isinstance(name, str) and name.strip():
                albums.append(name.strip())
    return XmpCuration(rating, favorite, rejected, tags, _unique(albums), label)


def read_curation(
    path: str, *, embedded: bool = False, pool: ExiftoolPool | None = None
) -> XmpCuration | None:
    """The curation in the sidecar (or, ``embedded``, the photo) at ``path``; None
    without exiftool. ExiftoolError on a time-out."""
    found = (pool or shared_pool()).read_tags(path, _EMBEDDED if embedded else _READ)
    return None if found is None else parse_curation(found)


def read_sidecar(
    path: str, *, pool: ExiftoolPool | None = None
) -> tuple[XmpCuration, Regions] | None:
    """The curation and the regions in the sidecar at ``path`` (one exiftool call);
    None without exiftool. ExiftoolError on a time-out."""
    found = (pool or shared_pool()).read_tags(path, (*_READ, *READ_ARGS))
    return None if found is None else (parse_curation(found), parse_regions(found))


def assignments(
    wanted: XmpCuration, found: XmpCuration | None, album_ids: dict[str, int] | None = None
) -> list[str]:
    """exiftool's arguments that make a sidecar holding ``found`` hold ``wanted``
    (``album_ids``: each album's id, for its collection URI)."""
    args = [f"-XMP-xmp:Rating={wanted.rating or ''}"]
    args.append(f"-XMP-xmpDM:Good={'True' if wanted.favorite else ''}")
    label = found.label if found is not None else None
    if wanted.rejected:
        args.append(f"-XMP-xmp:Label={REJECTED_LABEL}")
    elif label is not None and label.casefold() in {"rejected", "reject"}:
        args.append("-XMP-xmp:Label=")  # a colour label stays
    names = _unique(level for path in wanted.tags for level in path.split(_SEPARATOR))
    args += _list_args("-XMP-dc:Subject", names)
    args += _list_args("-XMP-lr:HierarchicalSubject", wanted.tags)
    collections = [
        "{CollectionName=" + _escaped(name) + ",CollectionURI=" + _escaped(uri) + "}"
        for name, uri in _album_uris(wanted, album_ids or {})
    ]
    args += _list_args("-XMP-mwg-coll:Collections", collections)
    return args


@dataclass(frozen=True)
class Written:
    """A sidecar as written: its bytes' SHA-256, its size and mtime (its stamp)."""

    sha256: str
    size: int
    mtime_ns: int
    regions: list[dict[str, Any]] | None = None  # the named faces, when regions were written


def write_sidecar(
    path: str,
    wanted: XmpCuration,
    album_ids: dict[str, int] | None = None,
    *,
    regions: WantedRegions | None = None,
    pool: ExiftoolPool | None = None,
    time_limit: float | None = None,
) -> Written:
    """Make the sidecar at ``path`` hold ``wanted`` (made when there is none), every
    other field kept: an edited copy in a temporary file beside it, checked, flushed,
    renamed over it, the folder flushed. ``album_ids`` names each album's URI;
    ``regions``, the faces to write as MWG regions (None: the regions are left as
    they are). Raises XmpWriteError (nothing changed) or OSError."""
    if not _sendable(path):
        # exiftool takes its arguments as UTF-8 lines: such a name would fail the whole
        # job (or name another file), so its item fails instead.
        raise XmpWriteError(f"{path!r}: a name that is not UTF-8 or has a line break")
    pool = pool or shared_pool()
    temp = temp_of(path)
    remove_temp(temp)
    exists = os.path.lexists(path)
    read = read_sidecar(path, pool=pool) if exists else None
    if exists and read is None:
        raise XmpWriteError("exiftool is not installed")
    found, found_regions = read if read is not None else (None, Regions())
    args = assignments(wanted, found, album_ids)
    if regions is not None:
        args += regions.assignments(found_regions)
    args += ["-o", temp]
    if exists:
        args.append(_argument_path(path))
    try:
        pool.execute(args, time_limit)
        written = read_sidecar(temp, pool=pool) if os.path.exists(temp) else None
    except ExiftoolError as exc:
        remove_temp(temp)
        raise XmpWriteError(f"exiftool: {exc}") from exc
    problem = None
    if written is None:
        problem = "exiftool did not write the sidecar"
    elif written[0].fields() != wanted.fields():
        problem = f"exiftool wrote {written[0].fields()}, not {wanted.fields()}"
    elif regions is not None and written[1].record() != regions.expected(found_regions):
        expected = regions.expected(found_regions)
        problem = f"exiftool wrote the regions {written[1].record()}, not {expected}"
    if problem is not None or written is None:
        remove_temp(temp)
        raise XmpWriteError(problem or "exiftool did not write the sidecar")
    done = replace_with(temp, path)
    if regions is None:
        return done
    return Written(done.sha256, done.size, done.mtime_ns, written[1].record())


def replace_with(temp: str, path: str) -> Written:
    """Flush ``temp`` to disk and rename it over ``path``, then flush the folder."""
    with open(temp, "rb+") as file:
        data = file.read()
        os.fsync(file.fileno())
        info = os.fstat(file.fileno())
    os.replace(temp, path)
    sync_folder(os.path.dirname(path) or ".")
    return Written(hashlib.sha256(data).hexdigest(), info.st_size, info.st_mtime_ns)


def write_bytes(path: str, data: bytes) -> Written:
    """Put exactly ``data`` at ``path`` the same way (an undo's restore)."""
    temp = temp_of(path)
    remove_temp(temp)
    with open(temp, "xb") as file:
        file.write(data)
    return replace_with(temp, path)


def temp_of(path: str) -> str:
    """The temporary file a sidecar is written to: hidden, beside it, one name per
    sidecar (one writer at a time), so that a writer killed mid-way leaves a file the
    next one removes."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f".{name}{TEMP_MARK}")


def sync_folder(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def remove_temp(temp: str) -> None:
    """A temporary file a killed writer left (its name is ours alone)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)


def file_sha256(path: str) -> str | None:
    """The SHA-256 of the file at ``path``, None when there is none."""
    try:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except FileNotFoundError:
        return None


def _album_uris(wanted: XmpCuration, uris: dict[str, int]) -> list[tuple[str, str]]:
    return [
        (name, f"{ALBUM_URI}{uris[name]}" if name in uris else ALBUM_URI.rstrip(":"))
        for name in wanted.albums
    ]


def _list_args(tag: str, values: Sequence[str]) -> list[str]:
    # One assignment a value: together they replace the list; none: it is removed.
    return [f"{tag}={value}" for value in values] if values else [f"{tag}="]


def _escaped(text: str) -> str:
    """``text`` inside exiftool's serialized structure (``|`` escapes the syntax)."""
    for char in "|,{}[]":
        text = text.replace(char, "|" + char)
    return text


def _sendable(path: str) -> bool:
    """``path`` can be given to exiftool as one line of its argument file."""
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return not any(c in path for c in "\n\r")


def _argument_path(path: str) -> str:
    return f"./{path}" if path.startswith("-") else path


def _texts(value: object) -> list[str]:
    return [str(v).strip() for v in tag_list(value) if str(v).strip()]


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for value in values:
        seen.setdefault(value.casefold(), value)
    return tuple(seen.values())
