"""The library home's marker: proof that a process sees this library's home.

Workers on other machines write renditions and quarantined files into the library
home, so it must be the same folder everywhere (a shared mount at the same path).
The database holds the library's id; the first process to open the library writes
it into ``<home>/.photo-pipeline-library``. A worker reads it back at start and
refuses to run when it is missing or names another library: it would otherwise
write renditions into a folder nobody else sees.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.schema import library_identity
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now

MARKER = ".photo-pipeline-library"
# Held while a new library's id is committed and its marker written, so a worker
# starting beside the first process never sees the id without the marker.
MARKING_LOCK = f"{MARKER}.lock"
# The home's folders of the library's own files, which are never originals.
STORE = "renditions"  # the rendition store (pipeline.renditions.store)
QUARANTINE = "quarantine"  # dedupe's quarantine


def of_the_home(folder: Path, home: Path) -> bool:
    """``folder`` is the home itself, or a folder of the library's own files in it
    (both resolved): never photos to import, nor a destination to organize into."""
    return folder == home or any(folder.is_relative_to(home / own) for own in (STORE, QUARANTINE))


class HomeNotShared(PhotoPipelineError):
    """This process's library home is not the library's (``library_home_not_shared``)."""

    code = "library_home_not_shared"
    status = 503


def library_id(session_factory: sessionmaker[Session]) -> str | None:
    with read_session(session_factory) as session:
        return session.scalar(select(library_identity.c.id))


def mark_home(session_factory: sessionmaker[Session], home: Path) -> None:
    """Give a new library its id and write the marker. A library that has an id
    already is left alone: its marker is checked, never rewritten (an empty folder
    where the shared home should be mounted must not pass for it)."""
    if library_id(session_factory) is not None:
        return
    with _marking(home, fcntl.LOCK_EX):
        new_id = str(uuid.uuid4())
        with write_session(session_factory) as session:
            if session.scalar(select(library_identity.c.id)) is not None:
                return  # another process won the race
            session.execute(library_identity.insert().values(id=new_id, created_at=utc_now()))
        _write_marker(home, new_id)


def check_home(session_factory: sessionmaker[Session], home: Path) -> None:
    """Refuse (``HomeNotShared``) unless ``home`` carries this library's marker."""
    expected, found = _identities(session_factory, home)
    if expected is not None and found is None and (home / MARKING_LOCK).exists():
        # Being marked right now, by the process that made the library: wait for it.
        with _marking(home, fcntl.LOCK_SH):
            expected, found = _identities(session_factory, home)
    if expected is None:
        return  # a library made before markers: nothing to compare yet
    if found != expected:
        what = "has no library marker" if found is None else f"holds another library ({found})"
        raise HomeNotShared(
            "library_home_not_shared",
            f"the library home {home} {what}, not library {expected}: on a second machine "
            "mount the shared library home at the same path and set PHOTO_PIPELINE_HOME "
            "to it (see README, Many machines)",
        )


def _identities(
    session_factory: sessionmaker[Session], home: Path
) -> tuple[str | None, str | None]:
    """The library's id in the database, and the one the marker in ``home`` holds."""
    expected = library_id(session_factory)
    try:
        found: str | None = (home / MARKER).read_text().strip()
    except OSError:
        found = None
    return expected, found


@contextlib.contextmanager
def _marking(home: Path, how: int) -> Iterator[None]:
    """The marking lock of ``home``: exclusive while a new library is marked, shared
    to wait for that. Only the marking process creates the lock file, so a worker
    given a folder that is not the home leaves nothing in it."""
    flags = os.O_CLOEXEC | (os.O_RDWR | os.O_CREAT if how == fcntl.LOCK_EX else os.O_RDONLY)
    fd = os.open(home / MARKING_LOCK, flags, 0o600)
    try:
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)  # releases the lock


def _write_marker(home: Path, value: str) -> None:
    marker = home / MARKER
    temp = home / f"{MARKER}.{os.getpid()}.tmp"
    # Owner-only, as everything in the home (which is 0700 itself).
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
        out.flush()
        os.fsync(out.fileno())
    try:
        os.link(temp, marker)  # never replaces a marker that is there
    except FileExistsError:
        pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
