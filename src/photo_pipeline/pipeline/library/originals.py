"""An asset's original file, opened for serving (playback, download).

``open_original(session_factory, asset_id, part)`` opens one present file of the asset
(``part="original"``) or of a Live Photo's motion part (``part="motion"``; for a
Google/Samsung Motion Photo, the window of its file that holds the clip) and returns
it as an open descriptor (:class:`OpenedOriginal`). The file is opened below its
source's folder by descriptor, no symlink followed (``files.spots``), so a folder or
file swapped for a link after the scan cannot make the server open, let alone read, a
file outside the library's roots. The caller owns the descriptor and closes it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, files, sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media.motion_photo import embedded_video
from photo_pipeline.pipeline.files import paths, roots, spots
from photo_pipeline.pipeline.library.catalog import PRESENT

PARTS = ("original", "motion")
# O_NONBLOCK: a FIFO swapped in must not hang the server (it is then refused: no file).
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
# What browsers play in a <video> element: H.264 or HEVC in MP4/MOV.
PLAYABLE_CODECS = frozenset({"h264", "hevc"})
PLAYABLE_FORMATS = frozenset({"mp4", "mov", "m4v"})


class OriginalNotFound(PhotoPipelineError):
    code = "original_not_found"
    status = 404


@dataclass(frozen=True)
class OpenedOriginal:
    fd: int
    size: int  # of what is served: the file, or the window of it
    mime: str
    name: str  # the file's name, for a download
    offset: int = 0  # where what is served starts in the file (a Motion Photo's clip)
    window: bool = False  # a part of the file, not all of it


def playable(fmt: str | None, codec: str | None) -> bool:
    """Whether a browser's <video> plays this format and codec."""
    return fmt in PLAYABLE_FORMATS and codec in PLAYABLE_CODECS


def open_original(
    session_factory: sessionmaker[Session], asset_id: int, part: str = "original"
) -> OpenedOriginal:
    """Open the original of ``asset_id`` (or its motion part); raises OriginalNotFound."""
    with read_session(session_factory) as session:
        target: int | None = asset_id
        clip_inside = False  # a Motion Photo: the clip appended to its JPEG
        if part == "motion":
            target = session.scalar(
                select(assets.c.id).where(assets.c.live_of == asset_id).order_by(assets.c.id)
            )
            if target is None:
                clip_inside = bool(
                    session.scalar(select(assets.c.is_motion_photo).where(assets.c.id == asset_id))
                )
                target = asset_id
            if target == asset_id and not clip_inside:
                raise OriginalNotFound("original_not_found", f"asset {asset_id} has no motion part")
        mime = session.scalar(select(assets.c.mime).where(assets.c.id == target))
        if mime is None:
            raise OriginalNotFound("asset_not_found", f"no asset {asset_id}")
        candidates = session.execute(
            select(sources.c.path.label("root"), files.c.path, files.c.size)
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id == target, files.c.state == PRESENT)
            .order_by(files.c.id)
        ).all()
    allowed = roots.library_roots(session_factory)
    for row in candidates:
        relative = paths.from_text(row.path)
        fd = _open_below(row.root, relative, allowed)
        if fd is None:
            continue  # gone or led elsewhere since the scan: try another copy
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != row.size:
            os.close(fd)  # replaced by something else since it was catalogued
            continue
        name = os.path.basename(relative)
        if not clip_inside:
            return OpenedOriginal(fd, info.st_size, mime, name)
        clip = _clip_of(fd, info.st_size)
        if clip is None:
            os.close(fd)
            continue
        return OpenedOriginal(fd, clip[1], clip[2], name, offset=clip[0], window=True)
    raise OriginalNotFound("original_not_found", f"no readable file of asset {asset_id}")


def _open_below(root: str, relative: str, allowed: Sequence[str]) -> int | None:
    """The file ``relative`` below the source ``root``, opened from the root's folder
    by descriptor, no link followed on the way (``spots.open_folder``): a folder swapped
    for a link since the scan leads nowhere, and nothing outside is even opened. A
    photo that is itself a link (the scan takes those whose target is inside the
    roots) is checked by name before it is opened, and by descriptor after."""
    folder_path, name = os.path.split(relative)
    try:
        folder = spots.open_folder(root, folder_path)
    except ItemError:
        return None
    try:
        return os.open(name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=folder)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            return None
    finally:
        os.close(folder)
    path = os.path.join(root, relative)
    try:
        roots.real_path_inside(path, allowed)
        return roots.open_inside(path, allowed, _READ_FLAGS)
    except (OSError, roots.PathOutsideRoots):
        return None


def _clip_of(fd: int, size: int) -> tuple[int, int, str] | None:
    """(offset, length, mime) of the clip inside an opened Motion Photo, read from its
    XMP (media.motion_photo); None when it holds none any more."""
    with os.fdopen(os.dup(fd), "rb") as fp:
        try:
            clip = embedded_video(fp, size)
        except OSError:
            return None
    return None if clip is None else (clip.offset, clip.length, clip.mime)
