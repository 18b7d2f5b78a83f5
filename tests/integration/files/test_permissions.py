"""The library keeps to its owner: the home and dedupe's quarantine are 0700; the
SQLite database, its WAL and SHM, the API token and the renditions are 0600, whatever
the umask allows others (a stricter mode is never widened), and a library an older
version left readable by others is narrowed when it is opened."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.api.auth import load_or_create_token
from photo_pipeline.config import Settings
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.dedupe import start_dedupe
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library import open_library
from tests.factories import photos

SMALL = {"thumbnail_size": 64, "preview_size": 160}


@pytest.fixture
def umask() -> Iterator[None]:
    """Let each test set the process umask; restored afterwards."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def modes(root: Path) -> dict[str, int]:
    found = {".": mode(root)}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = mode(path)
    return found


def import_photos(lib, folder: Path) -> None:
    for n in range(3):
        photos.jpeg(folder / f"IMG_{n}.jpg", size=(48, 32), seed=n)
    import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings)
    config = WorkerConfig(burst=True, concurrency=2, executor="thread", poll_seconds=0.05)
    assert Worker(lib.service, lib.workers, registry, config).run() == 0


def private(root: Path, found: dict[str, int]) -> dict[str, int]:
    """What every entry of ``found`` below ``root`` must be: folders 0700, files 0600."""
    return {name: 0o700 if (root / name).is_dir() else 0o600 for name in found}


def library_url(backend: str, db_url: str, home: Path) -> str:
    """SQLite in the home, as by default; PostgreSQL keeps the test's schema."""
    return f"sqlite:///{home / 'library.sqlite3'}" if backend == "sqlite" else db_url


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077], ids=["022", "002", "077"])
def test_a_new_library_is_owner_only_whatever_the_umask(backend, db_url, tmp_path, umask, mask):
    os.umask(mask)
    home = tmp_path / "home"
    url = library_url(backend, db_url, home)
    lib = open_library(Settings(home=home, database_url=url, **SMALL))
    try:
        load_or_create_token(home, None)
        import_photos(lib, tmp_path / "photos")
        with lib.sessions() as session:
            session.execute(text("SELECT count(*) FROM assets"))
            found = modes(home)  # while a connection is open: SQLite's WAL and SHM exist
    finally:
        lib.close()
    assert sum(name.endswith(".jpg") for name in found) == 6  # the default format
    assert "api-token" in found
    if backend == "sqlite":
        assert {"library.sqlite3", "library.sqlite3-wal", "library.sqlite3-shm"} <= set(found)
    assert found == private(home, found)


def test_an_old_library_made_for_everyone_is_narrowed_by_init(
    backend, db_url, tmp_path, umask, cli, monkeypatch
):
    """An upgrade of a library created 0644/0755 (as older versions left it): `init`
    narrows the home, database, WAL, SHM, token and renditions."""
    home = tmp_path / "home"
    url = library_url(backend, db_url, home)
    lib = open_library(Settings(home=home, database_url=url, **SMALL))
    import_photos(lib, tmp_path / "photos")
    load_or_create_token(home, None)
    lib.close()
    if backend == "sqlite":
        for name in ("library.sqlite3-wal", "library.sqlite3-shm"):
            (home / name).touch()  # as a crashed older version would leave them
    for folder, dirs, names in os.walk(home):
        for name in dirs:
            os.chmod(Path(folder) / name, 0o755)
        for name in names:
            os.chmod(Path(folder) / name, 0o644)
    os.chmod(home, 0o755)
    before = modes(home)
    assert set(before.values()) == {0o755, 0o644}
    assert sum(name.endswith(".jpg") for name in before) == 6

    monkeypatch.setenv("PHOTO_PIPELINE_DATABASE_URL", url)
    code, out, err = cli("init")

    assert code == 0, out + err
    after = modes(home)
    assert set(after) >= set(before)
    assert after == private(home, after)


def test_stricter_modes_are_never_widened(backend, db_url, tmp_path, umask):
    home = tmp_path / "home"
    settings = Settings(home=home, database_url=library_url(backend, db_url, home), **SMALL)
    lib = open_library(settings)
    import_photos(lib, tmp_path / "photos")
    load_or_create_token(home, None)
    lib.close()
    token = home / "api-token"
    preview = next((home / "renditions").rglob("*-preview.jpg"))
    os.chmod(token, 0o400)
    os.chmod(preview, 0o400)
    os.chmod(home / "renditions", 0o750)  # a store not yet narrowed: it is walked
    open_library(settings).close()
    assert (mode(token), mode(preview), mode(home / "renditions")) == (0o400, 0o400, 0o700)


def quarantine_photos(lib, folder: Path) -> Path:
    """Import an original and two copies (one in a subfolder), dedupe them; the job's
    quarantine folder."""
    original = photos.jpeg(folder / "IMG_1.jpg", size=(48, 32), seed=7)
    for copy in (folder / "backup/IMG_1.jpg", folder / "backup/deeper/IMG_1 copy.jpg"):
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(original.read_bytes())
    os.chmod(folder / "backup/IMG_1.jpg", 0o644)
    import_folders(lib.service, lib.catalog, [folder])
    config = WorkerConfig(burst=True, concurrency=2, executor="thread", poll_seconds=0.05)
    assert Worker(lib.service, lib.workers, registry, config).run() == 0
    job = start_dedupe(lib.service, lib.settings.home).job
    assert Worker(lib.service, lib.workers, registry, config).run() == 0
    assert lib.service.get(job["id"])["state"] == "succeeded"
    return lib.settings.home / "quarantine" / job["id"]


def test_the_quarantine_is_owner_only(backend, db_url, tmp_path, umask):
    home = tmp_path / "home"
    lib = open_library(Settings(home=home, database_url=library_url(backend, db_url, home)))
    try:
        job_folder = quarantine_photos(lib, tmp_path / "photos")
    finally:
        lib.close()
    quarantined = sorted(p.relative_to(job_folder) for p in job_folder.rglob("*.jpg"))
    assert quarantined == [Path("backup/IMG_1.jpg"), Path("backup/deeper/IMG_1 copy.jpg")]
    # Nothing below the quarantine is reachable by others: its root and the job's
    # folder are the owner's alone. The copies keep their originals' modes (an undo
    # puts those back).
    assert (mode(home / "quarantine"), mode(job_folder)) == (0o700, 0o700)
    assert mode(job_folder / "backup/IMG_1.jpg") == 0o644


def test_an_old_quarantine_is_narrowed_when_the_library_is_opened(backend, db_url, tmp_path, umask):
    home = tmp_path / "home"
    settings = Settings(home=home, database_url=library_url(backend, db_url, home))
    lib = open_library(settings)
    try:
        job_folder = quarantine_photos(lib, tmp_path / "photos")
    finally:
        lib.close()
    quarantine = home / "quarantine"
    for folder, dirs, _ in os.walk(quarantine):
        for name in dirs:
            os.chmod(Path(folder) / name, 0o755)
    os.chmod(quarantine, 0o755)  # as an older version left it
    files_before = {p: mode(p) for p in job_folder.rglob("*.jpg")}

    open_library(settings).close()

    folders = [quarantine, *(p for p in quarantine.rglob("*") if p.is_dir())]
    assert len(folders) == 4  # the root, the job's, backup, backup/deeper
    assert {mode(folder) for folder in folders} == {0o700}
    assert {p: mode(p) for p in job_folder.rglob("*.jpg")} == files_before
