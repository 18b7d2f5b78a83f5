"""A worker refuses to start where it cannot see the library's home (a second machine
without the shared mount), and waits for a database that is not up yet."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from photo_pipeline.db.schema import source_watchers
from photo_pipeline.pipeline.library.home import MARKER
from tests.support.cli_processes import environment, run_command, wait_until
from tests.support.tcp_proxy import POSTGRES_ONLY, proxy_fixture  # noqa: F401


def test_a_worker_without_the_shared_home_refuses_to_start(db_url, tmp_path):
    home = tmp_path / "home"
    assert run_command(db_url, home, "init").returncode == 0
    assert (home / MARKER).read_text().strip()

    elsewhere = tmp_path / "not-mounted"  # what a second machine sees without the share
    refused = run_command(db_url, elsewhere, "worker", "--burst")
    assert refused.returncode == 2, refused.stderr
    assert "library_home_not_shared" in refused.stderr and str(elsewhere) in refused.stderr
    assert not (elsewhere / MARKER).exists(), "a worker must never mark a home it was given"

    (elsewhere / MARKER).write_text("another-library\n")
    assert "holds another library" in run_command(db_url, elsewhere, "worker", "--burst").stderr

    served = run_command(db_url, home, "worker", "--burst")
    assert served.returncode == 0, served.stderr


@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_a_worker_started_before_its_database_waits_for_it(proxy, db_url, tmp_path):
    """The database (behind a loopback proxy) is down when the worker starts."""
    url = proxy.url_for(db_url)
    proxy.down()
    worker = subprocess.Popen(
        [sys.executable, "-m", "photo_pipeline", "worker", "--burst"],
        env=environment(url, tmp_path / "home"),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stderr is not None
        first = worker.stderr.readline()
        assert "database unavailable, waiting for it" in first, first
        assert worker.poll() is None, "the worker exited instead of waiting"
        proxy.up()
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker.stderr.close()


def test_a_worker_starting_while_the_library_is_marked_waits_for_the_marker(db_url, tmp_path):
    """The first process commits the new library's id, then writes the marker; a worker
    started in between (``import --wait``'s own) waits for the marker instead of
    refusing. The moment is held open here: the id is committed, the marker not yet
    written, and the marking lock held, as ``mark_home`` holds it."""
    home = tmp_path / "home"
    assert run_command(db_url, home, "init").returncode == 0
    marker = home / MARKER
    library = marker.read_text()
    marker.unlink()
    lock = os.open(home / f"{MARKER}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    worker = subprocess.Popen(
        [sys.executable, "-m", "photo_pipeline", "worker", "--burst"],
        env=environment(db_url, home),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        inode = os.fstat(lock).st_ino
        wait_until(
            lambda: worker.poll() is not None or _waits_on(inode, worker.pid),
            "the worker to wait on the marking lock",
        )
        marker.write_text(library)
        os.close(lock)  # the marking is done
        _, errors = worker.communicate(timeout=120)
        assert worker.returncode == 0, errors
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _waits_on(inode: int, pid: int) -> bool:
    """``pid`` is blocked on a lock of the file ``inode`` (a ``->`` line of /proc/locks)."""
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and str(pid) in fields and any(f.endswith(f":{inode}") for f in fields):
            return True
    return False


@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_watch_started_before_its_database_waits_for_it(proxy, db_url, tmp_path):
    """`watch` (a long-running process, like `worker`) waits for the database instead
    of exiting; once it answers, it runs until SIGTERM and stops cleanly."""
    home, folder = tmp_path / "home", tmp_path / "card"
    folder.mkdir()
    imported = run_command(db_url, home, "import", str(folder), "--watch")
    assert imported.returncode == 0, imported.stderr
    url = proxy.url_for(db_url)
    proxy.down()
    watcher = subprocess.Popen(
        [sys.executable, "-m", "photo_pipeline", "watch"],
        env=environment(url, home),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stderr is not None
        first = watcher.stderr.readline()
        assert "database unavailable, waiting for it" in first, first
        assert watcher.poll() is None, "watch exited instead of waiting"
        proxy.up()
        wait_until(lambda: _watch_leases(db_url) == 1, "watch to take the source's lease")
        watcher.send_signal(signal.SIGTERM)
        assert watcher.wait(timeout=60) == 0, watcher.stderr.read()
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        watcher.stderr.close()


def _watch_leases(db_url: str) -> int:
    engine = create_engine(db_url)
    try:
        with engine.connect() as connection:
            return connection.scalar(select(func.count()).select_from(source_watchers)) or 0
    finally:
        engine.dispose()
