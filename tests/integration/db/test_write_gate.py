"""Ctrl-Z (SIGTSTP) stops a process between write transactions: stopped inside one,
it would keep the database's write lock for as long as it stays stopped."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from photo_pipeline.db import open_database
from tests.support.cli_processes import REPO, wait_until

# A command's write transaction that lasts until the test says so.
WRITER = """
import sys, time
from pathlib import Path
from photo_pipeline.db import open_database, write_session
from photo_pipeline.write_gate import install_stop_between_writes

install_stop_between_writes()
factory = open_database(sys.argv[1])
marks = Path(sys.argv[2])
with write_session(factory):
    (marks / "inside").touch()
    while not (marks / "release").exists():
        time.sleep(0.01)
(marks / "committed").touch()
while not (marks / "finish").exists():
    time.sleep(0.01)
"""


def process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat: T is stopped."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


def test_ctrl_z_waits_for_the_write_transaction_then_stops(tmp_path):
    database = tmp_path / "library.sqlite3"
    url = f"sqlite:///{database}"
    open_database(url).kw["bind"].dispose()  # the schema, before the writer opens it
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, str(tmp_path)],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    try:
        wait_until(lambda: (tmp_path / "inside").exists(), "the write transaction to begin")
        writer.send_signal(signal.SIGTSTP)
        (tmp_path / "release").touch()  # the transaction may end now, and only then the stop
        wait_until(lambda: process_state(writer.pid) == "T", "the writer to stop")
        # Stopped, it holds no lock: another process takes the write lock at once.
        other = sqlite3.connect(database, timeout=5, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
        finally:
            other.close()
        writer.send_signal(signal.SIGCONT)
        (tmp_path / "finish").touch()
        assert writer.wait(timeout=60) == 0
        assert (tmp_path / "committed").exists()
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGCONT)
            writer.kill()
            writer.wait()
