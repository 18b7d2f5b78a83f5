"""Commands that only read the library start without loading the decoders: Pillow,
libvips, LibRaw, FFmpeg and NumPy load only where a job runs (issue: `--help` took
~1.9 s). Speed itself is measured outside the tests; this checks what is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.factories import photos

DECODERS = ("PIL", "numpy", "pyvips", "rawpy", "av", "pillow_heif", "alembic")

PROBE = """
import json, sys
sys.argv = ["photo-pipeline", *json.loads(sys.argv[1])]
from photo_pipeline.cli import app
try:
    app()
except SystemExit as exit_:
    assert exit_.code in (0, None), f"exit code {{exit_.code}}"
print(json.dumps(sorted(m for m in {modules} if m in sys.modules)))
"""


def loaded(args: list[str], modules: tuple[str, ...], env: dict[str, str]) -> list[str]:
    """Which of ``modules`` ``photo-pipeline ARGS`` imported, in a fresh interpreter
    (the command must succeed)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=modules), json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# What a command that only reads the catalogue never needs: the decoders above, EXIF's
# reader, dlib (faces), NumPy (the faces' grouping, near duplicates) and the web stack.
# Each was once pulled in by a module-level import (#32: `sources` cost 0.68 CPU s quiet,
# 2.0x the ORM floor of bench/startup.py; the scan module for one lock name).
NOT_FOR_READING = (*DECODERS, "exifread", "dlib", "fastapi", "uvicorn")


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["jobs", "--json"],
        ["job", "--help"],
        ["sources"],
        ["assets"],
        ["search", "paris"],
        ["people", "list"],
        ["album", "list"],
        ["tag", "list"],
    ],
)
def test_reading_commands_load_no_decoder(args, tmp_path):
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(tmp_path / "home")}
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
    # A library at its newest schema: opening it needs no migration, so no Alembic.
    init = [sys.executable, "-m", "photo_pipeline", "init"]
    assert subprocess.run(init, env=env, capture_output=True, timeout=120).returncode == 0
    assert loaded(args, NOT_FOR_READING, env) == []


@pytest.mark.parametrize("args", [["--help"], ["job", "--help"], ["organize", "--help"]])
def test_help_loads_neither_the_database_layer_nor_the_coordinator(args, tmp_path):
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(tmp_path / "home")}
    heavy = ("sqlalchemy", "pydantic", "photo_pipeline.db", "photo_pipeline.jobs", *DECODERS)
    assert loaded(args, heavy, env) == []


# What listing and showing jobs leave alone: they need the coordinator and its
# queries, not the catalogue, the media modules, the worker runtime, the progress
# bars, the PostgreSQL driver (on SQLite), Alembic or pydantic (the API's, which
# typer 0.29 also loads at every start; bench/startup.py times them).
NOT_FOR_READING_JOBS = (
    "psycopg",
    "pydantic",
    "alembic",
    "rich.progress",
    "photo_pipeline.media",
    "photo_pipeline.pipeline.library.catalog",
    "photo_pipeline.pipeline.renditions.rows",
    "photo_pipeline.pipeline.ingest.scan",
    "photo_pipeline.jobs.runtime",
    "photo_pipeline.jobs.handlers",
    *DECODERS,
)


def test_listing_and_showing_jobs_load_only_the_coordinator(tmp_path):
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(tmp_path / "home")}
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)  # SQLite
    folder = tmp_path / "photos"
    folder.mkdir()
    queue = [sys.executable, "-m", "photo_pipeline", "import", str(folder), "--json"]
    done = subprocess.run(queue, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    job_id = json.loads(done.stdout)[0]["id"]
    # The coordinator's queries are loaded: the probe ran the command itself.
    modules = ("photo_pipeline.jobs.queries", *NOT_FOR_READING_JOBS)
    for args in (["jobs", "--json"], ["job", "show", job_id[:8], "--json"]):
        assert loaded(args, modules, env) == ["photo_pipeline.jobs.queries"], args


def test_importing_photos_loads_no_video_decoder(tmp_path):
    """PyAV (FFmpeg, ~70 ms a start) loads when a video is opened, not with the scan."""
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(tmp_path / "home")}
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
    photos.jpeg(tmp_path / "photos" / "IMG_1.jpg")
    args = ["import", str(tmp_path / "photos"), "--wait", "--json"]
    assert loaded(args, ("av", "pyvips"), env) == ["pyvips"]  # rendered, by libvips


def test_the_cli_default_of_jobs_per_worker_is_the_coordinators():
    from photo_pipeline.cli.worker import DEFAULT_JOBS
    from photo_pipeline.jobs.runtime import DEFAULT_JOBS as RUNTIME_DEFAULT

    assert DEFAULT_JOBS == RUNTIME_DEFAULT
