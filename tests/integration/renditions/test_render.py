"""render and similar end to end on real files and both databases: import chains
scan -> render -> similar, re-runs render only what is missing or stale, bad input
fails its item only, near duplicates are grouped with the right keeper."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from PIL import Image

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near.similar import near_duplicate_groups
from photo_pipeline.pipeline.renditions import render
from photo_pipeline.pipeline.renditions.render import enqueue_render
from photo_pipeline.pipeline.renditions.rows import Renditions, rendition_file
from tests.factories import photos
from tests.factories.near_copies import scene, write_near_copies
from tests.support.cli_processes import environment
from tests.support.import_jobs import (
    SMALL,
    import_and_run,
    run_worker_retrying_at_once,
    settings_for,
)


def failed_items(service: JobService, job_id: str) -> dict[str, str]:
    return {
        Path(i["item_key"].split(":", 2)[2]).name: i["error_code"]
        for i in service.items(job_id, states=["failed"])
    }


def test_import_chains_scan_render_similar(session_factory, db_url, tmp_path):
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(6):
        photos.jpeg(root / f"{n}.jpg", size=(320, 240), seed=n, gps=(48.85, 2.29, 35.0))
    photos.jpeg(root / "copy-of-0.jpg", size=(320, 240), seed=0, gps=(48.85, 2.29, 35.0))
    Image.new("RGB", (200, 100), (30, 60, 90)).save(root / "broken-icc.jpg", icc_profile=b"x" * 300)
    photos.heic(root / "phone.heic", size=(240, 160), seed=9)
    settings = settings_for(home, db_url)

    scan_job, render_job, similar_job = import_and_run(session_factory, root, settings)

    assert [j["job_type"] for j in (scan_job, render_job, similar_job)] == [
        "scan",
        "render",
        "similar",
    ]
    assert all(j["state"] == JobState.SUCCEEDED for j in (scan_job, render_job, similar_job))
    service = JobService(session_factory)
    # The scan rendered every photo as it read it (one decode each): nothing was left
    # for the render job.
    assert service.progress(scan_job["id"])["total"] == 9
    assert service.progress(render_job["id"])["total"] == 0
    rows = Renditions(session_factory).all()
    assert len(rows) == 16  # 8 assets: the copy is one
    by_asset = {}
    for row in rows:
        by_asset.setdefault(row["asset_id"], {})[row["kind"]] = row
        file = home / row["path"]
        assert file.stat().st_size == row["bytes"]
        with Image.open(file) as image:
            assert image.format == "WEBP" and image.size == (row["width"], row["height"])
            assert max(image.size) <= SMALL[f"{row['kind']}_size"]
            assert not image.getexif()  # the GPS of the originals stays out
    warned = [r for r in rows if r["warning"]]
    assert {r["kind"] for r in warned} == {"thumbnail", "preview"}
    assert all("broken_icc_profile" in r["warning"] for r in warned)
    # content-addressed: <home>/renditions/<hash[:2]>/<hash>-<kind>.webp
    for asset in Catalog(session_factory).assets():
        for kind in ("thumbnail", "preview"):
            served = rendition_file(session_factory, home, asset["id"], kind)
            name = f"renditions/{asset['content_hash'][:2]}/{asset['content_hash']}-{kind}.webp"
            assert served["path"] == home / name and served["mime"] == "image/webp"
        assert asset["phash"] is not None and len(asset["phash"]) == 16
    assert rendition_file(session_factory, home, 10**9, "thumbnail") is None
    assert not list(home.rglob("*.tmp"))


def test_rerun_renders_only_what_is_missing_or_stale(session_factory, db_url, tmp_path):
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(4):
        photos.jpeg(root / f"{n}.jpg", size=(200, 150), seed=n)
    settings = settings_for(home, db_url)
    import_and_run(session_factory, root, settings)
    service = JobService(session_factory)
    webp = RenderSettings(**SMALL, format="webp")

    def render_again(render_settings: RenderSettings, *, force: bool = False) -> dict:
        job = enqueue_render(service, home, render_settings, force=force).job
        run_worker_retrying_at_once(session_factory)
        final = service.get(job["id"])
        assert final["state"] == JobState.SUCCEEDED
        return service.progress(job["id"])

    inodes = {p: p.stat().st_ino for p in home.rglob("*.webp")}
    assert render_again(webp)["total"] == 0  # all up to date: nothing to do
    assert {p: p.stat().st_ino for p in home.rglob("*.webp")} == inodes

    photos.jpeg(root / "new.jpg", size=(200, 150), seed=50)
    import_folders(service, Catalog(session_factory), [root])
    run_worker_retrying_at_once(session_factory)
    assert render_again(webp)["total"] == 1  # only the new photo

    assert render_again(webp, force=True)["total"] == 5

    jpeg = RenderSettings(**SMALL, format="jpeg")
    assert render_again(jpeg)["total"] == 5  # settings changed: all stale
    assert not list(home.rglob("*.webp"))  # the old files went with their rows
    assert len(list(home.rglob("*.jpg"))) == 10
    assert {r["format"] for r in Renditions(session_factory).all()} == {"jpeg"}


def test_bad_input_fails_only_its_item(session_factory, db_url, tmp_path, monkeypatch):
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(3):
        photos.jpeg(root / f"{n}.jpg", size=(200, 150), seed=n)
    good = photos.jpeg(root / "becomes-corrupt.jpg", size=(200, 150), seed=7)
    doomed = photos.jpeg(root / "disappears.jpg", size=(200, 150), seed=8)
    photos.jpeg(root / "odd.jpg", size=(200, 150), seed=9)
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker_retrying_at_once(session_factory)  # catalogued while intact
    good.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])  # then damaged
    doomed.unlink()
    render_file = render.render_file

    def buggy(path, settings):  # a decoder's bug on one odd file (injected)
        if Path(path).name == "odd.jpg":
            raise ValueError("a tag nobody writes that way")
        return render_file(path, settings)

    monkeypatch.setattr(render, "render_file", buggy)

    job = enqueue_render(service, home, RenderSettings(**SMALL)).job
    run_worker_retrying_at_once(session_factory)

    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert failed_items(service, job["id"]) == {
        "becomes-corrupt.jpg": "corrupt_file",
        "disappears.jpg": "file_vanished",
        "odd.jpg": "unexpected_error",
    }
    assert len(Renditions(session_factory).all()) == 6


def test_near_duplicates_are_grouped_with_the_best_keeper(session_factory, db_url, tmp_path):
    root, home = tmp_path / "photos", tmp_path / "home"
    families = {seed: write_near_copies(root / f"family{seed}", seed) for seed in (1, 2)}
    for n in range(6):
        scene(100 + n).save(root / f"unrelated{n}.jpg", quality=85)
    # a larger version of family 1: the best to keep
    scene(1).crop((20, 15, 660, 495)).resize((960, 720)).save(root / "family1" / "big.jpg")
    import_and_run(session_factory, root, settings_for(home, db_url))

    groups = near_duplicate_groups(session_factory)

    names = [{Path(a["files"][0]["path"]).name for a in g["assets"]} for g in groups]
    assert sorted(names, key=len, reverse=True) == [
        {p.name for p in families[1].values()} | {"big.jpg"},
        {p.name for p in families[2].values()},
    ]
    big = next(g for g in groups if len(g["assets"]) == 8)
    assert Path(big["assets"][0]["files"][0]["path"]).name == "big.jpg"
    assert big["assets"][0]["keep"] and not any(a["keep"] for a in big["assets"][1:])
    assert big["assets"][0]["distance"] == 0  # distances are to the keeper

    cli = subprocess.run(
        [sys.executable, "-m", "photo_pipeline", "duplicates", "--near", "--json"],
        env=environment(db_url, home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == json.loads(json.dumps(groups, default=str))


def test_oldest_wins_between_equal_sizes(session_factory, db_url, tmp_path):
    root, home = tmp_path / "photos", tmp_path / "home"
    for name, taken in (
        ("later.jpg", "2024:05:01 10:00:00"),
        ("earlier.jpg", "2021:05:01 10:00:00"),
    ):
        image = scene(7).crop((0, 0, 640, 480))
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=90 if name == "later.jpg" else 70)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        Image.open(buffer).save(root / name, "JPEG", exif=photos.build_exif(taken=taken))
    import_and_run(session_factory, root, settings_for(home, db_url))
    [group] = near_duplicate_groups(session_factory)
    assert [Path(a["files"][0]["path"]).name for a in group["assets"]] == [
        "earlier.jpg",
        "later.jpg",
    ]
