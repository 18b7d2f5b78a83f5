"""Content hash of an original: BLAKE3, streamed in fixed-size chunks."""

from __future__ import annotations

from pathlib import Path

import blake3

from photo_pipeline.media.files import media_error_from_os, open_original


def hash_file(path: Path | str, *, chunk_size: int = 1 << 20) -> str:
    """Return the BLAKE3 hex digest of the file at ``path`` in constant memory."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    hasher = blake3.blake3()
    buffer = bytearray(chunk_size)
    view = memoryview(buffer)
    with open_original(path) as fp:
        try:
            # readinto one reused buffer: memory stays at chunk_size whatever the file size
            while n := fp.readinto(buffer):
                hasher.update(view[:n])
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
    return hasher.hexdigest()
