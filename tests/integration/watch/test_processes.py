"""Watchers as users run them, as real processes: `photo-pipeline watch` killed with
SIGKILL mid-burst and another started (every file catalogued once), two `serve`s
racing for one source (one holds it; the other takes over when the first is killed),
and a watcher whose inotify watch limit is reached (it polls, and says why)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import files
from tests.support.api_server import free_port
from tests.support.cli_processes import WorkerProcess, environment, run_command, wait_until
from tests.support.watching import (
    FAST_ENV,
    catalogued,
    lease_holder,
    present,
    watched_library,
    watcher_scans,
    write_photos,
)

TOKEN = "watch-test-token-0123456789abcdef"


class Process:
    """A `photo-pipeline` command running in the background, its log in a file."""

    def __init__(self, db_url: str, home: Path, *args: str, prefix: tuple[str, ...] = ()) -> None:
        env = {**environment(db_url, home), **FAST_ENV, "PHOTO_PIPELINE_TOKEN": TOKEN}
        self.log_path = home / f"{args[0]}-{len(list(home.glob('*.log')))}.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "photo_pipeline", *args],
                env=env,
                stdout=log,
                stderr=log,
            )
        self.pid = self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()  # reaped: its pid is gone, as after a real crash

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def _watched(db_url: str, home: Path, folder: Path) -> int:
    """``folder`` registered with ``import --watch``: its source id."""
    folder.mkdir(parents=True, exist_ok=True)
    done = run_command(db_url, home, "import", str(folder), "--watch", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    listed = run_command(db_url, home, "sources", "--json")
    [source] = json.loads(listed.stdout)
    assert source["watch"] is True
    return int(source["id"])


def _held_by(lib, source_id: int, process: Process) -> bool:
    holder = lease_holder(lib, source_id)
    return holder is not None and holder[1] == process.pid


@pytest.mark.slow
def test_a_watcher_killed_mid_burst_loses_nothing_and_catalogues_each_file_once(db_url, tmp_path):
    home, folder = tmp_path / "home", tmp_path / "card"
    home.mkdir()
    source_id = _watched(db_url, home, folder)
    worker = WorkerProcess(db_url, home)
    first = Process(db_url, home, "watch")
    second = None
    try:
        with watched_library(db_url, home) as lib:
            wait_until(lambda: _held_by(lib, source_id, first), "the first watcher's lease", 60)
            burst = write_photos(folder / "DCIM", 1000)
            wait_until(lambda: watcher_scans(lib), "a scan queued by the first watcher", 60)
            first.kill()
            # More of the burst arrives while no watcher runs.
            burst += write_photos(folder / "DCIM", 1000, start=1000)
            second = Process(db_url, home, "watch")
            wait_until(lambda: _held_by(lib, source_id, second), "the takeover", 60)
            expected = {str(p.relative_to(folder)) for p in burst}
            wait_until(lambda: present(lib, source_id) == expected, "every file", 300)
            rows = catalogued(lib, source_id)
            with read_session(lib.sessions) as session:
                counted = session.scalar(
                    select(func.count()).select_from(files).where(files.c.source_id == source_id)
                )
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()
        worker.kill()
    assert counted == len(expected) == 2000  # one row per file
    assets = [asset for _, asset, _ in rows.values()]
    assert None not in assets and len(set(assets)) == 2000  # each its own asset, once


def test_two_serves_race_for_one_source_and_the_survivor_takes_over(db_url, tmp_path):
    home, folder = tmp_path / "home", tmp_path / "phone"
    home.mkdir()
    source_id = _watched(db_url, home, folder)
    ports = [free_port(), free_port()]
    serves = [
        Process(db_url, home, "serve", "--port", str(port), "--workers-embedded", "1")
        for port in ports
    ]

    def health(n: int) -> dict | None:
        try:
            return httpx.get(f"http://127.0.0.1:{ports[n]}/api/health").json()
        except httpx.HTTPError:
            return None

    try:
        with watched_library(db_url, home) as lib:
            wait_until(lambda: health(0) and health(1), "both serves", 60)
            wait_until(lambda: lease_holder(lib, source_id), "a watcher", 60)
            holder = lease_holder(lib, source_id)
            assert holder is not None
            [winner] = [n for n, s in enumerate(serves) if s.pid == holder[1]]
            loser = 1 - winner
            # Both report the one watcher: the winner's, in inotify mode.
            for n in (0, 1):
                report = health(n)
                assert report is not None
                assert [(w["source_id"], w["pid"], w["mode"]) for w in report["watchers"]] == [
                    (source_id, serves[winner].pid, "inotify")
                ]
            write_photos(folder, 1, prefix="BEFORE")
            wait_until(lambda: "BEFORE_00000.jpg" in present(lib, source_id), "the first photo")
            serves[winner].kill()
            wait_until(lambda: _held_by(lib, source_id, serves[loser]), "the takeover", 60)
            write_photos(folder, 1, prefix="AFTER")
            wait_until(lambda: "AFTER_00000.jpg" in present(lib, source_id), "the next photo")
            scans = watcher_scans(lib)
    finally:
        for serve in serves:
            serve.stop()
    # Each photo was handed to one scan: nobody scanned twice.
    assert sorted(p for scan in scans for p in scan["paths"]) == [
        "AFTER_00000.jpg",
        "BEFORE_00000.jpg",
    ]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_a_watcher_past_the_inotify_watch_limit_polls_and_says_why(db_url, tmp_path):
    """In a user namespace of its own, the watcher may set up 2 inotify watches; the
    source has more folders than that."""
    home, folder = tmp_path / "home", tmp_path / "nas"
    home.mkdir()
    for name in ("a", "b", "c", "d"):
        write_photos(folder / name, 1, prefix=name.upper())
    source_id = _watched(db_url, home, folder)
    probe = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here: {probe.stderr.decode().strip()}")
    limited = (
        "unshare",
        "-Ur",
        "sh",
        "-c",
        'echo 2 > /proc/sys/user/max_inotify_watches && exec "$@"',
        "-",
    )
    worker = WorkerProcess(db_url, home)
    watcher = Process(db_url, home, "watch", prefix=limited)
    try:
        with watched_library(db_url, home) as lib:
            wait_until(lambda: _held_by(lib, source_id, watcher), "the watcher's lease", 60)
            (folder / "b" / "late").mkdir()
            write_photos(folder / "b" / "late", 1, prefix="LATE")
            wait_until(
                lambda: "b/late/LATE_00000.jpg" in present(lib, source_id), "the polled photo", 60
            )
            log = watcher.log()
    finally:
        watcher.stop()
        worker.kill()
    said = [line for line in log.splitlines() if "not watched" in line]
    assert len(said) == 1, log
    assert "inotify cannot watch it" in said[0] and "limit" in said[0].lower(), said[0]
