"""media.formats.sniff: every format recognised by content, on real files and headers."""

from __future__ import annotations

import pytest

from photo_pipeline.media.formats import (
    HEADER_SIZE,
    MIME_TYPES,
    RAW_FORMATS,
    VIDEO_FORMATS,
    kind_of,
    sniff,
)
from tests.factories import photos, videos


def sniff_file(path) -> str:
    with open(path, "rb") as fp:
        return sniff(fp.read(HEADER_SIZE))


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("clip.mp4", lambda p: videos.h264_mp4(p), "mp4"),
        ("clip.mov", lambda p: videos.video(p), "mov"),
        ("clip.m4v", lambda p: videos.video(p), "m4v"),
        ("clip.3gp", lambda p: videos.video(p), "3gp"),
        ("clip.mkv", lambda p: videos.video(p), "mkv"),
        ("clip.webm", lambda p: videos.video(p, codec="libvpx-vp9"), "webm"),
        ("clip.avi", lambda p: videos.video(p, codec="mpeg4"), "avi"),
        ("clip.ts", lambda p: videos.video(p), "mpegts"),
        ("clip.m2ts", lambda p: videos.video(p), "mpegts"),
        ("still.avif", lambda p: photos.avif(p, size=(32, 24)), "avif"),
        ("raw.cr3", lambda p: photos.cr3(p), "cr3"),
        ("raw.raf", lambda p: photos.raf(p), "raf"),
        ("raw.orf", lambda p: photos.orf(p), "orf"),
        ("raw.rw2", lambda p: photos.rw2(p), "rw2"),
        ("still.heic", lambda p: photos.heic(p, size=(32, 24)), "heif"),
        ("still.webp", lambda p: photos.webp(p, size=(32, 24)), "webp"),
    ],
)
def test_real_files(tmp_path, name, make, expected) -> None:
    path = make(tmp_path / name)
    assert sniff_file(path) == expected
    assert expected in MIME_TYPES


def test_the_name_does_not_matter(tmp_path) -> None:
    path = videos.video(tmp_path / "clip.mov")
    renamed = path.rename(tmp_path / "holiday.jpg")
    assert sniff_file(renamed) == "mov"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"\x00\x00\x00\x14ftypqt  \x00\x00\x02\x00qt  ", "mov"),
        (b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom", "mp4"),
        (b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomavc1", "mp4"),
        (b"\x00\x00\x00\x14ftypM4V \x00\x00\x00\x01M4V ", "m4v"),
        (b"\x00\x00\x00\x14ftyp3gp5\x00\x00\x00\x003gp5", "3gp"),
        (b"\x00\x00\x00\x14ftyp3g2a\x00\x00\x00\x00", "3gp"),
        (b"\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom", "cr3"),
        (b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf", "avif"),
        (b"\x00\x00\x00\x1cftypmif1\x00\x00\x00\x00mif1avifmiaf", "avif"),
        (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", "heif"),
        (b"\x00\x00\x00\x18ftypM4A \x00\x00\x00\x00M4A mp42", "other:M4A"),  # audio
        # QuickTime from before the ftyp box: the first atom is the movie or its data
        (b"\x00\x00\x10\x00moov\x00\x00\x00\x6cmvhd", "mov"),
        (b"\x00\x00\x00\x08wide\x00\x01\x00\x00mdat", "mov"),
        (b"RIFF\x00\x10\x00\x00AVI LIST", "avi"),
        (b"RIFF\x00\x10\x00\x00WEBPVP8 ", "webp"),
        (b"RIFF\x00\x10\x00\x00WAVEfmt ", "other:riff"),
        (b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm", "webm"),
        (b"\x1a\x45\xdf\xa3\xa3\x42\x86\x81\x01\x42\x82\x88matroska", "mkv"),
        (b"\x1a\x45\xdf\xa3\x84\x42\x86\x81\x01", "other:ebml"),
        (b"IIRO\x08\x00\x00\x00", "orf"),
        (b"IIRS\x08\x00\x00\x00", "orf"),
        (b"IIU\x00\x18\x00\x00\x00", "rw2"),
        (b"FUJIFILMCCD-RAW 0201FF383501", "raf"),
        (b"II*\x00\x10\x00\x00\x00CR\x02\x00", "cr2"),
        (b"II*\x00\x08\x00\x00\x00", "tiff"),
        # JPEG XL: recognised to say what it is, not supported (see media.formats)
        (b"\x00\x00\x00\x0cJXL \x0d\x0a\x87\x0a", "other:jxl"),
        (b"\xff\x0a\xfa\x7f", "other:jxl"),
    ],
)
def test_headers(header, expected) -> None:
    assert sniff(header + bytes(HEADER_SIZE - len(header))) == expected


def _packets(size: int, count: int, prefix: int = 0) -> bytes:
    packet = bytes(prefix) + b"\x47" + bytes(size - prefix - 1)
    return packet * count


def test_transport_streams_need_three_sync_bytes_at_packet_distance() -> None:
    assert sniff(_packets(188, 4)) == "mpegts"
    assert sniff(_packets(192, 4, prefix=4)) == "mpegts"  # AVCHD's timecoded packets
    # one "G" is just a letter; two packets are not enough to tell
    assert sniff(b"G" + bytes(HEADER_SIZE - 1)) == "other:unknown"
    assert sniff(_packets(188, 2)) == "other:unknown"
    # the sync byte at the wrong distance
    assert sniff(_packets(190, 4)) == "other:unknown"


def test_kinds() -> None:
    assert {kind_of(fmt) for fmt in VIDEO_FORMATS} == {"video"}
    assert {kind_of(fmt) for fmt in RAW_FORMATS | {"jpeg", "avif", "heif"}} == {"photo"}
    assert MIME_TYPES.keys() >= VIDEO_FORMATS
    assert MIME_TYPES.keys() >= RAW_FORMATS
