"""Every MediaError code, raised by read_metadata and hash_file on real broken files.

Tests run as root in CI, where ``chmod 000`` does not stop reads: permission denial is tested
with ``chmod`` only when not root, and always by making ``os.open`` fail with EACCES (the
mapping under test). Paths that are not regular files (a directory, a FIFO) and symlink
loops are unreadable for root too, so they are tested for real.
"""

from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path

import pytest
from PIL import Image

from photo_pipeline.media import MediaError, hash_file, read_metadata
from photo_pipeline.media.errors import CODES
from tests.factories import photos

BOTH = pytest.mark.parametrize("reader", [read_metadata, hash_file], ids=["metadata", "hash"])


def code_of(call, *args, **kwargs) -> str:
    with pytest.raises(MediaError) as caught:
        call(*args, **kwargs)
    assert caught.value.code in CODES
    assert caught.value.status == 422
    assert str(caught.value).startswith(caught.value.code + ": ")
    return caught.value.code


def test_empty_file(tmp_path) -> None:
    assert code_of(read_metadata, photos.empty(tmp_path / "e.jpg")) == "empty_file"


def test_empty_file_still_hashes(tmp_path) -> None:
    # hashing has nothing to refuse: the empty file's content hash is well defined
    assert hash_file(photos.empty(tmp_path / "e.jpg")) == (
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
    )


def test_text_named_jpg_is_unsupported(tmp_path) -> None:
    # the decision is made on content: no known signature means unsupported_format, even
    # though the name claims JPEG (a JPEG whose signature was damaged looks the same)
    assert code_of(read_metadata, photos.text_as_jpeg(tmp_path / "x.jpg")) == "unsupported_format"


@pytest.mark.parametrize("fmt", ["GIF", "BMP"])
def test_other_image_formats_are_unsupported(tmp_path, fmt) -> None:
    path = tmp_path / "photo.jpg"
    Image.new("RGB", (8, 8)).save(path, fmt)
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "unsupported_format"
    assert fmt.lower() in caught.value.detail


def test_avif_header_without_image_is_corrupt(tmp_path) -> None:
    # AVIF is supported (media.formats sniffs its brand): a bare ftyp box is a damaged one
    path = tmp_path / "a.heic"
    path.write_bytes(b"\x00\x00\x00\x1cftypavif\x00\x00\x00\x00avifmif1miaf" + bytes(100))
    assert code_of(read_metadata, path) == "corrupt_file"


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9, 0.99])
def test_truncated_jpeg_is_corrupt(tmp_path, keep) -> None:
    path = photos.truncated_jpeg(tmp_path / "t.jpg", keep=keep)
    assert code_of(read_metadata, path) == "corrupt_file"


def test_truncated_progressive_jpeg_is_corrupt(tmp_path) -> None:
    path = tmp_path / "p.jpg"
    photos.picture((320, 240), seed=3).save(path, "JPEG", progressive=True)
    path.write_bytes(path.read_bytes()[:-200])
    assert code_of(read_metadata, path) == "corrupt_file"


@pytest.mark.parametrize(
    ("factory", "cut"),
    [
        (photos.png, 0.5),
        (photos.png, 0.97),
        (photos.webp, 0.5),
        (photos.webp, 0.97),
        (photos.tiff, 0.5),
        (photos.heic, 0.5),
        (photos.heic, 0.97),
        (photos.jpeg, 0.001),  # only the SOI marker left
    ],
)
def test_truncated_files_are_corrupt(tmp_path, factory, cut) -> None:
    path = factory(tmp_path / "photo", size=(160, 120), seed=7)
    data = path.read_bytes()
    path.write_bytes(data[: max(3, int(len(data) * cut))])
    assert code_of(read_metadata, path) == "corrupt_file"


def test_truncated_raw_header_is_corrupt(tmp_path) -> None:
    path = photos.dng(tmp_path / "a.dng")
    path.write_bytes(path.read_bytes()[:1000])  # the pixel strip now lies past the end
    assert code_of(read_metadata, path) == "corrupt_file"


def test_tiff_header_without_ifd_is_corrupt(tmp_path) -> None:
    path = tmp_path / "x.tif"
    path.write_bytes(b"II*\x00\xff\xff\x00\x00" + bytes(20))
    assert code_of(read_metadata, path) == "corrupt_file"


def test_bomb_is_refused_before_decoding(tmp_path) -> None:
    path = photos.bomb(tmp_path / "bomb.png")
    assert path.stat().st_size < 100_000
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "too_many_pixels"
    assert "20000x20000" in caught.value.detail


def test_max_pixels_is_per_call(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg", size=(200, 100))
    assert code_of(read_metadata, path, max_pixels=19_999) == "too_many_pixels"
    assert read_metadata(path, max_pixels=20_000).width == 200


@pytest.mark.parametrize(
    "factory", [photos.png, photos.tiff, photos.webp, photos.heic, photos.dng, photos.cr2]
)
def test_max_pixels_applies_to_every_format(tmp_path, factory) -> None:
    path = factory(tmp_path / "p", size=(64, 48))
    pixels = 6720 * 4480 if factory is photos.cr2 else 64 * 48
    assert code_of(read_metadata, path, max_pixels=pixels - 1) == "too_many_pixels"


def test_images_above_pillows_own_bomb_limit_are_judged_by_max_pixels(tmp_path) -> None:
    # 10000 x 10000 = 100 Mpx is above Pillow's MAX_IMAGE_PIXELS (~89 Mpx), whose warning
    # pytest turns into an error: max_pixels alone decides, and Pillow's global is untouched
    limit = Image.MAX_IMAGE_PIXELS
    path = photos.bomb(tmp_path / "big.png", size=(10_000, 10_000))
    meta = read_metadata(path)
    assert (meta.format, meta.width, meta.height) == ("png", 10_000, 10_000)
    assert limit == Image.MAX_IMAGE_PIXELS


@BOTH
def test_missing_file_vanished(tmp_path, reader) -> None:
    assert code_of(reader, tmp_path / "gone.jpg") == "file_vanished"


@BOTH
def test_dangling_symlink_vanished(tmp_path, reader) -> None:
    link = tmp_path / "link.jpg"
    link.symlink_to(tmp_path / "deleted.jpg")
    assert code_of(reader, link) == "file_vanished"


@BOTH
def test_symlink_loop_is_unreadable(tmp_path, reader) -> None:
    a, b = tmp_path / "a.jpg", tmp_path / "b.jpg"
    a.symlink_to(b)
    b.symlink_to(a)
    assert code_of(reader, a) == "unreadable_file"


@BOTH
def test_directory_is_unreadable(tmp_path, reader) -> None:
    folder = tmp_path / "album.jpg"
    folder.mkdir()
    assert code_of(reader, folder) == "unreadable_file"


@BOTH
def test_fifo_is_unreadable_and_does_not_block(tmp_path, reader) -> None:
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.append(code_of(reader, fifo)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    if worker.is_alive():  # unblock the reader so the test run can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert outcome == ["unreadable_file"]


@BOTH
def test_symlink_to_a_photo_is_followed(tmp_path, reader) -> None:
    target = photos.jpeg(tmp_path / "real.jpg")
    link = tmp_path / "link.jpg"
    link.symlink_to(target)
    assert reader(link) == reader(target)


@BOTH
def test_permission_denied_is_unreadable(tmp_path, reader, monkeypatch) -> None:
    path = photos.jpeg(tmp_path / "p.jpg")
    real_open = os.open

    def deny(file, flags, *args, **kwargs):
        if Path(file) == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    assert code_of(reader, path) == "unreadable_file"


@BOTH
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_chmod_000_is_unreadable(tmp_path, reader) -> None:
    path = photos.jpeg(tmp_path / "p.jpg")
    path.chmod(0)
    try:
        assert code_of(reader, path) == "unreadable_file"
    finally:
        path.chmod(0o644)


class _FailingReader(io.FileIO):
    """A file whose every read fails like a dying disk."""

    def read(self, *args):
        raise OSError(errno.EIO, "Input/output error")

    def readinto(self, *args):
        raise OSError(errno.EIO, "Input/output error")


@BOTH
def test_io_error_while_reading_is_unreadable(tmp_path, reader, monkeypatch) -> None:
    path = photos.jpeg(tmp_path / "p.jpg")
    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _FailingReader(fd, "r"))
    assert code_of(reader, path) == "unreadable_file"
