"""Videos through read_metadata and render_file, on real files written by PyAV."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime
from fractions import Fraction

import av
import numpy as np
import pytest
from PIL import Image

from photo_pipeline.media import CaptureTime, MediaError, read_metadata
from photo_pipeline.media import poster as poster_module
from photo_pipeline.media.errors import CODES
from photo_pipeline.media.places import resolve_zone
from photo_pipeline.media.poster import poster_frame
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories import videos

SMALL = RenderSettings(thumbnail_size=32, preview_size=64)
UTC_TIME = {"creation_time": "2023-07-14T08:15:30.000000Z"}


def code_of(call, *args, **kwargs) -> str:
    with pytest.raises(MediaError) as caught:
        call(*args, **kwargs)
    assert caught.value.code in CODES
    return caught.value.code


# ── metadata ─────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    ("name", "codec", "fmt", "mime", "codec_name"),
    [
        ("a.mp4", "libx264", "mp4", "video/mp4", "h264"),
        ("a.mov", "libx264", "mov", "video/quicktime", "h264"),
        ("b.mp4", "libx265", "mp4", "video/mp4", "hevc"),
        ("b.mov", "libx265", "mov", "video/quicktime", "hevc"),
        ("c.m4v", "libx264", "m4v", "video/x-m4v", "h264"),
        ("d.3gp", "libx264", "3gp", "video/3gpp", "h264"),
        ("e.mkv", "libx264", "mkv", "video/x-matroska", "h264"),
        ("f.webm", "libvpx-vp9", "webm", "video/webm", "vp9"),
        ("g.avi", "mpeg4", "avi", "video/x-msvideo", "mpeg4"),
        ("h.mts", "libx264", "mpegts", "video/mp2t", "h264"),
        ("i.m2ts", "libx264", "mpegts", "video/mp2t", "h264"),
    ],
)
def test_every_container_reads_size_duration_codec_and_rate(
    tmp_path, name, codec, fmt, mime, codec_name
) -> None:
    path = videos.video(tmp_path / name, codec=codec, size=(64, 48), seconds=2.0, fps=25)
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.mime) == ("video", fmt, mime)
    assert (meta.width, meta.height, meta.orientation) == (64, 48, 1)
    assert meta.video_codec == codec_name
    assert meta.frame_rate == 25.0
    assert meta.duration == pytest.approx(2.0, abs=0.1)


def test_h264_mp4_with_utc_creation_time(tmp_path) -> None:
    meta = read_metadata(videos.h264_mp4(tmp_path / "clip.mp4", metadata=UTC_TIME))
    # QuickTime creation_time is UTC: the instant is known, the wall clock is not
    assert meta.taken == CaptureTime(datetime(2023, 7, 14, 8, 15, 30), 0, "quicktime_utc")
    assert meta.taken.utc == datetime(2023, 7, 14, 8, 15, 30, tzinfo=UTC)
    assert (meta.make, meta.model, meta.gps_latitude) == (None, None, None)
    assert meta.content_identifier is None


def test_utc_creation_time_becomes_local_time_at_the_gps_position(tmp_path) -> None:
    path = videos.h264_mp4(
        tmp_path / "clip.mp4", metadata={**UTC_TIME, "location": "+35.6895+139.6917/"}
    )
    meta = read_metadata(path)
    assert (meta.gps_latitude, meta.gps_longitude) == (35.6895, 139.6917)
    zone = resolve_zone(meta.taken, "Asia/Tokyo")  # what the pipeline's places step does
    assert (zone.local, zone.offset_minutes) == (datetime(2023, 7, 14, 17, 15, 30), 540)


def test_iphone_mov_apple_keys_win(tmp_path) -> None:
    path = videos.iphone_mov(
        tmp_path / "IMG_0001.MOV",
        creation_time="2023-07-14T08:15:30.000000Z",
        creationdate="2023-07-14T10:15:31+0200",
        location="+52.5163+013.3777+034.000/",
        content_identifier="LIVE-1234",
        model="iPhone 15 Pro",
    )
    meta = read_metadata(path)
    assert meta.format == "mov"
    assert meta.video_codec == "hevc"
    # creationdate carries the local wall clock and its offset, and wins over creation_time
    assert meta.taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 31), 120, "quicktime_local")
    assert (meta.gps_latitude, meta.gps_longitude, meta.gps_altitude) == (52.5163, 13.3777, 34.0)
    assert (meta.make, meta.model) == ("Apple", "iPhone 15 Pro")
    assert meta.content_identifier == "LIVE-1234"
    # portrait: stored 64x48, turned 90° by the display matrix
    assert (meta.width, meta.height) == (48, 64)


@pytest.mark.parametrize(
    ("rotation", "size"), [(0, (64, 48)), (90, (48, 64)), (180, (64, 48)), (270, (48, 64))]
)
def test_rotation_swaps_displayed_size(tmp_path, rotation, size) -> None:
    meta = read_metadata(videos.video(tmp_path / "r.mp4", rotation=rotation))
    assert (meta.width, meta.height) == size


def test_android_name_dated_clip(tmp_path) -> None:
    path = videos.android_mp4(
        tmp_path,
        name="VID_20230714_101530.mp4",
        metadata={"com.android.manufacturer": "Google", "com.android.model": "Pixel 8"},
    )
    meta = read_metadata(path)
    assert meta.taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30), None, "filename")
    assert (meta.make, meta.model) == ("Google", "Pixel 8")


def test_pixel_name_dated_clip(tmp_path) -> None:
    meta = read_metadata(videos.android_mp4(tmp_path, name="PXL_20230714_101530123.mp4"))
    assert meta.taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30, 123000), None, "filename")


def test_mtime_is_the_last_resort(tmp_path) -> None:
    path = videos.video(tmp_path / "clip.mp4")
    meta = read_metadata(path, mtime=datetime(2020, 1, 2, 3, 4, 5))
    assert meta.taken == CaptureTime(datetime(2020, 1, 2, 3, 4, 5), None, "mtime")


@pytest.mark.parametrize("unset", ["1904-01-01T00:00:00.000000Z", "1970-01-01T00:00:00.000000Z"])
def test_an_unset_quicktime_clock_is_no_date(tmp_path, unset) -> None:
    path = videos.video(tmp_path / "VID_20230714_101530.mp4", metadata={"creation_time": unset})
    assert read_metadata(path).taken.source == "filename"


def test_garbage_location_is_no_position(tmp_path) -> None:
    path = videos.video(tmp_path / "c.mp4", metadata={"location": "somewhere nice"})
    meta = read_metadata(path)
    assert (meta.gps_latitude, meta.gps_longitude, meta.gps_altitude) == (None, None, None)


def test_live_photo_halves_share_the_content_identifier(tmp_path) -> None:
    still, motion = videos.live_photo(tmp_path, content_identifier="ABCD-EF01")
    still_meta, motion_meta = read_metadata(still), read_metadata(motion)
    assert (still_meta.kind, motion_meta.kind) == ("photo", "video")
    assert still_meta.content_identifier == motion_meta.content_identifier == "ABCD-EF01"
    assert still.stem == motion.stem


def test_live_photo_with_jpeg_still(tmp_path) -> None:
    still, motion = videos.live_photo(tmp_path, still="jpeg", content_identifier="XYZ-9")
    assert read_metadata(still).content_identifier == "XYZ-9"
    assert read_metadata(motion).content_identifier == "XYZ-9"


def test_photos_have_no_video_fields(tmp_path) -> None:
    from tests.factories import photos

    meta = read_metadata(photos.jpeg(tmp_path / "p.jpg"))
    assert meta.kind == "photo"
    assert (meta.duration, meta.video_codec, meta.frame_rate) == (None, None, None)
    assert (meta.content_identifier, meta.motion_video) == (None, None)


def test_audio_only_file_is_unsupported(tmp_path) -> None:
    path = tmp_path / "voice.m4a"
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("aac", rate=8000)
        frame = av.AudioFrame.from_ndarray(
            np.zeros((1, 1024), dtype=np.float32), format="fltp", layout="mono"
        )
        frame.sample_rate = 8000
        container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    assert code_of(read_metadata, path) == "unsupported_format"


# ── bad input ─────────────────────────────────────────────────────────────────
def test_truncated_mp4_without_moov_is_corrupt(tmp_path) -> None:
    path = videos.truncated_mp4(tmp_path / "t.mp4")
    assert code_of(read_metadata, path) == "corrupt_file"
    assert code_of(render_file, path, SMALL) == "corrupt_file"


def test_zero_bytes_named_mp4_is_empty(tmp_path) -> None:
    path = tmp_path / "empty.mp4"
    path.write_bytes(b"")
    assert code_of(read_metadata, path) == "empty_file"
    assert code_of(render_file, path, SMALL) == "empty_file"


def test_header_claiming_too_many_pixels_is_refused_before_decoding(tmp_path) -> None:
    # 16000 x 16000 = 256 Mpx: FFmpeg accepts the size, our limit (200 Mpx) refuses it
    path = videos.huge_dimensions(tmp_path / "big.avi", size=(16_000, 16_000))
    assert code_of(read_metadata, path) == "too_many_pixels"
    assert code_of(render_file, path, SMALL) == "too_many_pixels"


def test_header_claiming_100000_squared_is_refused(tmp_path) -> None:
    # beyond what FFmpeg can allocate: it drops the size, leaving no picture to show
    path = videos.huge_dimensions(tmp_path / "huge.avi", size=(100_000, 100_000))
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "corrupt_file"
    assert "frame size" in caught.value.detail
    assert code_of(render_file, path, SMALL) == "corrupt_file"


def test_max_pixels_is_per_call_for_videos(tmp_path) -> None:
    path = videos.video(tmp_path / "c.mp4", size=(64, 48))
    assert code_of(read_metadata, path, max_pixels=64 * 48 - 1) == "too_many_pixels"
    assert read_metadata(path, max_pixels=64 * 48).width == 64
    settings = RenderSettings(thumbnail_size=32, preview_size=64, max_pixels=64 * 48 - 1)
    assert code_of(render_file, path, settings) == "too_many_pixels"


def test_sparse_4gb_file_fails_fast_with_bounded_memory(tmp_path) -> None:
    # run in a fresh interpreter so that its peak RSS is this work's alone
    path = videos.sparse(tmp_path / "huge.mp4", size=4 << 30)
    script = (
        "import resource, sys\n"
        "from photo_pipeline.media import MediaError, read_metadata\n"
        "from photo_pipeline.media.render import RenderSettings, render_file\n"
        "codes = []\n"
        "for call in (lambda p: read_metadata(p), lambda p: render_file(p, RenderSettings())):\n"
        "    try:\n"
        "        call(sys.argv[1])\n"
        "    except MediaError as exc:\n"
        "        codes.append(exc.code)\n"
        "peak = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF,"
        " resource.RUSAGE_CHILDREN))\n"
        "print(' '.join(codes), peak // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True
    )
    codes, peak_mib = done.stdout.rsplit(" ", 1)
    assert codes == "corrupt_file corrupt_file"
    # The file is 4 GiB; the peak includes the interpreter image each forked decode
    # child inherits, and what a decode reads before its time limit ends it: measured
    # 300-600 MiB with the suite running in parallel, once 1,124 MiB on a loaded CI
    # machine (the slower the machine, the further it gets). Half the file is the bound
    # that still says it was never read whole.
    assert int(peak_mib) < 2048


def test_a_hanging_decode_is_killed_at_its_time_limit(tmp_path, monkeypatch) -> None:
    # A decoder stuck in C cannot be interrupted: stand in for one with a sleep in the
    # child process (fork copies the patched module), and check the watchdog ends it.
    path = videos.video(tmp_path / "c.mp4")
    pid_file = tmp_path / "child.pid"

    def hang(*args):
        import os
        import time

        pid_file.write_text(str(os.getpid()))
        time.sleep(600)

    monkeypatch.setattr(poster_module, "decode_poster", hang)
    with pytest.raises(MediaError) as caught:
        poster_frame(path, max_size=64, max_pixels=10**6, time_limit=0.5)
    assert caught.value.code == "decode_timeout"
    settings = RenderSettings(thumbnail_size=32, preview_size=64, video_time_limit=0.5)
    assert code_of(render_file, path, settings) == "decode_timeout"
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        import os

        os.kill(child, 0)


# ── poster frame and renditions ───────────────────────────────────────────────
def quadrant_colour(image: Image.Image, qx: int, qy: int) -> tuple[int, ...]:
    width, height = image.size
    return image.convert("RGB").getpixel((width * (2 * qx + 1) // 4, height * (2 * qy + 1) // 4))


def is_red(pixel: tuple[int, ...]) -> bool:
    red, green, blue = pixel[:3]
    return red > 180 and green < 80 and blue < 80


@pytest.mark.parametrize(
    ("rotation", "red_quadrant"),
    # stored frames have red top-left; a player turns them clockwise by `rotation`
    [(0, (0, 0)), (90, (1, 0)), (180, (1, 1)), (270, (0, 1))],
)
def test_poster_frame_is_turned_like_the_player_does(tmp_path, rotation, red_quadrant) -> None:
    path = videos.video(tmp_path / "r.mov", size=(64, 48), rotation=rotation)
    poster = poster_frame(path, max_size=64, max_pixels=10**6)
    image = Image.fromarray(poster.pixels)
    assert image.size == ((64, 48) if rotation in (0, 180) else (48, 64))
    reds = [(qx, qy) for qx in (0, 1) for qy in (0, 1) if is_red(quadrant_colour(image, qx, qy))]
    assert reds == [red_quadrant]


@pytest.mark.parametrize(("seconds", "expected"), [(2.0, 0.2), (5.0, 0.5), (30.0, 1.0)])
def test_poster_frame_at_a_tenth_or_one_second(tmp_path, seconds, expected) -> None:
    path = videos.video(tmp_path / "c.mp4", seconds=seconds, fps=10, size=(32, 24))
    poster = poster_frame(path, max_size=32, max_pixels=10**6)
    assert poster.seconds == pytest.approx(expected, abs=0.11)
    # the picture is that frame: the factory's gradient moves 4 levels a frame
    expected_frame = videos.frame_pixels((32, 24), round(poster.seconds * 10))
    assert np.abs(poster.pixels[-4:, -4:].astype(int) - expected_frame[-4:, -4:]).mean() < 12


def test_poster_frame_is_not_black_when_the_clip_fades_in(tmp_path) -> None:
    # a clip whose first frames are black, as many start: the poster is past them
    path = tmp_path / "fade.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        for index in range(75):
            pixels = (
                videos.frame_pixels((64, 48), index)
                if index >= 5
                else np.zeros((48, 64, 3), np.uint8)
            )
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode(None))
    poster = poster_frame(path, max_size=64, max_pixels=10**6)
    assert poster.pixels.mean() > 40


def test_poster_frame_is_shrunk_to_max_size(tmp_path) -> None:
    path = videos.video(tmp_path / "c.mp4", size=(320, 240), seconds=1.0)
    poster = poster_frame(path, max_size=100, max_pixels=10**6)
    assert (poster.width, poster.height) == (100, 75)


@pytest.mark.parametrize(
    "make",
    [
        lambda p: videos.h264_mp4(p / "a.mp4"),
        lambda p: videos.hevc_mp4(p / "b.mp4"),
        lambda p: videos.iphone_mov(p / "c.mov"),
        lambda p: videos.video(p / "d.mts"),
        lambda p: videos.video(p / "e.webm", codec="libvpx-vp9"),
        lambda p: videos.video(p / "f.avi", codec="mpeg4"),
    ],
)
def test_render_file_makes_renditions_of_videos(tmp_path, make) -> None:
    path = make(tmp_path)
    meta = read_metadata(path)
    result = render_file(path, SMALL)
    assert [r.kind for r in result.renditions] == ["thumbnail", "preview"]
    for rendition in result.renditions:
        image = Image.open(io.BytesIO(rendition.data))
        assert image.format == "JPEG"  # the default format
        assert image.size == (rendition.width, rendition.height)
        # the displayed aspect, like the catalogue's width and height
        assert (image.width > image.height) == (meta.width > meta.height)
        assert image.convert("L").getextrema()[1] > 60  # not black
    assert isinstance(result.phash, int)


def test_different_videos_get_different_phashes_same_video_same(tmp_path) -> None:
    one = render_file(videos.video(tmp_path / "a.mp4", seed=1), SMALL).phash
    again = render_file(videos.video(tmp_path / "b.mp4", seed=1), SMALL).phash
    other = render_file(videos.video(tmp_path / "c.mp4", seed=2, rotation=90), SMALL).phash
    assert one == again
    assert one != other


def test_render_settings_fingerprint_ignores_the_time_limit() -> None:
    assert RenderSettings().fingerprint() == RenderSettings(video_time_limit=5).fingerprint()
    with pytest.raises(ValueError):
        RenderSettings(video_time_limit=0)
    assert RenderSettings.from_params({"thumbnail_size": 64}).video_time_limit > 0


def test_a_name_that_looks_like_a_url_is_just_a_file(tmp_path, monkeypatch) -> None:
    # FFmpeg would read "http:clip.mp4" as a URL; it is given the opened file instead
    videos.video(tmp_path / "http:clip.mp4")
    monkeypatch.chdir(tmp_path)
    assert read_metadata("http:clip.mp4").format == "mp4"
    assert render_file("http:clip.mp4", SMALL).renditions[0].width == 32


def test_content_decides_the_demuxer(tmp_path) -> None:
    # an MKV named .mp4 is read as the MKV it is
    path = videos.video(tmp_path / "clip.mkv")
    renamed = path.rename(tmp_path / "clip.mp4")
    assert read_metadata(renamed).format == "mkv"
    assert render_file(renamed, SMALL).renditions[0].width == 32


def test_isolated_probe_reads_the_same(tmp_path) -> None:
    path = videos.iphone_mov(tmp_path / "IMG_0001.MOV")
    assert read_metadata(path, isolate_video=True) == read_metadata(path)
    truncated = videos.truncated_mp4(tmp_path / "t.mp4")
    assert code_of(read_metadata, truncated, isolate_video=True) == "corrupt_file"


def test_isolated_probe_that_hangs_is_killed(tmp_path, monkeypatch) -> None:
    from photo_pipeline.media import metadata

    def hang(*args):
        import time

        time.sleep(600)

    monkeypatch.setattr(metadata, "probe_video", hang)
    path = videos.video(tmp_path / "c.mp4")
    assert code_of(read_metadata, path, isolate_video=True, time_limit=0.5) == "decode_timeout"


def test_non_square_pixels_are_shown_square(tmp_path) -> None:
    # anamorphic: 48x48 stored pixels, each 4/3 as wide as high, show as 64x48
    path = videos.video(tmp_path / "a.mp4", size=(48, 48), sample_aspect_ratio=Fraction(4, 3))
    meta = read_metadata(path)
    assert (meta.width, meta.height) == (64, 48)
    poster = poster_frame(path, max_size=64, max_pixels=10**6)
    assert (poster.width, poster.height) == (64, 48)


def test_the_cooperative_deadline_ends_a_decode_in_process(tmp_path) -> None:
    # inside the child, FFmpeg's interrupt callback and the per-packet deadline end a
    # slow decode with a clear code before the watchdog has to kill anything
    path = videos.video(tmp_path / "c.mp4", seconds=2.0)
    assert code_of(poster_module.decode_poster, str(path), 64, 10**6, 1e-9) == "decode_timeout"


def test_poster_of_a_photo_is_unsupported(tmp_path) -> None:
    from tests.factories import photos

    path = photos.jpeg(tmp_path / "p.jpg", size=(64, 48))
    assert code_of(poster_frame, path, max_size=64, max_pixels=10**6) == "unsupported_format"
