"""Content hash of an original: BLAKE3, streamed in fixed-size chunks; and, in the
same read, its SHA-256 (``hash_file_digests``): what a browser computes natively
(``crypto.subtle``) to ask whether the library already has a file before uploading it."""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import blake3

from photo_pipeline.media.files import media_error_from_os, open_original

# Read into one reused per-thread buffer of 64 KiB: it stays in the CPU's cache
# between the kernel's copy into it and the hash reading it. Measured on 965 MB
# from the page cache (EPYC): 0.37 CPU-s, against 0.65 with a reused 1 MiB buffer
# and 0.66-0.89 with a new bytes object per 1 MiB read.
CHUNK = 64 << 10
_buffers = threading.local()


def hash_fd(fd: int) -> str:
    """BLAKE3 hex digest of everything in the open file ``fd`` (read from offset 0,
    the file position untouched); an OSError while reading propagates."""
    buffer, hasher, offset = _buffer(), blake3.blake3(), 0
    while read := os.preadv(fd, [buffer], offset):
        hasher.update(buffer[:read])
        offset += read
    return hasher.hexdigest()


def hash_file(path: Path | str) -> str:
    """Return the BLAKE3 hex digest of the file at ``path`` in constant memory."""
    buffer, hasher = _buffer(), blake3.blake3()
    with open_original(path) as fp:
        try:
            while read := fp.readinto(buffer):
                hasher.update(buffer[:read])
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
    return hasher.hexdigest()


@dataclass(frozen=True)
class Digests:
    """An original's BLAKE3 (its identity in the catalogue) and SHA-256, hex."""

    blake3: str
    sha256: str


def hash_file_digests(path: Path | str) -> Digests:
    """BLAKE3 and SHA-256 of the file at ``path`` from one read, in constant memory
    (each chunk is hashed twice while it is in the CPU's cache)."""
    buffer, hasher, sha256 = _buffer(), blake3.blake3(), hashlib.sha256()
    with open_original(path) as fp:
        try:
            while read := fp.readinto(buffer):
                chunk = buffer[:read]
                hasher.update(chunk)
                sha256.update(chunk)
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
    return Digests(hasher.hexdigest(), sha256.hexdigest())


def _buffer() -> memoryview:
    buffer: memoryview | None = getattr(_buffers, "chunk", None)
    if buffer is None:
        buffer = _buffers.chunk = memoryview(bytearray(CHUNK))
    return buffer
