"""A library planted for the search tests (integration and browser): photos with GPS
in Paris (2018 and 2019), Berlin and Tokyo, a Nikon with a lens, a Fujifilm without a
place, and a video; real JPEGs and an MP4 from ``tests.factories``."""

from __future__ import annotations

from pathlib import Path

from tests.factories import photos, videos

LOUVRE = (48.8606, 2.3376, 35.0)
EIFFEL = (48.8584, 2.2945, 40.0)
MITTE = (52.5200, 13.4050, 30.0)
SHINJUKU = (35.6938, 139.7034, 20.0)

# file name -> jpeg() arguments
PLANTED = {
    "louvre.jpg": {"taken": "2019:06:14 10:00:00", "gps": LOUVRE},
    "eiffel.jpg": {"taken": "2019:09:02 18:30:00", "gps": EIFFEL},
    "louvre-2018.jpg": {"taken": "2018:06:14 10:00:00", "gps": LOUVRE},
    "mitte-2019.jpg": {"taken": "2019:06:14 12:00:00", "gps": MITTE},
    "DSC_0042.jpg": {
        "taken": "2019:06:20 09:00:00",
        "gps": SHINJUKU,
        "make": "NIKON CORPORATION",
        "model": "NIKON D850",
        "lens": "AF-S NIKKOR 24-70mm f/2.8E ED VR",
    },
    "no-place.jpg": {"taken": "2021:01:05 08:00:00", "make": "FUJIFILM", "model": "X-T4"},
}
PARIS_2019 = {"louvre.jpg", "eiffel.jpg"}


def write_planted(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for n, (name, options) in enumerate(PLANTED.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, offset=None, subsec=None, **options)
    when = {"creation_time": "2019-06-15T10:00:00Z"}
    videos.h264_mp4(root / "clip.mp4", seconds=0.5, metadata=when)
