"""GET /api/assets/{id}/original and /motion over a real server: HTTP Range (first
bytes, a middle range, a suffix, 416 beyond the end), the file's own Content-Type,
the bearer or a query token bound to the path, and never a file outside the roots."""

from __future__ import annotations

import os

import pytest

from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest import scan  # noqa: F401  (its job type)
from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.factories import videos
from tests.support.api_server import running_server
from tests.support.file_opens import watch_opens

IDENTIFIER = "6E1F3A5B-7C9D-4E1F-8A2B-3C4D5E6F7A8B"


@pytest.fixture
def served(db_url, tmp_path):
    """A server whose library holds a 2 s H.264 MP4 and a Live Photo."""
    root = tmp_path / "clips"
    clip = videos.h264_mp4(root / "clip.mp4", size=(320, 240), seed=1)
    still, motion = videos.live_photo(root, stem="IMG_0500", content_identifier=IDENTIFIER)
    motion_photo, clip_at, clip_length = videos.motion_photo(
        root / "PXL_20230801_120000000.MP.jpg", seed=2, taken="2023:08:01 12:00:00"
    )
    with running_server(db_url, tmp_path / "home") as api:
        lib = api.library
        import_folders(lib.service, lib.catalog, [root])
        worker = Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True))
        assert worker.run() == 0
        with api.client() as http:
            listed = {
                # the Live Photo's still is a HEIC: the one JPEG is the Motion Photo
                "motion_photo" if a["format"] == "jpeg" else a["kind"]: a
                for a in http.get("/api/assets").json()["assets"]
            }
        yield (
            api,
            listed,
            {
                "clip": clip,
                "still": still,
                "motion": motion,
                "motion_photo": (motion_photo, clip_at, clip_length),
            },
        )


def test_range_requests_on_the_original(served):
    api, listed, files = served
    data = files["clip"].read_bytes()
    size = len(data)
    assert size > 3000
    url = listed["video"]["original_url"]
    with api.client() as http:
        whole = http.get(url)
        assert whole.status_code == 200
        assert whole.content == data
        assert whole.headers["content-type"] == "video/mp4"
        assert whole.headers["accept-ranges"] == "bytes"

        first = http.get(url, headers={"Range": "bytes=0-99"})
        assert first.status_code == 206
        assert first.content == data[:100]
        assert first.headers["content-range"] == f"bytes 0-99/{size}"
        assert first.headers["content-length"] == "100"
        assert first.headers["content-type"] == "video/mp4"

        middle = http.get(url, headers={"Range": "bytes=1000-1999"})
        assert middle.status_code == 206
        assert middle.content == data[1000:2000]
        assert middle.headers["content-range"] == f"bytes 1000-1999/{size}"

        suffix = http.get(url, headers={"Range": "bytes=-500"})
        assert suffix.status_code == 206
        assert suffix.content == data[-500:]
        assert suffix.headers["content-range"] == f"bytes {size - 500}-{size - 1}/{size}"

        beyond = http.get(url, headers={"Range": f"bytes={size}-"})
        assert beyond.status_code == 416
        assert beyond.headers["content-range"] == f"bytes */{size}"

    with api.client(token=None) as anonymous:
        refused = anonymous.get(url, headers={"Range": "bytes=0-99"})
        assert refused.status_code == 401
        assert refused.content != data[:100]


def test_live_photo_motion_part_and_query_tokens(served):
    api, listed, files = served
    live = listed["photo"]
    assert live["live"] is True and live["motion_url"] == f"/api/assets/{live['id']}/motion"
    with api.client() as http:
        motion = http.get(live["motion_url"], headers={"Range": "bytes=0-15"})
        assert motion.status_code == 206
        assert motion.content == files["motion"].read_bytes()[:16]
        assert motion.headers["content-type"] == "video/quicktime"
        assert http.get(live["original_url"]).content == files["still"].read_bytes()
        video = listed["video"]
        assert http.get(f"/api/assets/{video['id']}/motion").status_code == 404
        bound = http.get("/api/access-token", params={"path": live["motion_url"]}).json()
    with api.client(token=None) as browser:
        token = {"access_token": bound["access_token"]}
        played = browser.get(live["motion_url"], params=token, headers={"Range": "bytes=-4"})
        assert played.status_code == 206
        assert played.content == files["motion"].read_bytes()[-4:]
        # bound to its path: not another asset's original
        other = browser.get(listed["video"]["original_url"], params=token)
        assert other.status_code == 401


def test_an_original_swapped_for_a_symlink_outside_is_not_served(served, tmp_path):
    api, listed, files = served
    secret = tmp_path / "secret.mp4"
    secret.write_bytes(b"not yours" * 1000)
    clip = files["clip"]
    size = clip.stat().st_size
    clip.unlink()
    # the same size as the catalogued file, so only the confinement can refuse it
    secret.write_bytes(secret.read_bytes()[:size].ljust(size, b"x"))
    os.symlink(secret, clip)
    with api.client() as http:
        answer = http.get(listed["video"]["original_url"])
    assert answer.status_code == 404
    assert b"not yours" not in answer.content


def test_a_motion_photo_serves_its_clip_and_stays_whole(served):
    api, listed, files = served
    path, clip_at, clip_length = files["motion_photo"]
    data = path.read_bytes()
    clip = data[clip_at : clip_at + clip_length]
    asset = listed["motion_photo"]
    assert asset["live"] is True and asset["motion_photo"] is True
    assert listed["photo"]["motion_photo"] is False  # the Live Photo
    with api.client() as http:
        whole = http.get(asset["motion_url"])
        assert whole.status_code == 200
        assert whole.content == clip
        assert whole.headers["content-type"] == "video/mp4"
        assert whole.headers["content-length"] == str(clip_length)
        first = http.get(asset["motion_url"], headers={"Range": "bytes=0-15"})
        assert (first.status_code, first.content) == (206, clip[:16])
        assert first.headers["content-range"] == f"bytes 0-15/{clip_length}"
        middle = http.get(asset["motion_url"], headers={"Range": "bytes=100-199"})
        assert (middle.status_code, middle.content) == (206, clip[100:200])
        suffix = http.get(asset["motion_url"], headers={"Range": "bytes=-10"})
        assert (suffix.status_code, suffix.content) == (206, clip[-10:])
        beyond = http.get(asset["motion_url"], headers={"Range": f"bytes={clip_length}-"})
        assert beyond.status_code == 416
        assert beyond.headers["content-range"] == f"bytes */{clip_length}"
        assert http.get(asset["original_url"]).content == data  # the file as it is
    assert path.read_bytes() == data


def test_a_source_folder_swapped_for_a_link_outside_is_never_opened(served, tmp_path):
    api, listed, files = served
    clip = files["clip"]
    outside = tmp_path / "outside"
    outside.mkdir()
    # the same name and size as the catalogued file: only the confinement can refuse it
    (outside / clip.name).write_bytes(b"not yours".ljust(clip.stat().st_size, b"x"))
    clip.parent.rename(tmp_path / "clips.real")
    clip.parent.symlink_to(outside, target_is_directory=True)
    with watch_opens(outside) as opens, api.client() as http:
        answer = http.get(listed["video"]["original_url"])
        assert answer.status_code == 404
        assert opens.seen() == [], "the server opened a file outside the roots"


def test_download_sends_each_part_as_an_attachment_with_its_name(served):
    api, listed, files = served
    live, motion_photo = listed["photo"], listed["motion_photo"]
    with api.client() as http:
        still = http.get(live["original_url"], params={"download": "true"})
        motion = http.get(live["motion_url"], params={"download": "true"})
        clip = http.get(motion_photo["motion_url"], params={"download": "true"})
        played = http.get(live["original_url"])
    assert still.content == files["still"].read_bytes()
    assert motion.content == files["motion"].read_bytes()
    name = files["still"].name
    assert still.headers["content-disposition"] == (
        f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}"
    )
    assert files["motion"].name in motion.headers["content-disposition"]
    # A Motion Photo's clip is saved as the MP4 it is, not under the JPEG's name.
    assert "PXL_20230801_120000000.MP.mp4" in clip.headers["content-disposition"]
    assert "content-disposition" not in played.headers  # played, not downloaded
