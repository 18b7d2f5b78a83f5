"""hash_file: BLAKE3 of the content, streamed in constant memory."""

from __future__ import annotations

import random
import tracemalloc

import blake3
import pytest

from photo_pipeline.media import hash_file
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


@pytest.mark.parametrize("chunk_size", [1, 7, 4096, 1 << 20])
def test_chunking_does_not_change_the_digest(tmp_path, chunk_size) -> None:
    data = random.Random(5).randbytes(3 * 4096 + 123)
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert hash_file(path, chunk_size=chunk_size) == blake3.blake3(data).hexdigest()


def test_file_larger_than_chunk_is_streamed_in_constant_memory(tmp_path) -> None:
    size, chunk = 24 << 20, 64 << 10
    path = tmp_path / "big.bin"
    block = random.Random(9).randbytes(1 << 20)
    with path.open("wb") as out:
        for _ in range(size >> 20):
            out.write(block)
    expected = blake3.blake3(block * (size >> 20)).hexdigest()
    tracemalloc.start()
    try:
        digest = hash_file(path, chunk_size=chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert digest == expected
    assert peak < 4 * chunk, f"peak {peak} bytes: the file was not streamed"


def test_chunk_size_must_be_positive(tmp_path) -> None:
    path = photos.empty(tmp_path / "e.bin")
    with pytest.raises(ValueError, match="chunk_size"):
        hash_file(path, chunk_size=0)
