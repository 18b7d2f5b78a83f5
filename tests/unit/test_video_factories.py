"""tests.factories.videos writes what it claims, checked with PyAV alone (not media)."""

from __future__ import annotations

import av
import pytest

from tests.factories import videos


def first_frame(path):
    with av.open(str(path)) as container:
        return next(container.decode(video=0))


def test_hevc_encoder_is_bundled() -> None:
    # PyAV's wheels ship FFmpeg with libx265: HEVC factories need no system package
    assert videos.has_encoder("libx265")


@pytest.mark.parametrize(
    ("factory", "codec"), [(videos.h264_mp4, "h264"), (videos.hevc_mp4, "hevc")]
)
def test_codecs_and_utc_creation_time(tmp_path, factory, codec) -> None:
    path = factory(tmp_path)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == codec
        assert (stream.width, stream.height) == (64, 48)
        assert container.metadata["creation_time"] == "2023-07-14T08:15:30.000000Z"
        assert container.duration == pytest.approx(2_000_000, rel=0.05)


def test_iphone_keys_and_rotation(tmp_path) -> None:
    path = videos.iphone_mov(tmp_path, content_identifier="ID-1", rotation=90)
    with av.open(str(path)) as container:
        tags = container.metadata
        assert container.format.name.startswith("mov")
        assert tags["com.apple.quicktime.creationdate"] == "2023-07-14T10:15:30+0200"
        assert tags["com.apple.quicktime.location.ISO6709"] == "+52.5163+013.3777+034.000/"
        assert tags["com.apple.quicktime.content.identifier"] == "ID-1"
    # FFmpeg's angle is counter-clockwise: a 90° clockwise turn reads as -90
    assert first_frame(path).rotation == -90


def test_frames_are_never_black_and_move(tmp_path) -> None:
    path = videos.video(tmp_path / "c.mp4", seconds=1.0)
    with av.open(str(path)) as container:
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    assert len(frames) == 25
    assert min(frame.mean() for frame in frames) > 40
    assert (frames[0] != frames[-1]).any()


def test_motion_photo_is_a_jpeg_followed_by_an_mp4(tmp_path) -> None:
    path, offset, length = videos.motion_photo(tmp_path)
    data = path.read_bytes()
    assert data.startswith(b"\xff\xd8") and data[offset - 2 : offset] == b"\xff\xd9"
    assert data[offset + 4 : offset + 8] == b"ftyp" and offset + length == len(data)
    assert b"GCamera:MotionPhoto" in data[:offset]


def test_broken_files(tmp_path) -> None:
    truncated = videos.truncated_mp4(tmp_path / "t.mp4")
    assert b"moov" not in truncated.read_bytes()
    sparse = videos.sparse(tmp_path / "s.mp4", size=1 << 32)
    assert sparse.stat().st_size == 1 << 32
    assert sparse.stat().st_blocks * 512 < 1 << 20  # sparse: no disk used
    huge = videos.huge_dimensions(tmp_path / "h.avi", size=(16_000, 16_000))
    with av.open(str(huge)) as container:
        assert container.streams.video[0].codec_context.width == 16_000
