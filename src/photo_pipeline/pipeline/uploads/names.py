"""Device and file names from a client, as names that are safe to create: one path
component, never hidden, never ``.``/``..``, no control characters, at most 255 bytes.

A client names its file (tus metadata ``filename``) and its device (chosen in the web
UI); both are untrusted text. Whatever they send, the result is a plain name inside
its folder: ``../../etc/passwd`` becomes ``passwd``, ``.bashrc`` becomes ``bashrc``.
"""

from __future__ import annotations

import os
import re
import unicodedata

DEFAULT_DEVICE = "browser"
DEFAULT_FILENAME = "upload"
MAX_DEVICE = 64  # characters
_MAX_NAME_BYTES = 240  # below NAME_MAX (255), with room for a " (12)" suffix
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DEVICE_REFUSED = re.compile(r"[^\w .'()+@-]+")


def device_folder(raw: str | None) -> str:
    """The folder a device's uploads land in: its name, with anything but letters,
    digits, spaces and ``.'()+@-_`` made a dash; ``browser`` when nothing is left."""
    name = unicodedata.normalize("NFC", raw or "")
    name = _DEVICE_REFUSED.sub("-", _CONTROL.sub(" ", name))
    name = re.sub(r"\s+", " ", name).strip(" .-")[:MAX_DEVICE].strip(" .-")
    return name or DEFAULT_DEVICE


def file_name(raw: str | None) -> str:
    """A file's name as it lands: the last component of what the client sent (a
    browser sends the bare name; anything else may be an attack), no leading dots,
    control characters or surrogates, at most 240 bytes of UTF-8 with its extension
    kept; ``upload`` when nothing is left."""
    name = unicodedata.normalize("NFC", raw or "")
    name = name.encode("utf-8", "replace").decode("utf-8")  # lone surrogates: "?"
    name = re.split(r"[/\\]", _CONTROL.sub("", name))[-1].strip().lstrip(".").strip()
    if not name.lstrip("."):
        return DEFAULT_FILENAME
    return _shortened(name)


def _shortened(name: str) -> str:
    if len(name.encode()) <= _MAX_NAME_BYTES:
        return name
    stem, extension = os.path.splitext(name)
    if len(extension.encode()) > 16:
        stem, extension = name, ""
    room = _MAX_NAME_BYTES - len(extension.encode())
    return stem.encode()[:room].decode("utf-8", "ignore").rstrip() + extension


def with_suffix(name: str, n: int) -> str:
    """The ``n``-th other name for ``name`` when it is taken: ``IMG_1.jpg`` →
    ``IMG_1 (2).jpg``; a landed upload never replaces a file."""
    stem, extension = os.path.splitext(name)
    return f"{stem} ({n}){extension}"
