"""A phone's camera roll written by the factories, shared by the camera-roll tests."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.factories import photos, videos

LIVE_ID = "5D2F7A10-0C3B-4E8F-9A61-7B2C3D4E5F60"
MOV_ID = "1B7E3C2A-9D4F-4A6B-8C5D-0E1F2A3B4C5D"


def build_camera_roll(root: Path) -> dict:
    """Write the roll; returns ``{"media": {path: (source, local, utc)}, "ignored": [...],
    "live": (still, motion)}`` (paths relative to ``root``; utc None when floating)."""
    media: dict[str, tuple[str, str, datetime | None]] = {}
    dcim = root / "DCIM"
    dcim.mkdir(parents=True)

    def utc(*args: int) -> datetime:
        return datetime(*args, tzinfo=UTC)

    photos.jpeg(dcim / "IMG_0100.JPG", size=(64, 48), seed=1, subsec=None)
    media["DCIM/IMG_0100.JPG"] = (
        "exif_original",
        "2023-07-14T10:15:30",
        utc(2023, 7, 14, 8, 15, 30),
    )
    (dcim / "IMG_0100.xmp").write_text("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>")
    photos.heic(
        dcim / "IMG_0101.HEIC", size=(64, 48), seed=2, taken="2023:07:14 11:00:00", subsec=None
    )
    media["DCIM/IMG_0101.HEIC"] = ("exif_original", "2023-07-14T11:00:00", utc(2023, 7, 14, 9))
    # A Live Photo paired by Apple's content identifier.
    videos.live_photo(dcim, stem="IMG_0102", content_identifier=LIVE_ID, seed=3)
    media["DCIM/IMG_0102.HEIC"] = (
        "exif_original",
        "2023-07-14T10:15:30.123000",
        datetime(2023, 7, 14, 8, 15, 30, 123000, tzinfo=UTC),
    )
    media["DCIM/IMG_0102.MOV"] = (
        "quicktime_local",
        "2023-07-14T10:15:30",
        utc(2023, 7, 14, 8, 15, 30),
    )
    # An iPhone HEVC MOV with Apple's keys, no still: local time with its offset wins.
    videos.iphone_mov(
        dcim / "IMG_0103.MOV",
        creationdate="2023-07-14T12:00:00+0200",
        creation_time="2023-07-14T10:00:00.000000Z",
        content_identifier=MOV_ID,
        seed=4,
    )
    media["DCIM/IMG_0103.MOV"] = ("quicktime_local", "2023-07-14T12:00:00", utc(2023, 7, 14, 10))
    # A Live Photo whose halves carry no identifier: same stem, a second apart.
    photos.jpeg(
        dcim / "IMG_0105.JPG",
        size=(64, 48),
        seed=5,
        taken="2023:07:14 13:00:00",
        subsec=None,
        make="Apple",
        model="iPhone 8",
    )
    videos.iphone_mov(
        dcim / "IMG_0105.MOV",
        codec="libx264",
        creationdate="2023-07-14T13:00:01+0200",
        content_identifier=None,
        seconds=1.0,
        seed=5,
    )
    media["DCIM/IMG_0105.JPG"] = ("exif_original", "2023-07-14T13:00:00", utc(2023, 7, 14, 11))
    media["DCIM/IMG_0105.MOV"] = (
        "quicktime_local",
        "2023-07-14T13:00:01",
        utc(2023, 7, 14, 11, 0, 1),
    )
    # H.264 and HEVC MP4s with a UTC creation_time only.
    videos.h264_mp4(dcim / "clip_h264.mp4", seed=6)
    media["DCIM/clip_h264.mp4"] = (
        "quicktime_utc",
        "2023-07-14T08:15:30",
        utc(2023, 7, 14, 8, 15, 30),
    )
    videos.hevc_mp4(
        dcim / "clip_hevc.mp4", metadata={"creation_time": "2023-07-15T06:00:00.000000Z"}, seed=7
    )
    media["DCIM/clip_hevc.mp4"] = ("quicktime_utc", "2023-07-15T06:00:00", utc(2023, 7, 15, 6))
    # Android: the date is only in the name (floating: no offset known).
    camera = root / "Camera"
    videos.android_mp4(camera, seed=8)
    media["Camera/VID_20230714_101530.mp4"] = ("filename", "2023-07-14T10:15:30", None)
    videos.motion_photo(
        camera / "PXL_20230716_090000000.MP.jpg", seed=9, taken="2023:07:16 09:00:00", subsec=None
    )
    media["Camera/PXL_20230716_090000000.MP.jpg"] = (
        "exif_original",
        "2023-07-16T09:00:00",
        utc(2023, 7, 16, 7),
    )
    photos.avif(
        camera / "IMG_0106.avif",
        size=(64, 48),
        seed=10,
        taken="2023:07:16 10:00:00",
        offset="+01:00",
        subsec=None,
    )
    media["Camera/IMG_0106.avif"] = ("exif_original", "2023-07-16T10:00:00", utc(2023, 7, 16, 9))
    shots = root / "Screenshots"
    shots.mkdir()
    photos.png(
        shots / "Screenshot_2023-07-17-12-30-45.png",
        size=(40, 30),
        seed=11,
        taken=None,
        make=None,
        model=None,
    )
    media["Screenshots/Screenshot_2023-07-17-12-30-45.png"] = (
        "filename",
        "2023-07-17T12:30:45",
        None,
    )
    (root / "README").write_text("my photos\n")
    (root / "notes.txt").write_text("holiday list\n")
    (root / "Thumbs.db").write_bytes(b"\xd0\xcf\x11\xe0" + bytes(60))
    return {
        "media": media,
        "ignored": ["README", "Thumbs.db", "notes.txt"],
        "sidecars": ["DCIM/IMG_0100.xmp"],
        "live": [
            ("DCIM/IMG_0102.HEIC", "DCIM/IMG_0102.MOV"),
            ("DCIM/IMG_0105.JPG", "DCIM/IMG_0105.MOV"),
        ],
        "motion_photo": "Camera/PXL_20230716_090000000.MP.jpg",
    }


@pytest.fixture(scope="module", name="roll_template")
def roll_template_fixture(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("roll") / "phone"
    return root, build_camera_roll(root)


def copy_roll(template: Path, target: Path) -> Path:
    for folder, _, names in os.walk(template):
        for name in names:
            source = Path(folder) / name
            dest = target / source.relative_to(template)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(source.read_bytes())
            os.utime(dest, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns))
    return target
