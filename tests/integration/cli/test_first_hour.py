"""A new user's first commands: `make run` on a chosen port, a second `make run` on a busy
one refused before it queues anything, `--version`."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from photo_pipeline import __version__
from tests.factories import photos
from tests.support.api_server import free_port
from tests.support.cli_processes import REPO, run_command, wait_until

DEFAULT_PORT = 8765  # the Makefile's PORT and serve's --port


@contextmanager
def listening(port: int = 0) -> Iterator[int]:
    """A port held by another listener (as a running `make run` holds it)."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            holder.bind(("127.0.0.1", port))
            holder.listen()
        except OSError:
            # Someone else listens there already: busy all the same.
            yield port
            return
        yield holder.getsockname()[1]


def photo_pipeline_bin(tmp_path: Path) -> Path:
    """A bin folder whose `photo-pipeline` runs this checkout (make's BIN)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "photo-pipeline"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m photo_pipeline "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def make_run_command(db_url: str, home: Path, tmp_path: Path, *args: str) -> dict:
    photos_dir = tmp_path / "photos"
    photos_dir.mkdir(exist_ok=True)
    photos.jpeg(photos_dir / "IMG_0001.JPG", seed=1)
    env = {
        **os.environ,
        "PHOTO_PIPELINE_DATABASE_URL": db_url,
        "PHOTO_PIPELINE_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }
    # RUN_STAMP= : the shared venv is not reinstalled from this checkout.
    command = ["make", "-s", "-C", str(REPO), "run", f"PHOTOS={photos_dir}", "RUN_STAMP="]
    command += [f"BIN={photo_pipeline_bin(tmp_path)}", *args]
    return {"args": command, "env": env, "text": True}


def make_run(db_url: str, home: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = make_run_command(db_url, home, tmp_path, *args)
    return subprocess.run(**command, capture_output=True, timeout=300)


def queued_jobs(db_url: str, home: Path) -> list[dict]:
    done = run_command(db_url, home, "jobs", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("port_args", [(), ("PORT={port}",)], ids=["default", "PORT"])
def test_make_run_on_a_busy_port_queues_nothing_and_says_how(db_url, tmp_path, port_args):
    home = tmp_path / "home"
    with listening(0 if port_args else DEFAULT_PORT) as port:
        done = make_run(db_url, home, tmp_path, *(a.format(port=port) for a in port_args))
    assert done.returncode != 0
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert "`make run PORT=" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr
    # Nothing was queued for a server that never started.
    assert not home.exists() or queued_jobs(db_url, home) == []


def test_make_run_imports_photos_and_serves_them_on_the_port_asked_for(db_url, tmp_path):
    home = tmp_path / "home"
    port = free_port()
    command = make_run_command(db_url, home, tmp_path, f"PORT={port}")
    command["env"]["PHOTO_PIPELINE_TOKEN"] = "first-hour-test-token-0123456789"
    headers = {"Authorization": "Bearer first-hour-test-token-0123456789"}
    log = tmp_path / "make-run.log"

    def one_asset() -> bool:
        try:
            url = f"http://127.0.0.1:{port}/api/assets"
            return len(httpx.get(url, headers=headers).json()["assets"]) == 1
        except (httpx.HTTPError, ValueError, KeyError):
            return False

    with open(log, "w") as out:
        proc = subprocess.Popen(**command, stdout=out, stderr=out, start_new_session=True)
    try:
        wait_until(lambda: one_asset() or proc.poll() is not None, "make run to serve")
        assert proc.poll() is None, log.read_text()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=60)


def test_serve_on_a_busy_port_is_refused_before_the_library_is_opened(db_url, tmp_path):
    home = tmp_path / "home"
    with listening() as port:
        done = run_command(db_url, home, "serve", "--port", str(port))
    assert done.returncode == 2, done.stderr
    line = next(line for line in done.stderr.splitlines() if "port_in_use" in line)
    suggested = int(line.rsplit("--port ", 1)[1].rstrip("`"))
    assert suggested != port and f"`make run PORT={suggested}`" in line
    assert not home.exists()  # no library made or opened for a server that cannot start


def test_check_port_says_a_free_port_is_free(db_url, tmp_path):
    with listening() as port:
        pass  # free again
    done = run_command(db_url, tmp_path / "home", "serve", "--port", str(port), "--check-port")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "home").exists()


def test_version_prints_the_version_and_exits_0(db_url, tmp_path):
    done = run_command(db_url, tmp_path / "home", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"photo-pipeline {__version__}"
