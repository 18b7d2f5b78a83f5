"""A process stopped (SIGSTOP, a suspended session) while it holds SQLite's write lock
stalls every writer of the library. A writer that gives up waiting says so: which
process holds the lock (a registered worker or not), that it is stopped, and how to
resume or end it (``database_locked``, exit 4); once it is gone, writing works."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from photo_pipeline.db import engine
from tests.factories import photos
from tests.support.cli_processes import environment, wait_until
from tests.support.frozen_processes import stopped

# Takes the library's write lock (as a worker in a write transaction does), says so
# on stdout, and keeps it until stdin closes. With "register", first registers
# itself as a worker of this host, as `photo-pipeline worker` does.
HOLDER = """
import sqlite3, sys
database, register = sys.argv[1], sys.argv[2] == "register"
worker_id = "-"
if register:
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs.workers import WorkerRegistry, new_worker_id
    worker_id = new_worker_id()
    WorkerRegistry(open_database("sqlite:///" + database)).register(worker_id, ["scan"])
connection = sqlite3.connect(database, isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("locked", worker_id, flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.parametrize("register", [True, False], ids=["worker", "other-process"])
def test_a_writer_that_gives_up_names_the_stopped_holder_of_the_lock(
    cli, db_url, tmp_path, monkeypatch, register
):
    # Writers give up after 0.2 s instead of a minute: the test waits for nothing.
    monkeypatch.setattr(engine, "SQLITE_BUSY_TIMEOUT_MS", 200)
    assert cli("init")[0] == 0
    database = db_url.removeprefix("sqlite:///")
    folder = tmp_path / "photos"
    photos.jpeg(folder / "IMG_1.jpg", size=(32, 24), seed=1)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, database, "register" if register else "plain"],
        env=environment(db_url, tmp_path / "home"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        said, worker_id = holder.stdout.readline().split()
        assert said == "locked"
        holder.send_signal(signal.SIGSTOP)
        wait_until(lambda: stopped(holder.pid), "the lock holder to stop")

        code, out, err = cli("import", str(folder))

        assert code == 4, out + err
        line = " ".join(err.split())  # as one line, however the console wrapped it
        assert "error database_locked: database is locked:" in line
        kind = "worker" if register else "process"
        assert f"locked by {kind} PID {holder.pid} on this host" in line
        if register:
            assert f"PID {holder.pid} on this host ({worker_id})" in line
        else:  # no worker: named by its command
            assert f"PID {holder.pid} on this host (python" in line
        assert "which is stopped (suspended)" in line
        assert f"`kill -CONT {holder.pid}`" in line and f"`kill -KILL {holder.pid}`" in line
    finally:
        holder.send_signal(signal.SIGCONT)
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    # The holder gone, the same command goes through: it lost nothing.
    code, out, err = cli("import", str(folder))
    assert code == 0, out + err
