"""Text as a text column takes it."""

from __future__ import annotations


def is_text(text: str) -> bool:
    """Whether ``text`` is Unicode text a column takes as it is (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(text: str) -> str:
    """``text`` with any lone surrogate written as an escape. ``os`` decodes a file name
    that is not UTF-8 with surrogates (``caf\\udce9.jpg``), which no text column or JSON
    encoder takes: a message naming such a file shows the byte as ``\\xe9``, as
    ``pipeline.files.paths.display`` does."""
    if is_text(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no undecodable byte stands for
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
