"""Apple's MakerNote: the Live Photo content identifier of an iPhone still.

An iPhone writes the same identifier into the still's MakerNote (tag 0x0011,
ContentIdentifier) and into its motion MOV (``com.apple.quicktime.content.identifier``,
read by ``media.video``); equal identifiers pair the two halves of a Live Photo.

The MakerNote is ``Apple iOS\\0``, a 2-byte version, ``MM``, then a big-endian TIFF IFD
whose value offsets count from the start of the MakerNote.
"""

from __future__ import annotations

import struct
from typing import Any

_SIGNATURE = b"Apple iOS\x00"
_IFD_AT = 14  # signature, version, byte order
_CONTENT_IDENTIFIER = 0x0011
_ASCII = 2
_MAX_ENTRIES = 256


def apple_content_identifier(makernote: Any) -> str | None:
    """The ContentIdentifier in an Apple MakerNote (bytes, or exifread's list of ints)."""
    data = _as_bytes(makernote)
    if data is None or not data.startswith(_SIGNATURE) or data[12:14] != b"MM":
        return None
    if len(data) < _IFD_AT + 2:
        return None
    (count,) = struct.unpack_from(">H", data, _IFD_AT)
    for index in range(min(count, _MAX_ENTRIES)):
        at = _IFD_AT + 2 + index * 12
        if at + 12 > len(data):
            return None
        tag, kind, length, value = struct.unpack_from(">HHI4s", data, at)
        if tag != _CONTENT_IDENTIFIER or kind != _ASCII:
            continue
        if length <= 4:
            raw = value[:length]
        else:
            (offset,) = struct.unpack(">I", value)
            raw = data[offset : offset + length]
            if len(raw) < length:
                return None
        text = raw.split(b"\x00", 1)[0].decode("ascii", "replace").strip()
        return text or None
    return None


def _as_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        try:
            return bytes(value)
        except ValueError:
            return None
    return None
