"""Confinement to roots: the real path of a file, resolved at the moment of use, must
stay inside one of a set of folders (``PHOTO_PIPELINE_ALLOWED_ROOTS``, or the library's
registered sources for its files).

Checking a name and then using it leaves a window in which a symlink can be swapped in;
:func:`open_inside` closes it by checking the file actually opened (its descriptor),
not the name. :func:`real_path_inside` is for callers that must hand a path on (it
narrows the window to the moment of use; it cannot close it).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Sequence

from photo_pipeline.errors import PhotoPipelineError

PATH_OUTSIDE_ROOTS = "path_outside_roots"
SYMLINK_OUTSIDE_ROOTS = "symlink_outside_roots"

Root = str | os.PathLike[str]


class PathOutsideRoots(PhotoPipelineError):
    """The real path (symlinks resolved) leaves every root. ``code`` is
    ``path_outside_roots``, or ``symlink_outside_roots`` when a symlink led there."""

    code = PATH_OUTSIDE_ROOTS
    status = 403


def real_roots(roots: Iterable[Root]) -> tuple[str, ...]:
    """The roots' own real paths (a root may itself sit behind a symlink)."""
    return tuple(os.path.realpath(root) for root in roots)


def is_inside(real: str, roots: Iterable[Root]) -> bool:
    """Whether the already-resolved ``real`` is one of ``roots`` or below one."""
    for root in real_roots(roots):
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
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
    itself excluded; it was chosen by the user), else None. A missing component ends
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

    The check is made on the open descriptor, so a symlink swapped in between a check
    and this call cannot lead outside. Raises :class:`PathOutsideRoots` (closing the
    descriptor) or ``OSError`` from ``open``."""
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    try:
        if roots:
            real = _descriptor_path(fd, path)
            if not is_inside(real, roots):
                raise _outside(path, real, "path")
    except BaseException:
        os.close(fd)
        raise
    return fd


def descriptor_path(fd: int) -> str:
    """A path that names the very file behind ``fd`` (Linux: ``/proc/self/fd/N``), for
    libraries that take only paths; a swapped symlink at the original name cannot
    redirect it. Valid while ``fd`` stays open."""
    return f"/proc/self/fd/{fd}" if sys.platform.startswith("linux") else f"/dev/fd/{fd}"


def _descriptor_path(fd: int, path: Root) -> str:
    if sys.platform.startswith("linux"):
        return os.readlink(f"/proc/self/fd/{fd}")
    # Elsewhere: compare the descriptor's file with the resolved name; a swap between
    # open and realpath shows as a different inode.
    real = os.path.realpath(path)
    opened, named = os.fstat(fd), os.stat(real)
    if (opened.st_dev, opened.st_ino) != (named.st_dev, named.st_ino):
        raise PathOutsideRoots(SYMLINK_OUTSIDE_ROOTS, f"{os.fsdecode(path)!r} changed while opened")
    return real
