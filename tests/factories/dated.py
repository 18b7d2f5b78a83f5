"""Write real files whose capture date hides where the fast EXIF reader does not look:
in XMP only, in a camera's maker note only, or in QuickTime keys FFmpeg leaves aside.

Every factory takes a target ``path`` (a file path, or an existing directory to write a
default name into) and returns the path written. Names carry no date, so a reader that
misses the hidden one falls back to the file's mtime.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import PngImagePlugin

from tests.factories import photos, videos

MAKER_NOTE = 0x927C


def xmp_packet(**properties: str) -> bytes:
    """An XMP packet with ``prefix_Name="value"`` properties of the exif, photoshop and
    xmp namespaces, e.g. ``exif_DateTimeOriginal="2021-05-06T07:08:09+09:00"``."""
    attributes = " ".join(
        f'{name.replace("_", ":", 1)}="{value}"' for name, value in properties.items()
    )
    return (
        '<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about=""'
        ' xmlns:exif="http://ns.adobe.com/exif/1.0/"'
        ' xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"'
        ' xmlns:xmp="http://ns.adobe.com/xap/1.0/"'
        f" {attributes}/>"
        "</rdf:RDF></x:xmpmeta>\n"
        '<?xpacket end="w"?>'
    ).encode()


def jpeg_with_xmp_date(
    path: Path | str,
    *,
    seed: int = 0,
    taken: str | None = None,
    **properties: str,
) -> Path:
    """A JPEG with EXIF (make, model; DateTimeOriginal only if ``taken``) whose date is
    in XMP; ``properties`` as :func:`xmp_packet`, by default exif:DateTimeOriginal with
    an offset."""
    if not properties:
        properties = {"exif_DateTimeOriginal": "2021-05-06T07:08:09.250+09:00"}
    target = photos._target(path, f"photo_{seed:04d}.jpg")
    exif = photos.build_exif(taken=taken, offset=None, subsec=None)
    image = photos.picture((64, 48), seed)
    image.save(target, "JPEG", exif=exif, xmp=xmp_packet(**properties), quality=85)
    return target


def png_with_xmp_date(path: Path | str, *, seed: int = 0, **properties: str) -> Path:
    """A PNG without eXIf whose date is in its XMP (an iTXt ``XML:com.adobe.xmp`` chunk,
    as Photoshop and Lightroom write it); by default photoshop:DateCreated with an
    offset."""
    if not properties:
        properties = {"photoshop_DateCreated": "2019-12-31T23:59:58-05:00"}
    target = photos._target(path, f"scan_{seed:04d}.png")
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp_packet(**properties).decode())
    photos.picture((64, 48), seed).save(target, "PNG", pnginfo=info)
    return target


def pentax_makernote(date: tuple[int, int, int], time: tuple[int, int, int]) -> bytes:
    """A Pentax maker note (``PENTAX \\0``, ``MM``, an IFD) holding only Date (0x0006:
    big-endian year, month, day) and Time (0x0007: hour, minute, second), both inline."""
    entries = [
        struct.pack(">HHI", 0x0006, 7, 4) + struct.pack(">HBB", *date),
        struct.pack(">HHI", 0x0007, 7, 3) + bytes(time) + b"\x00",
    ]
    return b"PENTAX \x00MM" + struct.pack(">H", len(entries)) + b"".join(entries) + bytes(4)


def jpeg_with_pentax_date(
    path: Path | str,
    *,
    date: tuple[int, int, int] = (2018, 3, 4),
    time: tuple[int, int, int] = (5, 6, 7),
    offset_time: str | None = "+01:00",
    seed: int = 0,
) -> Path:
    """A Pentax JPEG whose only capture date is in its maker note; ``offset_time`` is
    EXIF OffsetTime (the camera's zone), None for none."""
    target = photos._target(path, f"IMGP{seed:04d}.JPG")
    return photos.jpeg(
        target,
        size=(64, 48),
        seed=seed,
        taken=None,
        offset=None,
        make="PENTAX",
        model="PENTAX K-3 II",
        offset_time=offset_time,
        extra_exif={MAKER_NOTE: pentax_makernote(date, time)},
    )


def panasonic_makernote(stamp: str) -> bytes:
    """A Panasonic maker note (``Panasonic\\0\\0\\0``, then a little-endian IFD) with
    TimeStamp (0x00af) only. Its 20 bytes lie after the IFD, at an offset counted from
    the EXIF block's TIFF header: :func:`jpeg_with_panasonic_date` fills it in once the
    file is laid out (it is zero here)."""
    value = stamp.encode("ascii") + b"\x00"
    entry = struct.pack("<HHII", 0x00AF, 2, len(value), 0)
    return _PANASONIC + struct.pack("<H", 1) + entry + bytes(4) + value


_PANASONIC = b"Panasonic\x00\x00\x00"
_PANASONIC_VALUE_AT = len(_PANASONIC) + 2 + 12 + 4  # header, count, one entry, next IFD


def jpeg_with_panasonic_date(
    path: Path | str, *, stamp: str = "2017:08:09 10:11:12", seed: int = 0
) -> Path:
    """A Panasonic JPEG whose only capture date is its maker note's TimeStamp."""
    target = photos._target(path, f"P{seed:07d}.JPG")
    photos.jpeg(
        target,
        size=(64, 48),
        seed=seed,
        taken=None,
        offset=None,
        make="Panasonic",
        model="DC-GH5",
        extra_exif={MAKER_NOTE: panasonic_makernote(stamp)},
    )
    data = bytearray(target.read_bytes())
    tiff_header = data.index(b"Exif\x00\x00") + 6
    note = data.index(_PANASONIC)
    pointer = note + len(_PANASONIC) + 2 + 8  # the entry's value offset
    struct.pack_into("<I", data, pointer, note - tiff_header + _PANASONIC_VALUE_AT)
    target.write_bytes(bytes(data))
    return target


def exiftool_path() -> str | None:
    return shutil.which("exiftool")


def require_exiftool() -> None:
    """Skip (or, under CI=true, fail) the calling test when exiftool is not installed."""
    if exiftool_path() is not None:
        return
    error = "exiftool not found (apt-get install libimage-exiftool-perl; `make test` does as root)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{error}; CI requires it", pytrace=False)
    pytest.skip(error)


def write_tags(path: Path, *assignments: str) -> Path:
    """Write tags into ``path`` with exiftool (``"-Group:Tag=value"`` arguments)."""
    executable = exiftool_path()
    if executable is None:
        raise RuntimeError("writing these test files needs exiftool (libimage-exiftool-perl)")
    subprocess.run(
        [executable, "-q", "-overwrite_original", *assignments, str(path)],
        check=True,
        capture_output=True,
    )
    return path


def mov_with_quicktime_date(
    path: Path | str,
    *,
    date: str = "2016-06-07T08:09:10+0300",
    seed: int = 0,
    **kwargs: Any,
) -> Path:
    """A MOV with no ``creation_time`` and no Apple creationdate: its only date is a
    QuickTime ``date`` key (local time with offset, as some cameras and Android apps
    write it), which FFmpeg reads but the fast reader did not use."""
    target = photos._target(path, f"MVI_{seed:04d}.MOV")
    return videos.video(target, metadata={"date": date}, seed=seed, **kwargs)


def mov_with_xmp_date(
    path: Path | str,
    *,
    created: str = "2015:04:05 06:07:08+05:30",
    seed: int = 0,
) -> Path:
    """A MOV with no container date at all and exiftool-written XMP
    (xmp:CreateDate with an offset) in its moov box: FFmpeg sees none of it."""
    target = photos._target(path, f"clip_{seed:04d}.mov")
    videos.video(target, metadata={}, seed=seed)
    return write_tags(target, f"-XMP-exif:DateTimeOriginal={created}")
