"""The library: a library opened for use (``Library``: its settings, database,
coordinator and worker registry, defined here), and what every job and front door
shares about it.

- :mod:`.catalog`: the library's rows (sources, files, assets);
- :mod:`.home`: the library home and its marker;
- :mod:`.locks`: the library lock, one job that moves or judges originals at a time;
- :mod:`.live_photos`: a still and its motion clip paired into one asset;
- :mod:`.keeper`: which copy of a duplicate to keep, and why (pure);
- :mod:`.scope`: the sources and capture days an organize or a dedupe covers;
- :mod:`.browse`: read-only views for the API and the web UI;
- :mod:`.map`, :mod:`.places`, :mod:`.timeline`: the map, its places and the timeline,
  each read from a summary that triggers on assets keep (and a rebuild of it);
- :mod:`.ordering`: the orders a listing sorts in, each a keyset walk of one index;
- :mod:`.shown`: what a person is shown of an asset (date confidence, camera, place);
- :mod:`.originals`: an asset's original, opened for serving;
- :mod:`.unexpected`: a reader's bug fails its file's item, not the job.

The CLI, the HTTP API and the web UI all start from a ``Library``. Opening one loads
neither the catalogue nor the media modules: `jobs` and `job show` need only the
coordinator (tests/unit/cli/test_cli_startup.py).

May import: ``files``, ``jobs``, ``media``, ``db``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.config import Settings
from photo_pipeline.db import open_database
from photo_pipeline.db.dialect import engine_of
from photo_pipeline.jobs import JobService, RetryPolicy
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.library.home import (
    MARKER,
    MARKING_LOCK,
    QUARANTINE,
    STORE,
    mark_home,
)

if TYPE_CHECKING:
    from photo_pipeline.pipeline.library.catalog import Catalog


@dataclass(frozen=True)
class Library:
    settings: Settings
    sessions: sessionmaker[Session]
    service: JobService
    workers: WorkerRegistry

    @property
    def catalog(self) -> Catalog:
        from photo_pipeline.pipeline.library.catalog import Catalog

        return Catalog(self.sessions)

    def close(self) -> None:
        engine_of(self.sessions).dispose()


def open_library(settings: Settings) -> Library:
    """Open (creating or upgrading) the library's home and database."""
    make_home_private(settings.home)
    factory = open_database(settings.database_url)
    mark_home(factory, settings.home)
    policy = RetryPolicy(
        settings.retry_base_seconds, settings.retry_max_seconds, settings.max_interruptions
    )
    return Library(
        settings, factory, JobService(factory, retry_policy=policy), WorkerRegistry(factory)
    )


# Files of the home that only its owner may read: the API token, and the renditions
# (what the photos show); the quarantine's folders (the copies dedupe moved there).
# The SQLite files are the engine's (db.engine).
API_TOKEN_FILE = "api-token"
PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700


def make_home_private(home: Path) -> None:
    """Create the home owner-only (0700) with its quarantine (0700), and narrow what an
    older version left readable by others: the home, the API token, the home marker,
    the renditions tree (folders 0700, files 0600) and the quarantine's folders (0700;
    the quarantined files keep the modes of the originals they are, which an undo puts
    back, and a hard link shares with the user's other names of the file). Modes are
    only ever narrowed: a stricter umask's stays."""
    home.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    narrow_mode(home, PRIVATE_FOLDER_MODE)
    narrow_mode(home / API_TOKEN_FILE, PRIVATE_FILE_MODE)
    narrow_mode(home / MARKER, PRIVATE_FILE_MODE)
    narrow_mode(home / MARKING_LOCK, PRIVATE_FILE_MODE)
    _narrow_tree(home / STORE, PRIVATE_FILE_MODE)
    _narrow_tree(home / QUARANTINE, None)
    # Made here, owner-only, before any dedupe: the job's os.makedirs of its own folder
    # would create a missing quarantine with the umask's mode (0755), listing the jobs.
    with contextlib.suppress(FileExistsError):  # a folder, or what dedupe will refuse
        (home / QUARANTINE).mkdir(mode=PRIVATE_FOLDER_MODE)


def _narrow_tree(root: Path, file_mode: int | None) -> None:
    """Narrow the folders under ``root`` to 0700 and its files to ``file_mode`` (None:
    left alone), then ``root`` itself. A private root marks a tree already fixed: the
    walk runs once per library, and the root is narrowed last so that an interrupted
    walk is done again."""
    root_mode = _mode(root)
    if root_mode is None or not root_mode & 0o077:
        return
    for folder, subfolders, names in os.walk(root):
        for name in subfolders:
            narrow_mode(Path(folder, name), PRIVATE_FOLDER_MODE)
        if file_mode is not None:
            for name in names:
                narrow_mode(Path(folder, name), file_mode)
    narrow_mode(root, PRIVATE_FOLDER_MODE)


def narrow_mode(path: Path, allowed: int) -> None:
    """Clear the permission bits of ``path`` outside ``allowed`` (never adds any);
    symlinks and missing paths are left alone."""
    mode = _mode(path)
    if mode is not None and mode & ~allowed:
        os.chmod(path, mode & allowed)


def _mode(path: Path) -> int | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return None if stat.S_ISLNK(info.st_mode) else stat.S_IMODE(info.st_mode)
