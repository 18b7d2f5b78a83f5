"""Confinement to roots: the real path of a file, resolved at the moment of use, must
stay inside one of a set of folders (``PHOTO_PIPELINE_ALLOWED_ROOTS``, and for the
library's own files its registered sources).

Checking a name and then using it leaves a window in which a symlink can be swapped in.
:func:`open_inside` and :func:`pinned` close it by checking the file actually opened
(its descriptor), not the name. :func:`real_path_inside` is for callers that must hand
a name on: it narrows the window to the moment of use but cannot close it.

Roots are compared as given, so pass real paths: ``Settings`` resolves the allowed
roots when it reads them and sources are stored resolved. Resolving a root again at
use would let a root that was swapped for a symlink carry its new target inside.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.config import allowed_roots_from_env
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.jobs.workers import pid_alive
from photo_pipeline.media import MediaError
from photo_pipeline.media.files import media_error_from_os

PATH_OUTSIDE_ROOTS = "path_outside_roots"
SYMLINK_OUTSIDE_ROOTS = "symlink_outside_roots"

Root = str | os.PathLike[str]
_PROC_FD = "/proc/self/fd"
_STAND_IN_PREFIX = "photo-pipeline-open-"  # pinned()'s folders, one per opened file
_NAME_MAX = 255  # bytes in a file name, on every common filesystem
_LINE_BREAKS = str.maketrans("\n\r", "\ufffd\ufffd")


class PathOutsideRoots(PhotoPipelineError):
    """The real path (symlinks resolved) leaves every root. ``code`` is
    ``symlink_outside_roots`` when a symlink led there, else ``path_outside_roots``."""

    code = PATH_OUTSIDE_ROOTS
    status = 403


def is_inside(real: str, roots: Iterable[Root]) -> bool:
    """Whether the already-resolved ``real`` is one of ``roots`` or below one."""
    for root in roots:
        top = os.path.abspath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def real_path_inside(path: Root, roots: Sequence[Root], what: str = "path") -> str:
    """The real path of ``path`` (every symlink and ``..`` resolved now), or
    :class:`PathOutsideRoots` when it leaves every root. An empty ``roots`` confines
    nothing (``PHOTO_PIPELINE_ALLOWED_ROOTS`` unset): pass the roots that apply."""
    real = os.path.realpath(path)
    if roots and not is_inside(real, roots):
        raise _outside(path, real, what)
    return real


def _outside(path: Root, real: str, what: str) -> PathOutsideRoots:
    # A symlink led outside when the name itself (``..`` folded) was not already there.
    code = SYMLINK_OUTSIDE_ROOTS if real != os.path.abspath(path) else PATH_OUTSIDE_ROOTS
    return PathOutsideRoots(
        code,
        f"{what}: {os.fsdecode(path)!r} resolves to {real!r}, outside the allowed roots",
        path=os.fsdecode(path),
    )


def symlink_below(path: Root, root: Root) -> str | None:
    """The first of ``path`` and its parents below ``root`` that is a symlink (root
    itself excluded: it was chosen by the user), else None. A missing component ends
    the walk: nothing below it exists to be a link."""
    root_s = os.path.abspath(root)
    path_s = os.path.abspath(path)
    relative = os.path.relpath(path_s, root_s)
    if relative == os.curdir:
        return None
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        raise ValueError(f"{path_s!r} is not below {root_s!r}")
    current = root_s
    for part in relative.split(os.sep):
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(mode):
            return current
    return None


def open_inside(path: Root, roots: Sequence[Root], flags: int = os.O_RDONLY) -> int:
    """A descriptor for ``path`` whose real file is inside ``roots`` (empty: anywhere).

    The check is made on the open descriptor, so a symlink swapped in between an
    earlier check and this call cannot lead outside. Raises :class:`PathOutsideRoots`
    (the descriptor closed) or ``OSError`` from ``open``."""
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        if roots:
            real = _opened_path(fd, path)
            if not is_inside(real, roots):
                raise _outside(path, real, "path")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _opened_path(fd: int, path: Root) -> str:
    if os.path.isdir(_PROC_FD):
        return os.readlink(f"{_PROC_FD}/{fd}")
    # Without /proc: the resolved name must still be the file that was opened.
    real = os.path.realpath(path)
    opened, named = os.fstat(fd), os.stat(real)
    if (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino):
        raise PathOutsideRoots(SYMLINK_OUTSIDE_ROOTS, f"{os.fsdecode(path)!r} changed while opened")
    return real


@dataclass(frozen=True)
class Pinned:
    """An original held open: ``path`` names that very file (with its own file name,
    which capture-time parsing reads) for code that takes only paths."""

    path: str
    stat: os.stat_result


@contextmanager
def pinned(path: Root, roots: Sequence[Root]) -> Iterator[Pinned]:
    """Open ``path`` now, refuse it when the opened file lies outside ``roots``
    (:class:`PathOutsideRoots`), and yield a path that keeps naming the opened file
    whatever happens to ``path`` meanwhile: a symlink to ``/proc/PID/fd/N`` in a
    private folder, named like the original. OS errors become :class:`MediaError`,
    and a MediaError raised inside names ``path``, not the stand-in.

    Without ``/proc`` (not Linux) the stand-in is the real path checked just now."""
    shown = os.fsdecode(path)
    _remove_stale_stand_ins_once()
    # Checked on the name first, so a link leading outside is not even opened (opening
    # a device can have effects); then on the descriptor, against a swap in between.
    real_path_inside(path, roots)
    try:
        # O_NONBLOCK: a FIFO at the path must not block the open (media refuses it).
        fd = open_inside(path, roots, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise media_error_from_os(exc, shown) from exc
    folder = None
    try:
        info = os.fstat(fd)
        if not os.path.isdir(_PROC_FD):
            yield Pinned(real_path_inside(path, roots), info)
            return
        # A fresh folder per file: libvips caches images by file name.
        folder = tempfile.mkdtemp(prefix=_STAND_IN_PREFIX)
        stand_in = os.path.join(folder, _stand_in_name(path))
        # This process's id, not "self": a helper program it runs on the stand-in
        # (same user) reaches the same descriptor.
        os.symlink(f"/proc/{os.getpid()}/fd/{fd}", stand_in)
        try:
            yield Pinned(stand_in, info)
        except MediaError as exc:
            detail = exc.detail.replace(stand_in, shown)
            raise MediaError(exc.code, detail, **exc.extra) from exc.__cause__
    finally:
        if folder is not None:
            _remove_stand_in(folder)
        os.close(fd)


def _stand_in_name(path: Root) -> str:
    """The original's name (a date in it is read from there), with any bytes that are
    not UTF-8 replaced: libvips takes only UTF-8 names, and a name from a Latin-1
    card or share would otherwise fail the job, not just its file. A line break is
    replaced too: exiftool takes its arguments a line each (a sidecar named with a
    newline was passed over, one ending in CR not found). Each replaced byte takes
    three (U+FFFD), so a long name is cut back to the bytes a name may have, its
    extension kept: else its photo would not read at all."""
    name = os.fsencode(os.path.basename(path)).decode("utf-8", "replace")
    name = name.translate(_LINE_BREAKS)
    if len(name.encode()) <= _NAME_MAX:
        return name
    stem, extension = os.path.splitext(name)
    if len(extension.encode()) > _NAME_MAX // 2:  # no extension: a dot in a long name
        stem, extension = name, ""
    room = _NAME_MAX - len(extension.encode())
    return stem.encode()[:room].decode("utf-8", "ignore") + extension


@functools.cache
def _remove_stale_stand_ins_once() -> None:
    remove_stale_stand_ins()


def remove_stale_stand_ins(max_age_empty: float = 3600.0) -> int:
    """Remove the stand-in folders of :func:`pinned` that a killed process could not
    (their links name a process that is gone); returns how many. A process that is
    alive, or a link this cannot read, keeps its folder; so does an empty one younger
    than ``max_age_empty`` seconds (its process may be about to make its link)."""
    removed = 0
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.startswith(_STAND_IN_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            names = os.listdir(entry.path) if stat.S_ISDIR(info.st_mode) else None
        except OSError:
            continue
        if names is None or info.st_uid != os.getuid():
            continue
        if not names and time.time() - info.st_mtime < max_age_empty:
            continue
        owners = [_owner(os.path.join(entry.path, name)) for name in names]
        if any(pid is None or pid_alive(pid) for pid in owners):
            continue
        with contextlib.suppress(OSError):  # another process sweeping at once
            _remove_stand_in(entry.path)
            removed += 1
    return removed


def _remove_stand_in(folder: str) -> None:
    """Remove a stand-in folder of :func:`pinned` and the link in it."""
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)


def _owner(link: str) -> int | None:
    """The process whose descriptor a stand-in links to, or None."""
    try:
        found = re.fullmatch(r"/proc/(\d+)/fd/\d+", os.readlink(link))
    except OSError:
        return None
    return int(found[1]) if found else None


def require_sources_inside(
    session_factory: sessionmaker[Session], roots: Sequence[str] | None, *also: str
) -> None:
    """A job queued under ``roots`` (the API's allowed roots, carried in its params;
    None: a CLI job, confined to the library's own sources) refuses to run while a
    registered source, or one of ``also`` (its destination), lies outside them: one
    registered after it was queued would otherwise be planned over
    (``path_outside_roots``, an ``ItemError``: the job fails, nothing is touched)."""
    if not roots:
        return
    outside = [p for p in (*_registered(session_factory), *also) if not is_inside(p, roots)]
    if outside:
        raise ItemError(
            PATH_OUTSIDE_ROOTS,
            f"{', '.join(sorted(outside))}: outside the roots this job was queued under "
            f"({', '.join(roots)}); nothing was done",
        )


def library_roots(session_factory: sessionmaker[Session]) -> tuple[str, ...]:
    """Where the library's files may really be: every registered source, and the
    allowed roots of this process's environment (read now, not when the job was
    queued)."""
    return (*_registered(session_factory), *(str(root) for root in allowed_roots_from_env()))


def _registered(session_factory: sessionmaker[Session]) -> list[str]:
    """The registered sources' paths (real paths, as stored)."""
    with read_session(session_factory) as session:
        return list(session.scalars(select(sources.c.path)))
