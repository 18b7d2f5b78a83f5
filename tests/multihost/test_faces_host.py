"""`worker --types faces` on a second host (a network namespace) takes the faces job
of an import while the first host's worker, told the other types, runs the rest."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from sqlalchemy import func, select

from photo_pipeline.config import Settings
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import faces
from photo_pipeline.jobs import JobState
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library import open_library
from tests.multihost._netns import HostNetwork
from tests.support.cli_processes import REPO
from tests.support.face_photos import OBAMA, face_images  # noqa: F401  (a fixture)


def _env(network: HostNetwork, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PHOTO_PIPELINE_DATABASE_URL": network.host_url,
        "PHOTO_PIPELINE_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
    }


def _worker(network: HostNetwork, host, home: Path, types: str, log: str):
    command = [sys.executable, "-m", "photo_pipeline", "worker", "--types", types, "--burst",
               "--poll-seconds", "0.1"]  # fmt: skip
    return host.spawn(command, _env(network, home), home / log)


def test_a_faces_worker_on_another_host_takes_the_faces_job(
    network,
    tmp_path,
    face_images,  # noqa: F811
):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in [*OBAMA[:3], "biden.jpg"]:
        shutil.copy(face_images / name, folder / name)
    home = tmp_path / "home"  # one filesystem for both hosts, as a shared mount would be
    settings = Settings(home=home, database_url=network.local_url, faces="on")
    lib = open_library(settings)
    try:
        jobs = import_folders(lib.service, lib.catalog, [folder], follow_up=settings)
        by_type = {job["job_type"]: job["id"] for job in jobs}
        first, second = network.hosts
        others = _worker(network, first, home, "scan,render,similar", "a.log")
        assert others.wait(timeout=240) == 0, (home / "a.log").read_text()
        # The first host's worker never takes the faces job: it waits for the second.
        assert lib.service.get(by_type["faces"])["state"] == JobState.QUEUED
        finder = _worker(network, second, home, "faces", "b.log")
        assert finder.wait(timeout=240) == 0, (home / "b.log").read_text()
        assert lib.service.get(by_type["faces"])["state"] == JobState.SUCCEEDED
        assert by_type["faces"] in (home / "b.log").read_text()
        assert by_type["faces"] not in (home / "a.log").read_text()
        with read_session(lib.sessions) as session:
            assert session.scalar(select(func.count()).select_from(faces)) == 4
    finally:
        lib.close()
