"""A library whose home this process may only read (a read-only mount, a backup's
permissions): the commands that read work, the ones that write are refused with
``database_read_only`` and change nothing. As root, file modes bind nobody, so the home
is seen through a read-only bind mount in a private mount namespace."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.factories import photos
from tests.support.cli_processes import REPO


def _environment(home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PHOTO_PIPELINE_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)  # the home's own SQLite database
    return env


def photo_pipeline(home: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "photo_pipeline", *args]
    return subprocess.run(
        command, env=_environment(home), capture_output=True, text=True, timeout=300
    )


def read_only_prefix(home: Path) -> list[str]:
    """The command prefix that runs a command with ``home`` read-only for it alone."""
    if os.geteuid() != 0:
        for folder, _, names in os.walk(home):
            for name in (folder, *(os.path.join(folder, n) for n in names)):
                os.chmod(name, os.stat(name).st_mode & ~0o222)
        return []
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c"]
    prefix += ['mount --bind -o ro "$0" "$0" && exec "$@"', str(home)]
    if shutil.which("unshare") is None:
        reason = "no read-only bind mount here: no unshare"
    else:
        probe = subprocess.run([*prefix, "touch", str(home / "probe")], capture_output=True)
        reason = f"no read-only bind mount here: {probe.stderr.decode(errors='replace')}"
    if "Read-only file system" not in reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason + "; CI requires it", pytrace=False)
        pytest.skip(reason)
    return prefix


def read_only(home: Path, *args: str) -> subprocess.CompletedProcess:
    command = [*read_only_prefix(home), sys.executable, "-m", "photo_pipeline", *args]
    return subprocess.run(
        command, env=_environment(home), capture_output=True, text=True, timeout=300
    )


@contextmanager
def held_open_by_a_writer(database: Path) -> Iterator[None]:
    """A writer elsewhere (the server) with the database open: changes it committed
    are in the -wal file, not yet in the database file."""
    connection = sqlite3.connect(database)
    try:
        connection.execute("PRAGMA wal_autocheckpoint=0")
        connection.execute("UPDATE sources SET path = path || '-renamed'")
        connection.commit()
        assert Path(f"{database}-wal").stat().st_size > 0
        yield
    finally:
        connection.close()


@pytest.mark.parametrize("writer", ["none", "open elsewhere"])
def test_reading_commands_work_on_a_read_only_home_and_writes_are_refused(tmp_path, writer) -> None:
    home = tmp_path / "home"
    photos.jpeg(tmp_path / "card" / "IMG_0001.JPG", seed=1)
    imported = photo_pipeline(home, "import", str(tmp_path / "card"), "--wait")
    assert imported.returncode == 0, imported.stderr
    jobs_before = json.loads(photo_pipeline(home, "jobs", "--json").stdout)
    database = home / "library.sqlite3"
    with held_open_by_a_writer(database) if writer != "none" else _nothing():
        listed = read_only(home, "jobs", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [job["id"] for job in json.loads(listed.stdout)] == [j["id"] for j in jobs_before]

        assets = read_only(home, "assets", "--json")
        assert assets.returncode == 0, assets.stderr
        assert [asset["format"] for asset in json.loads(assets.stdout)] == ["jpeg"]

        sources = read_only(home, "sources", "--json")
        assert sources.returncode == 0, sources.stderr
        renamed = writer != "none"  # what the writer committed is read from its -wal file
        [source] = json.loads(sources.stdout)
        assert source["path"].endswith("-renamed") == renamed

        refused = read_only(home, "import", str(tmp_path / "card"))
        assert refused.returncode == 2, refused.stderr
        assert "database_read_only" in refused.stderr and "Traceback" not in refused.stderr
    assert json.loads(photo_pipeline(home, "jobs", "--json").stdout) == jobs_before


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_a_read_only_library_of_an_older_schema_says_to_upgrade_it_where_writable(
    tmp_path,
) -> None:
    from photo_pipeline.db import create_database_engine
    from photo_pipeline.db.migrate import downgrade, head_revision

    home = tmp_path / "home"
    assert photo_pipeline(home, "init").returncode == 0
    engine = create_database_engine(f"sqlite:///{home / 'library.sqlite3'}")
    downgrade(engine, f"{int(head_revision() or 0) - 1:04d}")
    engine.dispose()
    done = read_only(home, "jobs")
    assert done.returncode == 2, done.stderr
    assert "error database_read_only:" in done.stderr
    assert "run `photo-pipeline init` once where the library home is writable" in done.stderr
