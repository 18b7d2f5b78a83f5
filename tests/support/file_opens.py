"""Which files below a folder were opened or read, by any process: Linux inotify
through ctypes. The kernel queues an event when the open or read happens, so reading
the queue afterwards needs no waiting, and, unlike atime, mount options cannot hide it.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

IN_ACCESS = 0x001
IN_OPEN = 0x020
_EVENT = struct.Struct("iIII")


class Opens:
    def __init__(self, fd: int, folders: dict[int, Path]) -> None:
        self._fd = fd
        self._folders = folders

    def seen(self) -> list[str]:
        """Each file opened or read since the watch began, as ``"open PATH"`` or
        ``"read PATH"``."""
        found = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                offset += _EVENT.size + size
                what = "read" if mask & IN_ACCESS else "open"
                found.append(f"{what} {self._folders[wd] / os.fsdecode(name)}")


@contextmanager
def watch_opens(root: Path) -> Iterator[Opens]:
    """Watch every folder below ``root`` (as it is now) for opens and reads."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        pytest.skip("inotify is Linux-only")
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        pytest.skip(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
    folders: dict[int, Path] = {}
    try:
        # Listed before watching: the listing itself opens the folders.
        for folder in [folder for folder, _, _ in os.walk(root)]:
            wd = libc.inotify_add_watch(fd, os.fsencode(folder), IN_OPEN | IN_ACCESS)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {folder}")
            folders[wd] = Path(folder)
        yield Opens(fd, folders)
    finally:
        os.close(fd)
