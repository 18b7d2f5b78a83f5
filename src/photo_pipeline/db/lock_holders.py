"""Who holds a SQLite database's write lock, and what that process is doing: read from
Linux's ``/proc/locks`` and ``/proc/PID/stat``; elsewhere, or when they cannot be
read, nobody is known.

SQLite takes POSIX advisory locks (``fcntl``), which ``/proc/locks`` lists with the
holder's PID and the file's device and inode. In WAL mode the write lock is byte 120
of the ``-shm`` file (its ``WAL_WRITE_LOCK``); in rollback-journal mode, and while the
last connection closes a WAL database, the lock bytes of the database file from
``0x40000000`` (PENDING, RESERVED and the SHARED range, held for writing). A process
stopped (SIGSTOP, a suspended session) while it holds one stops every writer of the
library until it is continued or killed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PROC_LOCKS = Path("/proc/locks")
# The -shm byte of the WAL write lock: UNIX_SHM_BASE (120) + WAL_WRITE_LOCK (0).
WAL_WRITE_LOCK_BYTE = 120
# The database file's lock bytes: PENDING_BYTE, RESERVED_BYTE, then the SHARED range.
PENDING_BYTE = 0x40000000
SHARED_END = PENDING_BYTE + 2 + 510 - 1

# /proc/PID/stat's process states, as a sentence ends them.
_STATES = {
    "R": "running",
    "S": "waiting (sleeping)",
    "D": "waiting on a device (uninterruptible sleep)",
    "T": "stopped (suspended)",
    "t": "stopped by a debugger",
}


@dataclass(frozen=True)
class LockHolder:
    """A process of this host holding a database's write lock."""

    pid: int
    state: str  # /proc/PID/stat's letter: R, S, D, T (stopped), t (traced)…; "" unknown
    command: str  # its name (/proc/PID/stat's comm), "" unknown

    @property
    def stopped(self) -> bool:
        """Stopped by a signal or a debugger: it holds the lock until continued."""
        return self.state in ("T", "t")

    @property
    def doing(self) -> str:
        """What it is doing, to end a sentence: "stopped (suspended)", "running"…"""
        return _STATES.get(self.state, f"in state {self.state!r}" if self.state else "unknown")


def write_lock_holders(database: str | Path, proc_locks: Path = PROC_LOCKS) -> list[LockHolder]:
    """The processes of this host (this one too: another of its threads) that hold
    ``database``'s write lock, per ``proc_locks``; empty when none does, or nothing
    could be read."""
    regions = {
        _file_id(f"{database}-shm"): (WAL_WRITE_LOCK_BYTE, WAL_WRITE_LOCK_BYTE),
        _file_id(str(database)): (PENDING_BYTE, SHARED_END),
    }
    regions.pop(None, None)
    try:
        lines = proc_locks.read_text().splitlines()
    except OSError:
        return []
    pids: list[int] = []
    for line in lines:
        held = _write_lock(line)
        if held is None:
            continue
        pid, file_id, start, end = held
        region = regions.get(file_id)
        if region is None or end < region[0] or start > region[1]:
            continue
        if pid > 0 and pid not in pids:
            pids.append(pid)
    return [_holder(pid) for pid in pids]


def _file_id(path: str) -> tuple[int, int, int] | None:
    """A file's (major, minor, inode), as /proc/locks names it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return os.major(info.st_dev), os.minor(info.st_dev), info.st_ino


def _write_lock(line: str) -> tuple[int, tuple[int, int, int], int, float] | None:
    """A held POSIX write lock of /proc/locks: (pid, file id, first byte, last byte);
    None for anything else (read locks, flock and OFD locks, waiters marked ``->``).
    ``1: POSIX  ADVISORY  WRITE 14952 fe:00:2147378 120 120``"""
    fields = line.split()
    if len(fields) != 8 or fields[1:4] != ["POSIX", "ADVISORY", "WRITE"]:
        return None
    try:
        major, minor, inode = fields[5].split(":")
        file_id = (int(major, 16), int(minor, 16), int(inode))
        start = int(fields[6])
        end = float("inf") if fields[7] == "EOF" else int(fields[7])
        return int(fields[4]), file_id, start, end
    except ValueError:
        return None


def _holder(pid: int) -> LockHolder:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return LockHolder(pid, "", "")
    # "1234 (a command, maybe (with) parentheses) T …": the name ends at the last ')'.
    name_end = stat.rfind(")")
    command = stat[stat.find("(") + 1 : name_end]
    state = stat[name_end + 2 : name_end + 3] if name_end > 0 else ""
    return LockHolder(pid, state, command)
