"""Live Photo pairing: by content identifier (whatever the names), else by folder, stem
and time; never across two different identifiers or seconds apart; the same whichever
half is catalogued first; organized side by side under one stem."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos, videos
from tests.support.photo_jobs import run_worker, scan_folders

# Apple's identifiers are UUIDs
ID_A = "0A7C9E1B-2D3F-4A5B-8C6D-7E8F9A0B1C2D"
ID_B = "1B8D0F2C-3E4A-4B6C-9D7E-8F9A0B1C2D3E"
ID_B2 = "2C9E1A3D-4F5B-4C7D-8E8F-9A0B1C2D3E4F"
ID_C = "3DAF2B4E-5A6C-4D8E-9F9A-0B1C2D3E4F5A"


def pairs(session_factory) -> set[tuple[str, str]]:
    """(still file, motion file) names of every pair in the catalogue."""
    catalog = Catalog(session_factory)
    name_of = {f["asset_id"]: os.path.basename(f["path"]) for f in catalog.files()}
    listed = catalog.assets()
    return {
        (name_of[a["id"]], name_of[a["motion_asset_id"]])
        for a in listed
        if a["motion_asset_id"] is not None
    }


def test_pairs_by_identifier_whatever_the_names(session_factory, tmp_path):
    root = tmp_path / "roll"
    _, motion = videos.live_photo(root, stem="IMG_0200", content_identifier=ID_A, seed=1)
    motion.rename(root / "IMG_0200 (1).MOV")
    scan_folders(session_factory, root)
    assert pairs(session_factory) == {("IMG_0200.HEIC", "IMG_0200 (1).MOV")}

    dest = tmp_path / "library"
    service = JobService(session_factory)
    job = organize.start_organize(service, dest, "{original_name}.{ext}", move=True).job
    run_worker(session_factory, organize.JOB_TYPE)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert sorted(p.name for p in dest.iterdir()) == ["IMG_0200.heic", "IMG_0200.mov"]


def test_no_pair_across_identifiers_or_seconds_apart(session_factory, tmp_path):
    root = tmp_path / "roll"
    videos.live_photo(root, stem="IMG_0300", content_identifier=ID_B, seed=2)
    other = videos.live_photo(tmp_path / "other", stem="X", content_identifier=ID_B2, seed=3)[1]
    (root / "IMG_0300.MOV").unlink()
    shutil.move(other, root / "IMG_0300.MOV")  # same stem, another Live Photo's MOV
    photos.jpeg(root / "IMG_0301.JPG", size=(32, 24), seed=4, taken="2023:07:14 13:00:00")
    videos.iphone_mov(
        root / "IMG_0301.MOV",
        codec="libx264",
        creationdate="2023-07-14T13:00:10+0200",  # ten seconds later
        content_identifier=None,
        seconds=1.0,
    )
    scan_folders(session_factory, root)
    assert pairs(session_factory) == set()
    listed = Catalog(session_factory).assets()
    assert len(listed) == 4  # each half shown on its own


def test_no_pair_between_two_makers_devices_named_alike(session_factory, tmp_path):
    """A Nikon photo and an iPhone clip of one second, which an organize template
    named alike: no Live Photo. A pair whose names differ only in case still pairs."""
    root = tmp_path / "roll"
    photos.jpeg(
        root / "20230714_101530.jpg",
        size=(32, 24),
        seed=5,
        taken="2023:07:14 10:15:30",
        make="NIKON CORPORATION",
        model="NIKON Z 6",
    )
    videos.iphone_mov(root / "20230714_101530.mov", codec="libx264", content_identifier=ID_C)
    # Halves without identifiers (edited, or from an older iPhone)
    photos.heic(root / "IMG_0005.HEIC", size=(32, 24), seed=6, make="Apple", model="iPhone 8")
    videos.iphone_mov(root / "img_0005.mov", codec="libx264", content_identifier=None)
    scan_folders(session_factory, root)
    assert pairs(session_factory) == {("IMG_0005.HEIC", "img_0005.mov")}


def test_the_still_catalogued_after_its_motion_part_pairs_the_same(session_factory, tmp_path):
    root = tmp_path / "roll"
    still, _ = videos.live_photo(root, stem="IMG_0400", content_identifier=ID_C, seed=5)
    aside = tmp_path / "aside.HEIC"
    shutil.move(still, aside)
    scan_folders(session_factory, root)  # the MOV alone: a video
    assert [a["kind"] for a in Catalog(session_factory).assets()] == ["video"]
    shutil.move(aside, Path(root) / "IMG_0400.HEIC")
    scan_folders(session_factory, root)
    assert pairs(session_factory) == {("IMG_0400.HEIC", "IMG_0400.MOV")}
    assert [a["kind"] for a in Catalog(session_factory).assets()] == ["photo"]
    # the still deleted: the MOV shows as a video again
    (Path(root) / "IMG_0400.HEIC").unlink()
    scan_folders(session_factory, root)
    assert [a["kind"] for a in Catalog(session_factory).assets()] == ["video"]


def test_dedupe_keeps_a_live_photo_whole(session_factory, tmp_path):
    from photo_pipeline.pipeline.dedupe.plan import build_dedupe_plan

    root = tmp_path / "roll"
    still, motion = videos.live_photo(root / "a", stem="IMG_0600", content_identifier=ID_C)
    (root / "b").mkdir()
    # a: the still's name looks like a copy; b: the MOV's does. Each half alone would
    # keep a different folder; the pair keeps the still's.
    shutil.copy(still, root / "b/IMG_0600.HEIC")
    shutil.copy(motion, root / "b/IMG_0600 (1).MOV")
    still.rename(root / "a/IMG_0600 (1).HEIC")
    scan_folders(session_factory, root)
    assert len(pairs(session_factory)) == 1
    plans = build_dedupe_plan(session_factory)
    kept = sorted(p.keeper.path for p in plans)
    moved = sorted(m.member.path for p in plans for m in p.moves)
    assert kept == ["b/IMG_0600 (1).MOV", "b/IMG_0600.HEIC"]
    assert moved == ["a/IMG_0600 (1).HEIC", "a/IMG_0600.MOV"]
