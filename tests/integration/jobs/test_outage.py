"""The database going away for seconds (issue 12, item 2): workers, `serve` and
`import --wait` ride it out and finish; commands run meanwhile say so in one line
and exit 4. The outage is a TCP proxy in front of the real PostgreSQL, cut and
restored by the test (the server itself is never touched)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from photo_pipeline.db import open_database, read_session
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.factories import photos
from tests.support.api_server import free_port
from tests.support.cli_processes import WorkerProcess, environment, run_command, wait_until
from tests.support.tcp_proxy import POSTGRES_ONLY, proxy_fixture  # noqa: F401

TOKEN = "outage-test-token-0123456789abcdef"


class ServeProcess:
    """`photo-pipeline serve` with an embedded worker, its stderr in a file."""

    def __init__(self, db_url: str, home: Path) -> None:
        self.port = free_port()
        self.log_path = home / f"serve-{self.port}.log"
        env = {**environment(db_url, home), "PHOTO_PIPELINE_TOKEN": TOKEN}
        command = [sys.executable, "-m", "photo_pipeline", "serve", "--port", str(self.port)]
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [*command, "--workers-embedded", "1"], env=env, stdout=log, stderr=log
            )

    def log(self) -> str:
        return self.log_path.read_text()

    def health(self) -> dict | None:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/api/health", timeout=10).json()
        except httpx.HTTPError:
            return None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_commands_exit_4_in_one_line_while_the_database_is_down(proxy, db_url, tmp_path):
    url = proxy.url_for(db_url)
    assert run_command(url, tmp_path, "init").returncode == 0
    proxy.down()
    # (`worker` is a service: it waits for the database instead; test_library_home.py)
    for args in (("jobs",), ("job", "show", "x"), ("import", str(tmp_path))):
        done = run_command(url, tmp_path, *args, timeout=60)
        assert done.returncode == 4, (args, done.stderr)
        assert done.stderr.startswith("error database_unavailable: "), (args, done.stderr)
        assert done.stderr.count("\n") == 1, (args, done.stderr)  # one line, no traceback
    with pytest.raises(DatabaseUnavailable):
        open_database(url)


def _terminate(db_url: str, application_name: str) -> int:
    """pg_terminate_backend on this test's own connections only (other tests share the
    server), as a server restart would end them. Each is waited for until it has gone,
    so that its goodbye is on the client's socket before the test goes on."""
    admin = create_engine(db_url)
    try:
        with admin.begin() as conn:
            return len(
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                        "AND application_name = :name"
                    ),
                    {"name": application_name},
                ).all()
            )
    finally:
        admin.dispose()


@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_terminated_connections_are_replaced_or_reported_as_unavailable(db_url, session_factory):
    name = f"outage-{uuid.uuid4().hex[:12]}"
    url = make_url(db_url).update_query_dict({"application_name": name})
    factory = open_database(url.render_as_string(hide_password=False))
    service = JobService(factory)
    try:
        job = service.enqueue("t")
        # Between transactions: the pool's ping finds the dead connection and opens
        # another; nobody sees an error.
        assert _terminate(db_url, name) >= 1
        assert service.get(job["id"])["state"] == JobState.QUEUED
        # Inside a transaction: the driver's error becomes DatabaseUnavailable.
        with pytest.raises(DatabaseUnavailable), read_session(factory) as session:
            session.execute(text("SELECT 1"))
            assert _terminate(db_url, name) == 1
            session.execute(text("SELECT 1"))
        assert service.get(job["id"])["state"] == JobState.QUEUED
    finally:
        factory.kw["bind"].dispose()


@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_a_claim_that_cannot_reconnect_reports_the_database_unavailable(proxy, db_url):
    # The claim runs on the pool's raw connection (jobs.store.run_one): the pool
    # finds its connection closed by the outage, and connecting again is refused.
    # That must read as the outage a worker waits out, not as a driver error that
    # ends the worker (it did: exit 1 in test_worker_serve_and_import_wait...).
    factory = open_database(proxy.url_for(db_url))
    service = JobService(factory, recover_every=None)  # the claim's own statement only
    try:
        service.enqueue("t")
        proxy.down()
        with pytest.raises(DatabaseUnavailable):
            service.claim(["t"], "worker-1")
        proxy.up()
        assert service.claim(["t"], "worker-1") is not None  # the pool recovers
    finally:
        factory.kw["bind"].dispose()


@pytest.mark.slow
@pytest.mark.parametrize("backend", POSTGRES_ONLY)
def test_worker_serve_and_import_wait_ride_out_an_outage(proxy, db_url, tmp_path):
    url = proxy.url_for(db_url)
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "photos"
    for n in range(40):
        photos.jpeg(root / f"IMG_{n:03d}.jpg", size=(1600, 1200), seed=n)
    assert run_command(url, home, "init").returncode == 0
    factory = open_database(db_url)  # the test's own view, not through the proxy
    service = JobService(factory)
    worker = WorkerProcess(url, home, "--concurrency", "1")
    serve = ServeProcess(url, home)
    importer = None
    try:
        wait_until(lambda: len(WorkerRegistry(factory).list()) == 2, "worker and serve up", 60)
        import_log = home / "import.log"
        with open(import_log, "w") as log:
            importer = subprocess.Popen(
                [sys.executable, "-m", "photo_pipeline", "import", str(root), "--wait"],
                env=environment(url, home),
                stdout=log,
                stderr=log,
            )

        def waiting_and_running() -> bool:
            # All three jobs queued (the import is waiting now) and one at work.
            jobs = service.list_jobs()
            return len(jobs) == 3 and any(j["state"] == JobState.RUNNING for j in jobs)

        wait_until(waiting_and_running, "the import waiting and a job running", 60)
        proxy.down()
        # The outage lasts at least as long as the PostgreSQL restart of the issue.
        back_after = time.monotonic() + 4
        # While it is down: a command exits 4, health says so, and each long-running
        # process noticed (and said so once) without giving up.
        down = run_command(url, home, "jobs", timeout=60)
        assert down.returncode == 4 and down.stderr.count("\n") == 1, down.stderr
        wait_until(
            lambda: (serve.health() or {}).get("database") == "unavailable", "health to tell"
        )
        assert serve.health()["status"] == "degraded"
        wait_until(lambda: "database unavailable" in worker.log(), "the worker to notice", 30)
        wait_until(lambda: "database unavailable" in serve.log(), "serve to notice", 30)
        wait_until(lambda: "database unavailable" in import_log.read_text(), "import to notice", 30)
        assert worker.proc.poll() is None and serve.proc.poll() is None, (worker.log(), serve.log())
        assert importer.poll() is None
        wait_until(lambda: time.monotonic() > back_after, "the outage to last 4 s")
        assert worker.proc.poll() is None and serve.proc.poll() is None
        proxy.up()

        assert importer.wait(timeout=60) == 0, import_log.read_text()
        jobs = service.list_jobs()
        assert sorted(j["job_type"] for j in jobs) == ["render", "scan", "similar"]
        assert {j["state"] for j in jobs} == {JobState.SUCCEEDED}
        assert all(j["attempts"] <= 1 for j in jobs), jobs  # the outage cost no attempt
        assert worker.proc.poll() is None, worker.log()
        assert serve.health() == {**serve.health(), "status": "ok", "worker": "ok"}
        for output in (worker.log(), import_log.read_text()):
            assert "Traceback" not in output, output
        assert "embedded worker" not in serve.log() or "died" not in serve.log(), serve.log()
        assert worker.log().count("database unavailable, retrying") <= 2, worker.log()
    finally:
        if not _listening(proxy.port):
            proxy.up()
        if importer is not None and importer.poll() is None:
            importer.kill()
            importer.wait()
        if worker.proc.poll() is None:
            worker.kill()
        serve.stop()
        factory.kw["bind"].dispose()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
