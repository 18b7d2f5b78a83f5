"""dedupe on real files (#30): a scope of sources and capture days limits the plan and
the job; a near dry run says how many groups wait for a decision and where to make
it; a Live Photo's video is kept beside its still, and says so."""

from __future__ import annotations

import json

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import dedupe
from photo_pipeline.pipeline.library.browse import Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.keeper import explain
from photo_pipeline.pipeline.library.scope import ScopeError
from tests.factories import photos, videos
from tests.support.cli_processes import run_command
from tests.support.dedupe_library import library_fixture, same_bytes, sha256_tree  # noqa: F401
from tests.support.photo_jobs import run_worker, scan_folders

TYPES = (dedupe.JOB_TYPE, dedupe.UNDO_JOB_TYPE)


def test_a_scope_limits_the_plan_and_the_job(session_factory, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    summer = photos.jpeg(a / "IMG_0001.jpg", size=(32, 24), seed=1)  # 2023-07-14
    same_bytes(summer, a / "old/IMG_0001 (1).jpg", 3)
    same_bytes(summer, b / "IMG_0001.jpg", 9)
    winter = photos.jpeg(a / "IMG_0002.jpg", size=(32, 24), seed=2, taken="2022:01:02 10:00:00")
    same_bytes(winter, b / "IMG_0002.jpg", 9)
    scan_folders(session_factory, a, b)

    def moving(**scope) -> list[str]:
        plan = dedupe.plan_dedupe(session_factory, **scope)
        return sorted(q["path"] for g in plan["groups"] for q in g["quarantine"])

    everything = moving()
    assert len(everything) == 3  # two copies of summer, one of winter
    # One source: its own copies only, one kept in it (the copy in b is left alone).
    assert moving(sources=[str(a)]) == [str(a / "old/IMG_0001 (1).jpg")]
    assert moving(sources=[str(b)]) == []  # one copy of each there
    # Capture days: winter's group only.
    assert len(moving(since="2022-01-01", until="2022-01-02")) == 1
    assert moving(since="2023-07-14", sources=[str(a)]) == [str(a / "old/IMG_0001 (1).jpg")]
    with pytest.raises(ScopeError) as refused:
        dedupe.plan_dedupe(session_factory, sources=[str(a / "old")])
    assert refused.value.code == "source_not_registered"
    # The job moves what the scoped plan said, no more.
    service = JobService(session_factory)
    job = dedupe.start_dedupe(service, tmp_path / "home", sources=[str(a)]).job
    assert job["params"]["sources"]
    run_worker(session_factory, *TYPES)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert sorted(sha256_tree(b)) == ["IMG_0001.jpg", "IMG_0002.jpg"]
    assert sorted(sha256_tree(a)) == ["IMG_0001.jpg", "IMG_0002.jpg"]


def test_a_near_dry_run_says_which_groups_wait_for_a_decision(
    session_factory, library, db_url, tmp_path
):
    # The library has two near groups; a decision was recorded on one only.
    plan = dedupe.plan_dedupe(session_factory, near=True)
    assert plan["summary"]["near_undecided"] == 1
    assert "/duplicates" in plan["summary"]["decide"]
    assert "near_undecided" not in dedupe.plan_dedupe(session_factory)["summary"]
    cli = run_command(db_url, tmp_path / "home", "dedupe", "--near", "--dry-run")
    assert cli.returncode == 0, cli.stderr
    text = " ".join(cli.stdout.split())  # as read, whatever the terminal's width
    assert "1 near-duplicate group waits for your decision" in text
    assert "Duplicates page" in text and "duplicates --near" in text
    as_json = run_command(db_url, tmp_path / "home", "dedupe", "--near", "--dry-run", "--json")
    assert json.loads(as_json.stdout)["summary"]["near_undecided"] == 1


def test_a_live_photo_video_is_kept_beside_its_still_and_says_so(session_factory, tmp_path):
    root = tmp_path / "photos"
    videos.live_photo(root / "live", stem="IMG_5000", content_identifier="A-1", seed=5)
    for name in ("IMG_5000.HEIC", "IMG_5000.MOV"):
        same_bytes(root / "live" / name, root / "live-copy" / name, 40)
    scan_folders(session_factory, root)
    by_path = {f["path"]: f["asset_id"] for f in Catalog(session_factory).files()}
    still = by_path["live/IMG_5000.HEIC"]
    Browser(session_factory).decide(f"exact:{still}", [str(root / "live/IMG_5000.HEIC")])
    groups = {g["group"]: g for g in dedupe.plan_dedupe(session_factory)["groups"]}
    motion = groups[f"exact:{by_path['live/IMG_5000.MOV']}"]
    assert motion["keeper"] == str(root / "live/IMG_5000.MOV")
    assert motion["reason"] == "beside_its_still"
    assert "RAW+JPEG" not in motion["why"] and "Live Photo" in motion["why"]
    assert explain("beside_its_still") == motion["why"]
