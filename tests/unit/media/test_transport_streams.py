"""AVCHD clips (a camcorder's ``.MTS``, a Blu-ray's ``.m2ts``: 192-byte packets) and a
broadcast ``.ts``/``.mts`` (188-byte packets) are one format, ``mpegts``: what the
catalogue, the API and the templates show, whatever the name or packet size."""

from __future__ import annotations

import shutil

import pytest

from photo_pipeline.media import read_metadata
from photo_pipeline.media.formats import MIME_TYPES, VIDEO_FORMATS, kind_of
from tests.factories import videos


@pytest.mark.parametrize(
    ("name", "timecoded"),
    [("00001.MTS", True), ("00002.m2ts", True), ("clip.mts", False), ("clip.ts", False)],
)
def test_every_transport_stream_is_one_format(tmp_path, name, timecoded) -> None:
    # The factory writes AVCHD's 192-byte packets for .m2ts, 188-byte ones otherwise.
    written = videos.video(tmp_path / ("w.m2ts" if timecoded else "w.ts"), size=(64, 48))
    with open(written, "rb") as stream:
        header = stream.read(400)
    # the sync byte follows each packet's 4-byte timecode in AVCHD, opens it otherwise
    sync = (4, 196) if timecoded else (0, 188)
    assert [header[i] for i in sync] == [0x47, 0x47]
    path = tmp_path / name
    shutil.move(written, path)
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.mime) == ("video", "mpegts", "video/mp2t")
    assert (meta.width, meta.height, meta.video_codec) == (64, 48, "h264")


def test_the_format_names_know_no_second_transport_stream() -> None:
    transport = {fmt for fmt, mime in MIME_TYPES.items() if mime == "video/mp2t"}
    assert transport == {"mpegts"} and transport <= VIDEO_FORMATS
    assert kind_of("mpegts") == "video"
