"""Real processes: a faces worker killed with SIGKILL mid-job and started again finds
every face once; a machine without the model files says so once and runs the rest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from PIL import Image
from sqlalchemy import func, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import face_scans, faces, jobs
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.faces.job import enqueue_faces
from tests.support.cli_processes import WorkerProcess, environment, run_command, wait_until
from tests.support.face_photos import people_folder
from tests.support.import_jobs import import_and_run, settings_for


def _scanned(session_factory) -> int:
    with read_session(session_factory) as session:
        return int(session.scalar(select(func.count()).select_from(face_scans)) or 0)


def test_a_faces_worker_killed_mid_job_resumes_without_a_face_twice(
    session_factory, db_url, tmp_path, face_images
):
    folder = people_folder(face_images, tmp_path / "photos")
    for path in sorted(folder.iterdir()):  # twice the photos: a job long enough to kill
        with Image.open(path) as image:
            image.convert("RGB").save(folder / f"copy_{path.stem}.jpg", quality=90)
    home = tmp_path / "home"
    settings = settings_for(home, db_url, preview_size=1280, faces="off")
    import_and_run(session_factory, folder, settings)
    service = JobService(session_factory)
    job = enqueue_faces(service, home).job

    worker = WorkerProcess(db_url, home, "--types", "faces", "--concurrency", "1")
    try:
        wait_until(lambda: _scanned(session_factory) >= 2, "the first faces written", 120)
    finally:
        worker.kill()
    assert service.get(job["id"])["state"] != JobState.SUCCEEDED  # killed mid-job

    again = WorkerProcess(db_url, home, "--types", "faces", "--burst")
    assert again.wait() == 0, again.log()
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    with read_session(session_factory) as session:
        per_asset = session.execute(
            select(face_scans.c.asset_id, face_scans.c.faces, func.count(faces.c.id))
            .outerjoin(faces, faces.c.asset_id == face_scans.c.asset_id)
            .group_by(face_scans.c.asset_id, face_scans.c.faces)
        ).all()
    assert len(per_asset) == 24
    assert all(row[1] == row[2] for row in per_asset), per_asset
    assert sum(row[2] for row in per_asset) == 2 * (5 + 1 + 12 + 1)


def _without_models(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine whose model package is broken: found, no files."""
    fake = tmp_path / "fake-site" / "face_recognition_models"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    return {"PYTHONPATH": os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")])}


def test_without_the_models_an_import_runs_and_says_once_why_no_faces(
    session_factory, db_url, tmp_path, face_images
):
    folder = tmp_path / "photos"
    folder.mkdir()
    shutil.copy(face_images / "obama.jpg", folder)
    home = tmp_path / "home"
    home.mkdir()
    env = _without_models(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess:
        base = environment(db_url, home)
        merged = {
            **base,
            "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], base["PYTHONPATH"]]),
            "PHOTO_PIPELINE_FACES": "auto",  # the product's default
        }
        return subprocess.run(
            [sys.executable, "-m", "photo_pipeline", *args],
            env=merged,
            capture_output=True,
            text=True,
            timeout=300,
        )

    imported = run("import", str(folder), "--wait")
    assert imported.returncode == 0, imported.stderr
    assert imported.stderr.count("shape_predictor_5_face_landmarks.dat") == 1, imported.stderr
    assert "pip install 'photo-pipeline[faces]'" in imported.stderr
    with read_session(session_factory) as session:
        types = set(session.scalars(select(jobs.c.job_type)))
    assert "faces" not in types and {"scan", "render", "similar"} <= types

    refused = run("worker", "--types", "faces", "--burst")
    assert refused.returncode == 2
    assert "shape_predictor_5_face_landmarks.dat" in refused.stderr
    waited = run("faces", "--wait")
    assert waited.returncode == 2 and "face_models_missing" in waited.stderr
    # Where the models are, the same library finds the face.
    assert run_command(db_url, home, "faces", "--wait").returncode == 0
    with read_session(session_factory) as session:
        assert session.scalar(select(func.count()).select_from(faces)) == 1
