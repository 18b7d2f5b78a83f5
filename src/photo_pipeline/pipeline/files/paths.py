"""Relative file paths as database text, reversibly, even for non-UTF-8 names.

A name that is valid UTF-8 is stored as it is. Bytes that are not (a file copied from
an old Windows share, say) cannot go into a text column; such a path is stored as
``%bytes:`` followed by its percent-encoded bytes, and so is any real path that
happens to start with that marker.
"""

from __future__ import annotations

import os
import unicodedata
from urllib.parse import quote_from_bytes, unquote_to_bytes

MARKER = "%bytes:"


def to_text(relative: str) -> str:
    """The storable form of a relative path as ``os`` returns it (surrogate-escaped)."""
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        return MARKER + quote_from_bytes(os.fsencode(relative), safe="/")
    if relative.startswith(MARKER):
        return MARKER + quote_from_bytes(os.fsencode(relative), safe="/")
    return relative


def from_text(stored: str) -> str:
    """The path ``os`` functions accept, from its stored form."""
    if stored.startswith(MARKER):
        return os.fsdecode(unquote_to_bytes(stored[len(MARKER) :]))
    return stored


def display(stored: str) -> str:
    """A printable form for people (undecodable bytes shown as \\x escapes)."""
    return os.fsencode(from_text(stored)).decode("utf-8", "backslashreplace")


def name_key(name: str) -> str:
    """A file name as a person reads it, for matching a sidecar with its photo: case
    ignored (a card or share that did not keep it) and Unicode's two spellings of an
    accent alike (macOS writes ``é`` decomposed, NFD; Linux and Windows editors
    composed, NFC)."""
    return unicodedata.normalize("NFC", name.casefold())


def is_symlink(root: str, stored: str) -> bool:
    """Whether the file at ``stored`` below ``root`` is itself a symlink (organize and
    dedupe never read through one)."""
    return os.path.islink(os.path.join(root, from_text(stored)))
