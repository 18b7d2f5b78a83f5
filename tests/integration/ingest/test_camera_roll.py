"""A phone's camera roll, as the factories write it: photos, videos, a Live Photo,
a Motion Photo, AVIF, a screenshot and a few files that are not media. The import
catalogues every media file with the right instant and source, counts the rest as
ignored, pairs the Live Photo into one asset, and every asset's thumbnail loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near import similar  # noqa: F401  (their job types)
from tests.factories import photos, videos
from tests.support.api_server import running_server
from tests.support.camera_roll import LIVE_ID, copy_roll, roll_template_fixture  # noqa: F401
from tests.support.import_jobs import catalogue_by_path, run_worker_two_threads


def test_import_catalogues_every_media_file_and_ignores_the_rest(
    session_factory, roll_template, tmp_path
):
    root = copy_roll(roll_template[0], tmp_path / "phone")
    spec = roll_template[1]
    service = JobService(session_factory)
    catalog = Catalog(session_factory)
    [job] = import_folders(service, catalog, [root])
    run_worker_two_threads(service, session_factory)
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED
    progress = service.progress(job["id"])
    assert progress["by_state"].get("failed", 0) == 0, service.items(job["id"], states=["failed"])

    rows = catalogue_by_path(catalog)
    assert {p for p, r in rows.items() if r["state"] == "ignored"} == set(spec["ignored"])
    assert {p: r["error_code"] for p, r in rows.items() if r["state"] == "failed"} == {
        p: "sidecar" for p in spec["sidecars"]
    }
    assert catalog.ignored_counts([final["params"]["sources"][0]["id"]]) == {
        final["params"]["sources"][0]["id"]: len(spec["ignored"])
    }
    for path, (source, local, utc) in spec["media"].items():
        asset = rows[path]["asset"]
        assert rows[path]["state"] == "present", path
        assert (asset["taken_source"], asset["taken_local"], asset["taken_utc"]) == (
            source,
            local,
            utc,
        ), path
        expected_kind = "video" if Path(path).suffix.lower() in (".mov", ".mp4") else "photo"
        assert asset["kind"] == expected_kind, path
        if expected_kind == "video":
            assert asset["duration_seconds"] > 0.5, path
            assert asset["video_codec"] in ("h264", "hevc"), path
            assert asset["frame_rate"] == pytest.approx(25), path
        else:
            assert asset["duration_seconds"] is None, path
    assert rows["DCIM/clip_hevc.mp4"]["asset"]["video_codec"] == "hevc"
    assert rows["DCIM/clip_h264.mp4"]["asset"]["video_codec"] == "h264"
    assert rows["DCIM/IMG_0102.MOV"]["asset"]["content_identifier"] == LIVE_ID
    assert rows["DCIM/IMG_0102.HEIC"]["asset"]["content_identifier"] == LIVE_ID
    for still, motion in spec["live"]:
        assert rows[motion]["asset"]["live_of"] == rows[still]["asset_id"], (still, motion)
    assert rows["DCIM/IMG_0103.MOV"]["asset"]["live_of"] is None
    assert rows[spec["motion_photo"]]["asset"]["is_motion_photo"] is True

    listed = {a["id"]: a for a in catalog.assets()}
    motions = {rows[m]["asset_id"] for _, m in spec["live"]}
    # one entry per Live Photo: its motion part is carried by the still
    assert len(listed) == len(spec["media"]) - len(spec["live"])
    assert not motions & set(listed)
    for still, motion in spec["live"]:
        assert listed[rows[still]["asset_id"]]["motion_asset_id"] == rows[motion]["asset_id"]
    videos_listed = {a["id"] for a in catalog.assets(type="video")}
    assert videos_listed == {
        rows[p]["asset_id"]
        for p in ("DCIM/IMG_0103.MOV", "DCIM/clip_h264.mp4", "DCIM/clip_hevc.mp4")
    } | {rows["Camera/VID_20230714_101530.mp4"]["asset_id"]}
    live_listed = {a["id"] for a in catalog.assets(type="live")}
    assert live_listed == {rows[s]["asset_id"] for s, _ in spec["live"]} | {
        rows[spec["motion_photo"]]["asset_id"]
    }
    photos_listed = {a["id"] for a in catalog.assets(type="photo")}
    assert photos_listed | videos_listed == set(listed)

    # A rescan reads nothing again (the ignored files included) and changes nothing.
    before = catalogue_by_path(catalog)
    [again] = import_folders(service, catalog, [root])
    run_worker_two_threads(service, session_factory)
    assert service.progress(again["id"])["total"] == 0
    after = catalogue_by_path(catalog)
    assert {p: (r["state"], r["asset_id"]) for p, r in after.items()} == {
        p: (r["state"], r["asset_id"]) for p, r in before.items()
    }


def test_every_asset_thumbnail_loads_over_the_api(db_url, roll_template, tmp_path):
    root = copy_roll(roll_template[0], tmp_path / "phone")
    spec = roll_template[1]
    with running_server(db_url, tmp_path / "home") as api:
        lib = api.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        worker = Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True, concurrency=2))
        assert worker.run() == 0
        with api.client() as http:
            page = http.get("/api/assets", params={"limit": 100})
            assert page.status_code == 200, page.text
            listed = page.json()["assets"]
            assert len(listed) == len(spec["media"]) - len(spec["live"])
            assert page.json()["total"] == len(listed)
            for asset in listed:
                assert asset["thumbnail_url"], asset
                thumb = http.get(asset["thumbnail_url"])
                assert thumb.status_code == 200, (asset, thumb.text)
                assert thumb.headers["content-type"] == "image/jpeg"  # the default format
                assert thumb.content[:3] == b"\xff\xd8\xff"
            by_kind = {a["kind"] for a in listed}
            assert by_kind == {"photo", "video"}
            clips = [a for a in listed if a["kind"] == "video"]
            assert all(a["duration"] and a["duration"] > 0.5 for a in clips)
            assert all(a["playable"] for a in clips)
            lives = [a for a in listed if a["live"]]
            assert len(lives) == len(spec["live"]) + 1  # and the Motion Photo
            assert all(a["motion_url"] for a in lives)  # the Motion Photo's clip too
            only_videos = http.get("/api/assets", params={"type": "video"}).json()["assets"]
            assert {a["id"] for a in only_videos} == {a["id"] for a in clips}
            only_live = http.get("/api/assets", params={"type": "live"}).json()["assets"]
            assert {a["id"] for a in only_live} == {a["id"] for a in lives}
            assert http.get("/api/assets", params={"type": "gif"}).status_code == 422
            detail = http.get(f"/api/assets/{lives[0]['id']}").json()
            assert detail["live"] is True


def test_cli_import_counts_ignored_files_and_lists_by_type(cli, roll_template, tmp_path):
    import json

    root = copy_roll(roll_template[0], tmp_path / "phone")
    spec = roll_template[1]
    code, out, err = cli("import", str(root), "--wait")
    assert code == 0, out + err
    text = " ".join(out.split())  # the console wraps long lines
    assert f"{len(spec['ignored'])} files ignored (not media)" in text
    assert re.search(r"scan job \S+: succeeded, 17 of 17 items done\b", text), text
    code, out, _ = cli("assets", "--type", "video", "--json")
    assert code == 0
    clips = json.loads(out)
    assert len(clips) == 4
    assert {c["kind"] for c in clips} == {"video"}
    assert all(c["duration"] > 0.5 for c in clips)
    code, out, _ = cli("assets", "--type", "live", "--json")
    lives = json.loads(out)
    assert len(lives) == len(spec["live"]) + 1 and all(a["live"] for a in lives)
    assert {a["kind"] for a in lives} == {"photo"}
    code, out, _ = cli("assets", "--type", "photo")
    assert code == 0 and "live" in out and "video" not in out
    code, _, err = cli("assets", "--type", "gif")
    assert code == 2


def test_content_decides_what_is_media_not_the_name(session_factory, tmp_path):
    root = tmp_path / "mixed"
    root.mkdir()
    photos.jpeg(root / "IMG_0001", size=(32, 24), seed=1)  # a JPEG without extension
    videos.h264_mp4(tmp_path / "clip.mp4", seed=2).rename(root / "clip.dat")  # says nothing
    (root / "data.json").write_text('{"a": 1}')
    (root / "Thumbs.db").write_bytes(bytes(64))
    videos.truncated_mp4(root / "broken.mp4")  # a media name that does not decode: failed
    photos.text_as_jpeg(root / "text.jpg")
    service = JobService(session_factory)
    [job] = import_folders(service, Catalog(session_factory), [root])
    run_worker_two_threads(service, session_factory)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    failed = {
        i["item_key"].split(":", 1)[1]: i["error_code"]
        for i in service.items(job["id"], states=["failed"])
    }
    assert failed == {"broken.mp4": "corrupt_file", "text.jpg": "unsupported_format"}
    rows = catalogue_by_path(Catalog(session_factory))
    assert {p: r["state"] for p, r in rows.items()} == {
        "IMG_0001": "present",
        "clip.dat": "present",
        "data.json": "ignored",
        "Thumbs.db": "ignored",
        "broken.mp4": "failed",
        "text.jpg": "failed",
    }
    assert rows["IMG_0001"]["asset"]["format"] == "jpeg"
    assert rows["clip.dat"]["asset"]["kind"] == "video"
