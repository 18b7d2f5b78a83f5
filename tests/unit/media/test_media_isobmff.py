"""media.isobmff: the box walk behind a video's rotation and a CR3's EXIF blocks."""

from __future__ import annotations

import io
import struct

import pytest

from photo_pipeline.media.isobmff import display_rotation, find_box, iter_boxes
from tests.factories import videos


def rotation_of(data: bytes) -> int:
    return display_rotation(io.BytesIO(data), len(data))


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_reads_the_track_matrix(tmp_path, rotation) -> None:
    path = videos.video(tmp_path / "r.mp4", rotation=rotation)
    assert rotation_of(path.read_bytes()) == rotation


def test_moov_before_mdat_and_64_bit_sizes() -> None:
    # a hand-made movie: ftyp, a 64-bit-sized mdat, then moov/trak/{tkhd, mdia/hdlr vide}
    def box(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", 8 + len(payload)) + kind + payload

    matrix = struct.pack(">9i", 0, 1 << 16, 0, -(1 << 16), 0, 0, 0, 0, 1 << 30)
    tkhd = box(b"tkhd", bytes(4) + bytes(36) + matrix + bytes(8))  # version 0
    hdlr = box(b"hdlr", bytes(8) + b"vide" + bytes(12))
    moov = box(b"moov", box(b"trak", tkhd + box(b"mdia", hdlr)))
    mdat = struct.pack(">I", 1) + b"mdat" + struct.pack(">Q", 16 + 100) + bytes(100)
    data = box(b"ftyp", b"isom" + bytes(4)) + mdat + moov
    assert rotation_of(data) == 90
    assert find_box(io.BytesIO(data), len(data), (b"moov", b"trak", b"mdia", b"hdlr"))


@pytest.mark.parametrize("cut", [0.3, 0.9, 0.99])
def test_damaged_files_give_no_rotation_and_no_error(tmp_path, cut) -> None:
    data = videos.video(tmp_path / "r.mp4", rotation=90).read_bytes()
    assert rotation_of(data[: int(len(data) * cut)]) == 0


def test_walks_end_on_nonsense_sizes() -> None:
    # a box claiming more than the file, and one claiming less than its own header
    assert list(iter_boxes(io.BytesIO(b"\xff\xff\xff\xffmoov" + bytes(8)), 0, 16)) == []
    assert list(iter_boxes(io.BytesIO(b"\x00\x00\x00\x04moov" + bytes(8)), 0, 16)) == []
    endless = b"\x00\x00\x00\x08free" * 10_000  # more boxes than any real file has
    assert len(list(iter_boxes(io.BytesIO(endless), 0, len(endless)))) == 4096
