"""media.motion_photo: the clip inside Google/Samsung Motion Photos, bytes untouched."""

from __future__ import annotations

import hashlib

import pytest

from photo_pipeline.media import EmbeddedVideo, find_embedded_video, read_metadata
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories import photos, videos


@pytest.mark.parametrize("style", ["container", "microvideo"])
def test_finds_the_appended_clip(tmp_path, style) -> None:
    path, offset, length = videos.motion_photo(tmp_path / "PXL.MP.jpg", style=style)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    found = find_embedded_video(path)
    assert found == EmbeddedVideo(offset, length, "video/mp4")
    assert offset + length == path.stat().st_size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # nothing written
    # the byte range is a playable video on its own
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(path.read_bytes()[offset : offset + length])
    meta = read_metadata(clip)
    assert (meta.kind, meta.format, meta.video_codec) == ("video", "mp4", "h264")


def test_read_metadata_reports_it_and_the_still_renders(tmp_path) -> None:
    path, offset, length = videos.motion_photo(tmp_path / "PXL.MP.jpg")
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.width, meta.height) == ("photo", "jpeg", 64, 48)
    assert meta.motion_video == EmbeddedVideo(offset, length, "video/mp4")
    assert meta.make == "Google"
    result = render_file(path, RenderSettings(thumbnail_size=32, preview_size=64))
    assert result.renditions[0].width == 32


def test_plain_jpeg_has_none(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg", size=(64, 48))
    assert find_embedded_video(path) is None
    assert read_metadata(path).motion_video is None


def test_xmp_that_points_at_no_video_is_not_believed(tmp_path) -> None:
    # the XMP claims a clip, but the bytes it points at are no ISO-BMFF file
    path, _, length = videos.motion_photo(tmp_path / "PXL.MP.jpg")
    data = path.read_bytes()
    path.write_bytes(data[:-length] + b"\x00" * length)
    assert find_embedded_video(path) is None


def test_clip_cut_off_is_not_believed(tmp_path) -> None:
    # a copy that lost its tail: the offset counted from the end lands inside the JPEG
    path, _, length = videos.motion_photo(tmp_path / "PXL.MP.jpg")
    path.write_bytes(path.read_bytes()[: -length // 2])
    assert find_embedded_video(path) is None


def test_clip_appended_without_xmp_is_not_claimed(tmp_path) -> None:
    still = photos.jpeg(tmp_path / "p.jpg", size=(64, 48))
    clip = videos.video(tmp_path / "c.mp4", seconds=0.5)
    still.write_bytes(still.read_bytes() + clip.read_bytes())
    assert find_embedded_video(still) is None


def test_an_offset_that_is_no_number_is_not_believed(tmp_path) -> None:
    path, _, length = videos.motion_photo(tmp_path / "PXL.MP.jpg", style="microvideo")
    data = path.read_bytes()
    written = f'MicroVideoOffset="{length}"'.encode()
    odd = b'MicroVideoOffset="\xc2\xb2' + b" " * (len(written) - 21) + b'"'
    assert len(odd) == len(written) and written in data  # the JPEG's segments unchanged
    path.write_bytes(data.replace(written, odd))
    assert find_embedded_video(path) is None


def test_damaged_xmp_is_ignored(tmp_path) -> None:
    path = tmp_path / "p.jpg"
    photos.picture((64, 48)).save(path, "JPEG", xmp=b"<x:xmpmeta <<< not xml")
    assert find_embedded_video(path) is None


def test_missing_file_is_a_media_error(tmp_path) -> None:
    from photo_pipeline.media import MediaError

    with pytest.raises(MediaError) as caught:
        find_embedded_video(tmp_path / "gone.jpg")
    assert caught.value.code == "file_vanished"
