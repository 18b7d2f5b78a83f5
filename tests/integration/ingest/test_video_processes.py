"""A video-heavy import whose worker is killed with SIGKILL again and again at random
moments, then resumed: the catalogue (videos, their facts, the Live Photo pairs) equals
a clean import's."""

from __future__ import annotations

import random

import pytest

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near import similar  # noqa: F401  (their job types)
from tests.factories import photos, videos
from tests.support.cli_processes import WorkerProcess, run_command, wait_until
from tests.support.import_jobs import catalogue_by_path, run_import

KILLS = 10


def build_roll(root) -> int:
    """Videos of every kind, Live Photos and a few photos; returns how many files."""
    count = 0
    for n in range(8):
        videos.h264_mp4(root / f"clips/h264_{n:02d}.mp4", seed=n, seconds=1.0)
        videos.android_mp4(root / "android", name=f"VID_202307{10 + n:02d}_101530.mp4", seed=50 + n)
        count += 2
    for n in range(4):
        videos.iphone_mov(
            root / f"iphone/IMG_{n:04d}.MOV",
            codec="libx264",
            content_identifier=None,
            creationdate=f"2023-07-14T1{n}:00:00+0200",
            seconds=1.0,
            seed=100 + n,
        )
        count += 1
    for n in range(5):
        identifier = f"7F0A1B2C-3D4E-4F5A-8B6C-{n:012d}"
        videos.live_photo(
            root / "live", stem=f"IMG_1{n:03d}", content_identifier=identifier, seed=200 + n
        )
        count += 2
    for n in range(4):
        photos.jpeg(root / f"photos/{n:03d}.jpg", size=(48, 32), seed=300 + n)
        count += 1
    (root / "README.txt").write_text("not media\n")
    return count + 1


def catalogue(session_factory) -> set[tuple]:
    """Everything an import decides, by path and content (never by row id)."""
    rows = catalogue_by_path(Catalog(session_factory))
    hash_of = {r["asset_id"]: r["asset"]["content_hash"] for r in rows.values() if r["asset"]}
    found = set()
    for path, row in rows.items():
        asset = row["asset"] or {}
        found.add(
            (
                path,
                row["state"],
                row["error_code"],
                asset.get("content_hash"),
                asset.get("kind"),
                asset.get("taken_local"),
                asset.get("taken_source"),
                asset.get("duration_seconds"),
                asset.get("video_codec"),
                hash_of.get(asset.get("live_of")),  # the still a motion part belongs to
            )
        )
    return found


@pytest.mark.slow
def test_kill_9_again_and_again_during_a_video_import(session_factory, db_url, tmp_path):
    root = tmp_path / "roll"
    files = build_roll(root)
    service = JobService(session_factory)
    [job] = import_folders(service, Catalog(session_factory), [root])
    chance = random.Random(13)
    kills = 0
    while kills < KILLS:
        worker = WorkerProcess(
            db_url,
            tmp_path,
            "--types",
            "scan",
            "--concurrency",
            "2",
            "--executor",
            "thread",
            "--batch-size",
            "2",
        )
        # killed once it is a random number of items further (mid-batch, mid-write…)
        target = service.progress(job["id"])["done"] + chance.randint(1, 3)
        wait_until(
            lambda target=target, worker=worker: (
                service.progress(job["id"])["done"] >= target or worker.proc.poll() is not None
            ),
            "the worker to get on",
        )
        worker.kill()
        kills += 1
        if service.progress(job["id"])["done"] >= files:
            break
    assert kills >= KILLS, f"the scan ended after {kills} kills: too few files to kill often"

    # resumed by a worker that stays to the end
    finished = run_command(
        db_url, tmp_path, "worker", "--types", "scan", "--burst", "--poll-seconds", "0.05"
    )
    assert finished.returncode == 0, finished.stderr
    assert service.get(job["id"])["state"] == "succeeded"

    reference = open_database(f"sqlite:///{tmp_path / 'reference.sqlite3'}")
    run_import(reference, root)
    resumed = catalogue(session_factory)
    assert resumed == catalogue(reference)
    assert len(resumed) == files
    assert sum(1 for row in resumed if row[-1] is not None) == 5  # the Live Photos
    reference.kw["bind"].dispose()
