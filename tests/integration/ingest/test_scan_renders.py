"""A first import decodes each photo once (#18): the scan renders new photos in their
items, and that decode is what catches a truncated JPEG: its item fails with
corrupt_file, and no listing ever shows it."""

from __future__ import annotations

import os

from sqlalchemy import select

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media import hash_file, read_metadata
from photo_pipeline.media.decode import pixels_checked_by_caller
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.browse import AssetFilter, Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings
from photo_pipeline.pipeline.renditions.rows import Renditions
from tests.factories import photos
from tests.support.import_jobs import import_and_run, run_worker_retrying_at_once, settings_for


def test_a_truncated_jpeg_fails_its_item_in_the_render_decode_and_is_never_listed(
    session_factory, db_url, tmp_path
):
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(4):
        photos.jpeg(root / f"good-{n}.jpg", size=(800, 600), seed=n)
    truncated = photos.truncated_jpeg(root / "truncated.jpg", size=(800, 600), seed=99)
    with pixels_checked_by_caller():
        read_metadata(truncated)  # its headers read fine: only a decode can tell

    scan_job, render_job, similar_job = import_and_run(
        session_factory, root, settings_for(home, db_url)
    )

    service = JobService(session_factory)
    assert [j["state"] for j in (scan_job, render_job, similar_job)] == [JobState.SUCCEEDED] * 3
    failed = {
        i["item_key"].split(":", 1)[1]: i for i in service.items(scan_job["id"], states=["failed"])
    }
    assert list(failed) == ["truncated.jpg"]
    assert failed["truncated.jpg"]["error_code"] == "corrupt_file"
    # libvips' decode, the one that renders ("…: does not decode: <libvips' words>");
    # the check decode's was Pillow's ("…: jpeg data does not decode: OSError: image
    # file is truncated")
    assert "truncated.jpg: does not decode: " in failed["truncated.jpg"]["error_message"]
    assert service.progress(render_job["id"])["total"] == 0  # the scan rendered the rest
    # Catalogued as a failed file, never as an asset: no listing can show it.
    files = {f["path"]: f for f in Catalog(session_factory).files()}
    assert files["truncated.jpg"]["state"] == "failed"
    assert files["truncated.jpg"]["asset_id"] is None
    with read_session(session_factory) as session:
        hashes = set(session.scalars(select(assets.c.content_hash)))
    assert hash_file(truncated) not in hashes and len(hashes) == 4
    listed, _ = Browser(session_factory).asset_page(AssetFilter())
    assert sorted(a["content_hash"] for a in listed) == sorted(hashes)
    assert len(Catalog(session_factory).assets()) == 4
    # The four good photos have both renditions, the truncated one left nothing behind.
    rows = Renditions(session_factory).all()
    assert len(rows) == 8
    stored = {p.name for p in (home / "renditions").rglob("*") if p.is_file()}
    assert stored == {row["path"].rsplit("/", 1)[1] for row in rows}


def test_content_already_rendered_is_not_rendered_again(session_factory, db_url, tmp_path):
    first, second, home = tmp_path / "first", tmp_path / "second", tmp_path / "home"
    for n in range(3):
        photos.jpeg(first / f"{n}.jpg", size=(400, 300), seed=n)
        # the same photos in another folder, and a copy within the same batch
        (second / f"copy-{n}.jpg").parent.mkdir(parents=True, exist_ok=True)
        (second / f"copy-{n}.jpg").write_bytes((first / f"{n}.jpg").read_bytes())
    (first / "twin.jpg").write_bytes((first / "0.jpg").read_bytes())
    settings = settings_for(home, db_url)
    import_and_run(session_factory, first, settings)
    inodes = {p: p.stat().st_ino for p in (home / "renditions").rglob("*") if p.is_file()}
    assert len(inodes) == 6  # three contents, two renditions each: the twin is one

    service = JobService(session_factory)
    jobs = import_folders(service, Catalog(session_factory), [second], follow_up=settings)
    run_worker_retrying_at_once(session_factory)

    assert all(service.get(j["id"])["state"] == JobState.SUCCEEDED for j in jobs)
    after = {p: p.stat().st_ino for p in (home / "renditions").rglob("*") if p.is_file()}
    assert after == inodes  # nothing written again, no temp file left
    assert len(Renditions(session_factory).all()) == 6


def test_names_that_are_not_utf8_are_read_and_rendered(session_factory, db_url, tmp_path):
    """A NAS share or an old camera card holds names in Latin-1 (or garbage): Python
    reads them as surrogates, which libvips cannot take. Each photo is still read,
    dated from its name, and rendered by the scan and by ``render --force``."""
    root, home = tmp_path / "photos", tmp_path / "home"
    folder = root / os.fsdecode(b"caf\xe9")
    png = photos.png(folder / os.fsdecode(b"IMG_20190203_040506_\xff.png"), seed=1, taken=None)
    jpeg = photos.jpeg(folder / os.fsdecode(b"\xe9t\xe9.jpg"), seed=2)
    (folder / os.fsdecode(b"caf\xe9.jpg")).write_text("no photo")  # its failure names it
    settings = settings_for(home, db_url)

    jobs = import_and_run(session_factory, root, settings)

    service = JobService(session_factory)
    assert [j["state"] for j in jobs] == [JobState.SUCCEEDED] * 3
    [failed] = service.items(jobs[0]["id"], states=["failed"])
    assert failed["error_code"] == "unsupported_format"
    assert "caf\\xe9.jpg: content is not" in failed["error_message"]
    listed = {a["content_hash"]: a for a in Catalog(session_factory).assets()}
    assert set(listed) == {hash_file(png), hash_file(jpeg)}
    assert listed[hash_file(png)]["taken_local"] == "2019-02-03T04:05:06"  # from its name
    assert len(Renditions(session_factory).all()) == 4  # rendered by the scan
    forced = enqueue_render(service, home, render_settings(settings), force=True).job
    run_worker_retrying_at_once(session_factory)
    assert service.get(forced["id"])["state"] == JobState.SUCCEEDED
    assert service.progress(forced["id"])["by_state"] == {"succeeded": 2}
