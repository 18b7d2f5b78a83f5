"""Real `photo-pipeline` processes for tests: workers and one-shot commands."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def environment(db_url: str, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PHOTO_PIPELINE_DATABASE_URL": db_url,
        "PHOTO_PIPELINE_HOME": str(home),
        # This checkout's code first: the installed package may be another checkout's.
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        # Recovered jobs run again at once: these tests are about crashes, not backoff.
        "PHOTO_PIPELINE_RETRY_BASE_SECONDS": "0.001",
        "PHOTO_PIPELINE_RETRY_MAX_SECONDS": "0.01",
        # Tests kill workers dozens of times; each kill spends one interruption.
        "PHOTO_PIPELINE_MAX_INTERRUPTIONS": "100",
    }


def run_command(
    db_url: str, home: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Run ``photo-pipeline ARGS`` to its end."""
    return subprocess.run(
        [sys.executable, "-m", "photo_pipeline", *args],
        env=environment(db_url, home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class WorkerProcess:
    """A `photo-pipeline worker` subprocess whose log goes to a file."""

    def __init__(self, db_url: str, home: Path, *args: str) -> None:
        command = [
            sys.executable,
            "-m",
            "photo_pipeline",
            "worker",
            "--poll-seconds",
            "0.05",
            *args,
        ]
        self.log_path = home / f"worker-{time.monotonic_ns()}.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(command, env=environment(db_url, home), stderr=log)
        self.pid = self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text()

    def wait(self, timeout: float = 200) -> int:
        """The exit code; a process still running after ``timeout`` fails the test with
        its log (shorter than pytest's own timeout, which would show neither)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log = self.log()
            raise AssertionError(f"still running after {timeout} s; its log:\n{log}") from None

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def kill(self) -> None:
        """SIGKILL, then reap the process so that its pid is really gone."""
        self.proc.kill()
        self.proc.wait()


def wait_until(condition: Callable[[], object], what: str, timeout: float = 120) -> None:
    """Poll a condition (on the database or a process) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
