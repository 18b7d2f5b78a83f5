"""Listing a source's files for the scan: every file below the folder, once.

Left out, besides hidden entries (``.DS_Store``, AppleDouble ``._*`` files,
``.thumbnails``, ``.Trashes``): folders that hold no photo of the user's. A library
home's own folders (in a folder with the marker, ``pipeline.library.home``: renditions and
quarantined copies are no originals); registered sources inside this one (each file
belongs to the innermost source that holds it, so no file is catalogued twice); and
the folders NAS systems, Windows and Lightroom keep for themselves
(``SYSTEM_FOLDERS``: Synology's ``@eaDir`` thumbnails, recycle bins, snapshots,
``.lrdata`` previews; Immich skips the same).

A folder that cannot be listed (no permission) is reported, not taken for empty: the
files catalogued below it are not gone, and its item fails with ``unreadable_folder``.

A walk ``within`` given paths (a watcher's changed files, ``pipeline.watch``) lists
only those, and everything below the ones that are folders, under the same rules: each
is reached by descriptor below the root with no link followed (``files.resolve``), a
path naming ``..`` or a link on its way is not listed, and what the whole walk leaves
out (hidden, system, a library home's own, another source's) is left out here too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterator

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.pipeline.files import resolve, spots
from photo_pipeline.pipeline.library.home import MARKER, QUARANTINE, STORE

# Compared case-insensitively (FAT, NTFS and SMB shares ignore case).
SYSTEM_FOLDERS = frozenset(
    {
        "@eadir",  # Synology: thumbnails and metadata of every photo
        "#recycle",  # Synology's recycle bin
        "#snapshot",  # Synology's snapshots (the same photos again)
        "@recycle",  # QNAP's recycle bin
        "@recently-snapshot",  # QNAP's snapshots
        "$recycle.bin",  # Windows' recycle bin (a card formatted there too)
        "system volume information",  # Windows
        "lost+found",  # ext4's, readable by root only
    }
)
# Lightroom's previews and smart previews (``Catalog Previews.lrdata``).
SYSTEM_SUFFIXES = (".lrdata",)

Fingerprint = tuple[int, int, int]  # size, mtime_ns, inode


def is_system_folder(name: str) -> bool:
    folded = name.casefold()
    return folded in SYSTEM_FOLDERS or folded.endswith(SYSTEM_SUFFIXES)


def walk(
    root: str,
    *,
    skip: Collection[str] = (),
    unreadable: list[str] | None = None,
    within: Collection[str] | None = None,
    not_files: list[str] | None = None,
) -> Iterator[tuple[str, Fingerprint | None]]:
    """Yield ``(relative path, (size, mtime_ns, inode))`` for every file below
    ``root``; a link that leads nowhere (to nothing, or round in a loop) has the link's
    own, so that its failure is remembered like any file's; None when even that cannot
    be had (its item then fails with the reason). Folders at the relative paths in
    ``skip`` are not entered. A folder that cannot be listed is appended to
    ``unreadable`` ("" for ``root``) and yielded with None (not ``root``).
    Directory symlinks are not followed, so the walk always ends.

    With ``within`` (relative paths), only those are listed, and all below the ones
    that are folders; the given paths that are no file now (folders, or gone) are
    appended to ``not_files``, for the caller to look below them in the catalogue."""
    # By descriptor, no link followed: the root swapped for a link since it was
    # registered (root_changed), or a folder below it, is not listed at all.
    try:
        root_fd = spots.open_root(root)
    except ItemError as exc:
        if exc.code != "missing" and unreadable is not None:
            unreadable.append("")
        return
    try:
        stack = [""]
        if within is not None:
            stack = []
            yield from _named(root_fd, within, stack, skip, unreadable, not_files)
        while stack:
            folder = stack.pop()
            try:
                # One lookup below the root's descriptor (openat2 RESOLVE_BENEATH).
                fd = resolve.open_folder_beneath(root_fd, folder)
            except (FileNotFoundError, NotADirectoryError):
                continue  # removed during the walk: what was below it is gone
            except OSError:  # unreadable, or a folder swapped for a link
                if unreadable is not None:
                    unreadable.append(folder)
                if folder:
                    yield folder, None
                continue
            try:
                yield from _listed(root, folder, fd, stack, skip, unreadable)
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)


def _listed(
    root: str,
    folder: str,
    fd: int,
    stack: list[str],
    skip: Collection[str],
    unreadable: list[str] | None,
) -> Iterator[tuple[str, Fingerprint | None]]:
    """The files of the open folder ``fd`` (``folder`` below ``root``); its folders go
    on ``stack``."""
    try:
        entries = list(os.scandir(fd))
    except OSError:
        if unreadable is not None:
            unreadable.append(folder)
        if folder:
            yield folder, None
        return
    # A library home: its renditions and quarantined copies are not the user's.
    own = (STORE, QUARANTINE) if any(e.name == MARKER for e in entries) else ()
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.name.startswith("."):
            continue
        relative = os.path.join(folder, entry.name) if folder else entry.name
        if entry.is_dir(follow_symlinks=False):
            if not (relative in skip or entry.name in own or is_system_folder(entry.name)):
                stack.append(relative)
            continue
        try:
            info = entry.stat()
        except OSError:
            yield relative, listed_fingerprint(os.path.join(root, relative))
            continue
        if stat.S_ISDIR(info.st_mode):
            continue  # a symlink to a folder
        yield relative, (info.st_size, info.st_mtime_ns, info.st_ino)


def _named(
    root_fd: int,
    within: Collection[str],
    stack: list[str],
    skip: Collection[str],
    unreadable: list[str] | None,
    not_files: list[str] | None,
) -> Iterator[tuple[str, Fingerprint | None]]:
    """The files among ``within`` below the open root ``root_fd``; its folders go on
    ``stack`` (walked whole), and what is no file to ``not_files``."""
    for relative in _outermost(within):
        if not _may_list(root_fd, relative, skip):
            continue
        parent, name = os.path.split(relative)
        try:
            fd = resolve.open_folder_beneath(root_fd, parent)
        except (FileNotFoundError, NotADirectoryError):
            if not_files is not None:
                not_files.append(relative)  # its folder is gone, and it with it
            continue
        except OSError:  # unreadable, or a folder on its way swapped for a link
            if unreadable is not None:
                unreadable.append(parent)
            continue
        try:
            try:
                info = os.stat(name, dir_fd=fd)
            except OSError:
                info = None  # gone, or a link that leads nowhere (its own, as walk())
            if info is None:
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    if not_files is not None:
                        not_files.append(relative)
                    continue
            if stat.S_ISDIR(info.st_mode):
                if not stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    stack.append(relative)  # a folder that arrived whole: all it holds
                if not_files is not None:
                    not_files.append(relative)
                continue
            yield relative, (info.st_size, info.st_mtime_ns, info.st_ino)
        finally:
            os.close(fd)


def _outermost(within: Collection[str]) -> list[str]:
    """``within`` in order, without the paths below another of them."""
    given = {os.path.normpath(p) for p in within if p and p != os.curdir}
    return sorted(p for p in given if not any(a in given for a in _ancestors(p) if a))


def _ancestors(relative: str) -> Iterator[str]:
    """ "" and each folder on the way to ``relative`` ("a", "a/b" for "a/b/c")."""
    parts = relative.split(os.sep)
    for n in range(len(parts)):
        yield os.sep.join(parts[:n])


def listable(root: str, relatives: Collection[str], skip: Collection[str] = ()) -> list[str]:
    """Those of ``relatives`` the whole walk of ``root`` would list, were they files:
    what a watcher hands to a scan (hidden temporaries of a sync, a library home's
    renditions and the like left out)."""
    try:
        root_fd = spots.open_root(root)
    except ItemError:
        return []
    try:
        return [relative for relative in relatives if _may_list(root_fd, relative, skip)]
    finally:
        os.close(root_fd)


def _may_list(root_fd: int, relative: str, skip: Collection[str]) -> bool:
    """Whether the whole walk would list ``relative``: no ``..`` nor absolute path,
    nothing hidden or of the system on its way, not inside another source nor in a
    library home's own folders."""
    if os.path.isabs(relative):
        return False
    parts = relative.split(os.sep)
    if any(part in ("", os.curdir, os.pardir) or part.startswith(".") for part in parts):
        return False
    if any(is_system_folder(part) for part in parts) or below(relative, skip):
        return False
    for folder, part in zip(_ancestors(relative), parts, strict=False):
        if part in (STORE, QUARANTINE) and _holds_marker(root_fd, folder):
            return False
    return True


def _holds_marker(root_fd: int, folder: str) -> bool:
    try:
        fd = resolve.open_folder_beneath(root_fd, folder)
    except OSError:
        return False
    try:
        os.stat(MARKER, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def listed_fingerprint(path: str) -> Fingerprint | None:
    """A file's fingerprint as walk() lists it: what it names, else the link itself."""
    for follow in (True, False):
        try:
            info = os.stat(path, follow_symlinks=follow)
        except OSError:
            continue
        return info.st_size, info.st_mtime_ns, info.st_ino
    return None


def below(relative: str, folders: Collection[str]) -> bool:
    """Whether ``relative`` lies in one of ``folders`` ("" holds everything)."""
    return any(
        not folder or relative == folder or relative.startswith(folder + os.sep)
        for folder in folders
    )
