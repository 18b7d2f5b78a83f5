"""Whether a process holds a file open for writing: a copy in progress (``cp``, an
rsync, a phone-backup app) is not taken until its writer let go. A sweep of
``/proc/*/fd`` for the files asked about, run only for files whose size and mtime
have already settled; processes of other users cannot be looked into (unless this runs
as root), so for their writers the settle time is what remains."""

from __future__ import annotations

import os
from collections.abc import Collection

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR


def open_for_writing(files: Collection[str]) -> set[str]:
    """The absolute real paths among ``files`` some process (of this user, or any
    when root) has open for writing now."""
    if not files:
        return set()
    wanted = set(files)
    held: set[str] = set()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return held
    for pid in pids:
        fd_folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_folder)
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_folder}/{fd}")
            except OSError:
                continue
            if target in wanted and target not in held and _writable(pid, fd):
                held.add(target)
    return held


def _writable(pid: str, fd: str) -> bool:
    """Whether descriptor ``fd`` of ``pid`` was opened for writing (its fdinfo flags)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as fp:
            for line in fp:
                if line.startswith("flags:"):
                    return bool(int(line.split()[1], 8) & _WRITE_FLAGS)
    except (OSError, ValueError, IndexError):
        return False
    return False
