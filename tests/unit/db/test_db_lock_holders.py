"""Reading who holds a SQLite database's write lock from a /proc/locks listing: only
held POSIX write locks on the lock bytes of the database (WAL: its -shm's byte 120;
else the database file's from 0x40000000) count, and what each holder is doing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from photo_pipeline.db.errors import locked_detail
from photo_pipeline.db.lock_holders import PENDING_BYTE, LockHolder, write_lock_holders


def file_id(path: Path) -> str:
    info = os.stat(path)
    return f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"


@pytest.fixture
def sleeper():
    """A live process of this host (not this one), to name as a lock holder."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    yield process.pid
    process.stdin.close()
    process.wait(timeout=30)


def test_only_write_locks_on_the_lock_bytes_name_a_holder(tmp_path, sleeper):
    database = tmp_path / "library.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").touch()
    other = tmp_path / "other.sqlite3-shm"
    other.touch()
    shm, db, wal = (
        file_id(Path(f"{database}-shm")),
        file_id(database),
        file_id(Path(f"{database}-wal")),
    )
    me = os.getpid()
    listing = tmp_path / "locks"

    def holders(*lines: str) -> list[int]:
        listing.write_text("".join(f"{n}: {line}\n" for n, line in enumerate(lines, 1)))
        return [holder.pid for holder in write_lock_holders(database, listing)]

    assert holders(f"POSIX  ADVISORY  WRITE {sleeper} {shm} 120 120") == [sleeper]
    assert holders(f"POSIX  ADVISORY  WRITE {sleeper} {shm} 0 EOF") == [sleeper]
    assert holders(f"POSIX  ADVISORY  WRITE {sleeper} {db} {PENDING_BYTE} {PENDING_BYTE}") == [
        sleeper
    ]
    assert holders(
        f"POSIX  ADVISORY  WRITE {sleeper} {db} {PENDING_BYTE + 2} {PENDING_BYTE + 511}"
    ) == [sleeper]
    not_holding = [
        f"POSIX  ADVISORY  READ  {sleeper} {shm} 120 120",  # a read lock
        f"POSIX  ADVISORY  WRITE {sleeper} {shm} 124 124",  # a reader's mark slot
        f"POSIX  ADVISORY  WRITE {sleeper} {shm} 128 128",  # the dead-man switch
        f"POSIX  ADVISORY  WRITE {sleeper} {db} 0 {PENDING_BYTE - 1}",
        f"POSIX  ADVISORY  WRITE {sleeper} {wal} 120 120",  # the WAL file itself
        f"POSIX  ADVISORY  WRITE {sleeper} {file_id(other)} 120 120",  # another database
        f"-> POSIX  ADVISORY  WRITE {sleeper} {shm} 120 120",  # waiting, not holding
        f"OFDLCK ADVISORY  WRITE -1 {shm} 120 120",  # no pid
        f"FLOCK  ADVISORY  WRITE {sleeper} {shm} 0 EOF",
        "POSIX  ADVISORY  WRITE x y z w",
        "",
    ]
    assert holders(*not_holding) == []
    line = f"POSIX  ADVISORY  WRITE {sleeper} {shm} 120 120"
    assert holders(line, line) == [sleeper]
    # Another thread of this very process, holding it on a connection of its own.
    assert holders(f"POSIX  ADVISORY  WRITE {me} {shm} 120 120") == [me]
    assert write_lock_holders(database, tmp_path / "no such listing") == []


def test_a_holder_reads_its_state_and_command_from_proc(tmp_path, sleeper):
    database = tmp_path / "library.sqlite3"
    Path(f"{database}-shm").touch()
    listing = tmp_path / "locks"
    listing.write_text(
        f"1: POSIX  ADVISORY  WRITE {sleeper} {file_id(Path(f'{database}-shm'))} 120 120\n"
    )
    [holder] = write_lock_holders(database, listing)
    assert holder.command.startswith("python")
    assert holder.state in ("S", "R") and not holder.stopped  # reading its stdin


def test_the_detail_says_who_holds_the_lock_and_what_to_do():
    stopped = LockHolder(1234, "T", "python3")
    assert locked_detail([(stopped, "host:1234:ab12cd34")]) == (
        "database is locked: the library is locked by worker PID 1234 on this host "
        "(host:1234:ab12cd34), which is stopped (suspended): resume it with `kill -CONT "
        "1234` or end it with `kill -KILL 1234` (a stopped process acts on a plain `kill` "
        "only once continued)"
    )
    running = locked_detail([(LockHolder(77, "D", "rsync"), None)])
    assert "process PID 77 on this host (rsync), which is waiting on a device" in running
    assert "kill" not in running
    itself = locked_detail([(LockHolder(os.getpid(), "R", "python3"), None)])
    assert f"locked by this very process (PID {os.getpid()}, another of its threads)" in itself
    nobody = locked_detail([])
    assert nobody.startswith("database is locked: ") and "another machine" in nobody
