"""hash_file: BLAKE3 of the content, streamed in constant memory."""

from __future__ import annotations

import hashlib
import os
import random
import tracemalloc

import blake3
import pytest

from photo_pipeline.media import hash_file
from photo_pipeline.media.hashing import CHUNK
from tests.factories import photos


def test_known_digest(tmp_path) -> None:
    path = tmp_path / "abc.bin"
    path.write_bytes(b"abc")
    assert hash_file(path) == "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"


def test_stable_and_content_addressed(tmp_path) -> None:
    first = photos.jpeg(tmp_path / "a.jpg", seed=1)
    again = photos.jpeg(tmp_path / "b.jpg", seed=1)
    other = photos.jpeg(tmp_path / "c.jpg", seed=2)
    assert hash_file(first) == hash_file(first) == hash_file(again)
    assert hash_file(first) != hash_file(other)
    assert len(hash_file(first)) == 64


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 123])
def test_chunking_does_not_change_the_digest(tmp_path, size) -> None:
    data = random.Random(5).randbytes(size)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert hash_file(path) == blake3.blake3(data).hexdigest()


def test_file_larger_than_chunk_is_streamed_in_constant_memory(tmp_path) -> None:
    size = 24 << 20
    path = tmp_path / "big.bin"
    block = random.Random(9).randbytes(1 << 20)
    with path.open("wb") as out:
        for _ in range(size >> 20):
            out.write(block)
    expected = blake3.blake3(block * (size >> 20)).hexdigest()
    tracemalloc.start()
    try:
        digest = hash_file(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest == expected
    assert peak < 4 * CHUNK, f"peak {peak} bytes: the file was not streamed"


def test_digests_give_blake3_and_sha256_of_one_read(tmp_path) -> None:
    from photo_pipeline.media.hashing import hash_file_digests

    path = tmp_path / "clip.mov"
    data = os.urandom(3 * CHUNK + 17)  # chunks and a short last one
    path.write_bytes(data)
    digests = hash_file_digests(path)
    assert digests.blake3 == blake3.blake3(data).hexdigest() == hash_file(path)
    assert digests.sha256 == hashlib.sha256(data).hexdigest()
