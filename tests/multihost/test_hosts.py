"""Workers on two hosts (network namespaces) sharing one PostgreSQL queue: a host cut
off mid-job, a frozen host, a database host that vanished, and a database restart.
Every item ends done once, and a worker that lost its job is fenced out when it comes
back."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from photo_pipeline.db import open_database, read_session
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.multihost._netns import Host, HostNetwork
from tests.support.cli_processes import REPO, wait_until

LEASE = "3"
OUTAGE_SECONDS = 20
ITEMS = 240

FENCED_OUT = ("lease lost", "stale_fencing_token")  # what a worker logs when fenced out


def worker_env(network: HostNetwork, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PHOTO_PIPELINE_DATABASE_URL": network.host_url,
        "PHOTO_PIPELINE_HOME": str(home),
        "PYTHONPATH": str(REPO),
        "PHOTO_PIPELINE_RETRY_BASE_SECONDS": "0.001",
        "PHOTO_PIPELINE_RETRY_MAX_SECONDS": "0.01",
    }


def start_worker(network: HostNetwork, host: Host, home: Path, log: str):
    command = [
        sys.executable,
        "-m",
        "photo_pipeline",
        "worker",
        "--import",
        "tests.support.worker_handlers",
        "--lease-seconds",
        LEASE,
        "--poll-seconds",
        "0.1",
        "--concurrency",
        "2",
        "--batch-size",
        "10",
    ]
    return host.spawn(command, worker_env(network, home), home / log)


@pytest.fixture
def service(network: HostNetwork) -> Iterator[JobService]:
    """The coordinator as the test sees it (through the database's socket)."""
    factory = open_database(network.local_url)
    yield JobService(factory)
    factory.kw["bind"].dispose()


def setup(service: JobService, tmp_path: Path) -> tuple[dict, Path]:
    home = tmp_path / "home"  # shared by every host: one filesystem
    home.mkdir()
    job = service.submit(
        "test.record",
        items=[f"photo-{n:04d}" for n in range(ITEMS)],
        params={"log": str(home / "work.log"), "item_seconds": 0.02},
    ).job
    return job, home


def succeeded(service: JobService, job_id: str) -> int:
    return service.progress(job_id)["by_state"].get("succeeded", 0)


@contextmanager
def logs_on_failure(home: Path, network: HostNetwork) -> Iterator[None]:
    """Add the workers' and the database's logs to a failure: a worker's side of the
    story is all there is to tell why it did not take a job over."""
    try:
        yield
    except AssertionError as failure:
        told = [failure.args[0] if failure.args else ""]
        for log in [*sorted(home.glob("*.log")), network.data / "server.log"]:
            if log.exists() and log.name != "work.log":
                told.append(f"--- {log.name} (last 60 lines) ---")
                told.extend(log.read_text(errors="replace").splitlines()[-60:])
        raise AssertionError("\n".join(str(line) for line in told)) from None


def finished_by_one(service: JobService, job_id: str, home: Path) -> None:
    assert service.get(job_id)["state"] == JobState.SUCCEEDED
    assert service.progress(job_id)["by_state"] == {"succeeded": ITEMS}
    worked = {line.split()[1] for line in (home / "work.log").read_text().splitlines()}
    assert worked == {f"photo-{n:04d}" for n in range(ITEMS)}, "an item was never worked on"


# A client on a host: one statement that runs for minutes, then what became of it.
LONG_STATEMENT = """
import sys, time
from sqlalchemy import text
from photo_pipeline.db import open_database, read_session
from photo_pipeline.db.errors import DatabaseUnavailable
factory = open_database(sys.argv[1])
started = time.monotonic()
try:
    with read_session(factory) as session:
        session.execute(text("SELECT pg_sleep(600)"))
except DatabaseUnavailable as exc:
    print(exc.code, f"after {time.monotonic() - started:.0f} s", flush=True)
"""


@pytest.mark.slow
def test_a_client_whose_database_vanished_gives_up_instead_of_waiting_for_ever(
    network, service, tmp_path
):
    """No reset comes from a database host that is powered off or cut off: without
    keepalives a statement waiting for its answer (and the worker running it) would
    wait for ever, even after the database came back elsewhere."""
    host = network.hosts[0]
    log = tmp_path / "client.log"
    client = host.spawn(
        [sys.executable, "-c", LONG_STATEMENT, network.host_url],
        worker_env(network, tmp_path),
        log,
    )

    def statement_running() -> bool:
        with read_session(service.session_factory) as session:
            return bool(
                session.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity "
                        "WHERE state = 'active' AND query LIKE 'SELECT pg_sleep(600)%'"
                    )
                )
            )

    wait_until(statement_running, "the client's statement to run on the server")
    host.link(up=False)  # silence: no answer, no reset
    try:
        assert client.wait(timeout=120) == 0, log.read_text()
    finally:
        host.link(up=True)
    assert log.read_text().startswith("database_unavailable after"), log.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("interruption", ["partition", "freeze"])
def test_a_host_cut_off_or_frozen_mid_job_loses_it_and_is_fenced_out(
    network, service, tmp_path, interruption
):
    """The cable pulled, or the process stopped (SIGSTOP, a paused VM), mid-job: the
    other host takes the job over and finishes it; the first, back, gives it up."""
    job, home = setup(service, tmp_path)
    with logs_on_failure(home, network):
        first, second = network.hosts
        a = start_worker(network, first, home, "a.log")
        wait_until(lambda: succeeded(service, job["id"]) >= 30, "the first host's progress")
        owner = service.get(job["id"])["lease_owner"]
        b = start_worker(network, second, home, "b.log")
        listed = {w["id"]: w for w in WorkerRegistry(service.session_factory).list()}
        assert [j["id"] for j in listed[owner]["current_jobs"]] == [job["id"]]

        if interruption == "partition":
            first.link(up=False)
        else:
            a.send_signal(signal.SIGSTOP)
        try:
            wait_until(
                lambda: service.get(job["id"])["lease_owner"] not in (None, owner),
                "the second host to take the job over",
            )
            wait_until(
                lambda: service.get(job["id"])["state"] == JobState.SUCCEEDED, "the job to finish"
            )
        finally:
            if interruption == "partition":
                first.link(up=True)
            else:
                a.send_signal(signal.SIGCONT)
        # Its heartbeat finds the lease lost, or (back with no item left to run) its
        # final transition is refused as stale: fenced out either way.
        wait_until(
            lambda: any(s in (home / "a.log").read_text() for s in FENCED_OUT),
            "the first host to give up",
        )
        assert a.poll() is None, "the first worker crashed instead of carrying on"
        finished_by_one(service, job["id"], home)
        assert service.get(job["id"])["fencing_token"] >= 2
        for process in (a, b):
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0


@pytest.mark.slow
def test_workers_ride_out_a_database_restart(network, service, tmp_path):
    job, home = setup(service, tmp_path)
    with logs_on_failure(home, network):
        first, second = network.hosts
        a = start_worker(network, first, home, "a.log")
        b = start_worker(network, second, home, "b.log")
        wait_until(lambda: succeeded(service, job["id"]) >= 30, "progress before the restart")
        network.stop_database()
        stopped = time.monotonic()
        # Both workers keep trying while it is down (no crash, no exit) ...
        wait_until(
            lambda: all(
                "database unavailable" in (home / f).read_text() for f in ("a.log", "b.log")
            ),
            "both workers to notice the outage",
        )
        # The outage lasts about 20 s, as a real restart can: that is the scenario, not a wait
        # for anything to happen.
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))
        assert a.poll() is None and b.poll() is None, "a worker exited during the outage"
        for log in ("a.log", "b.log"):  # backoff, not a crash loop: a line per outage, not per try
            assert (home / log).read_text().count("database unavailable") <= 3, log
        network.start_database()
        # ... and the job finishes once it is back.
        wait_until(
            lambda: service.get(job["id"])["state"] == JobState.SUCCEEDED, "the job to finish"
        )
        finished_by_one(service, job["id"], home)
        for process in (a, b):
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0
