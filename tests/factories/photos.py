"""Write real, small photo files (good and broken) for tests.

Every factory takes a target ``path`` (a file path, or an existing directory to write a
default name into) and returns the path written. Pixel content depends on ``seed`` only,
so different seeds give different bytes (and hashes) and equal seeds give equal pixels.
EXIF keyword arguments are those of :func:`build_exif`.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pillow_heif
from PIL import ExifTags, Image, ImageDraw, TiffImagePlugin, TiffTags

Base = ExifTags.Base
GPS = ExifTags.GPS
IFDRational = TiffImagePlugin.IFDRational

GpsFix = tuple[float, float, float | None]


def _target(path: Path | str, default_name: str) -> Path:
    path = Path(path)
    path = path / default_name if path.is_dir() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def picture(size: tuple[int, int] = (640, 480), seed: int = 0) -> Image.Image:
    """An RGB image of coloured shapes, distinct per ``seed`` and cheap to compress."""
    rnd = random.Random(seed)
    width, height = size

    def colour() -> tuple[int, int, int]:
        return (rnd.randrange(256), rnd.randrange(256), rnd.randrange(256))

    image = Image.new("RGB", size, colour())
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = rnd.randrange(width), rnd.randrange(height)
        x1, y1 = rnd.randint(x0, width), rnd.randint(y0, height)
        shape = draw.ellipse if rnd.random() < 0.5 else draw.rectangle
        shape((x0, y0, x1, y1), fill=colour())
    # a patch of noise makes any two seeds differ even if their shapes happen to coincide
    side = min(16, width, height)
    noise = Image.frombytes("RGB", (side, side), rnd.randbytes(side * side * 3))
    image.paste(noise, (rnd.randrange(width - side + 1), rnd.randrange(height - side + 1)))
    return image


def _rational(value: float | str | Fraction) -> IFDRational:
    fraction = (
        Fraction(value) if isinstance(value, str) else Fraction(value).limit_denominator(10**6)
    )
    return IFDRational(fraction.numerator, fraction.denominator)


def _dms(value: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    value = abs(value)
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = (value - degrees - minutes / 60) * 3600
    return (
        IFDRational(degrees, 1),
        IFDRational(minutes, 1),
        IFDRational(round(seconds * 10**4), 10**4),
    )


def build_exif(
    *,
    taken: str | None = "2023:07:14 10:15:30",
    offset: str | None = "+02:00",
    subsec: str | None = "123",
    digitized: str | None = None,
    digitized_offset: str | None = None,
    offset_time: str | None = None,
    gps: GpsFix | None = None,
    gps_time: str | None = None,
    orientation: int | None = 1,
    make: str | None = "Canon",
    model: str | None = "EOS R5",
    lens: str | None = None,
    focal_length: float | None = None,
    f_number: float | None = None,
    exposure: float | str | Fraction | None = None,
    iso: int | None = None,
    extra_base: Mapping[int, Any] | None = None,
    extra_exif: Mapping[int, Any] | None = None,
    extra_gps: Mapping[int, Any] | None = None,
) -> Image.Exif:
    """An ``Image.Exif`` with IFD0, Exif-IFD and GPS-IFD tags; None leaves a tag out.

    ``taken``/``digitized`` are EXIF date strings (written verbatim, garbage included);
    ``offset`` goes with ``taken`` (OffsetTimeOriginal), ``digitized_offset`` with
    ``digitized``, ``offset_time`` is OffsetTime; ``gps`` is (lat, lon, alt) in signed
    decimals; ``gps_time`` is ``"YYYY:MM:DD HH:MM:SS"`` in UTC; ``exposure`` may be ``"1/250"``.
    """
    exif = Image.Exif()
    ifd0: dict[int, Any] = {
        Base.Make: make,
        Base.Model: model,
        Base.Orientation: orientation,
    }
    photo: dict[int, Any] = {
        Base.DateTimeOriginal: taken,
        Base.OffsetTimeOriginal: offset,
        Base.SubsecTimeOriginal: subsec if taken is not None else None,
        Base.DateTimeDigitized: digitized,
        Base.OffsetTimeDigitized: digitized_offset,
        Base.OffsetTime: offset_time,
        Base.LensModel: lens,
        Base.FocalLength: None if focal_length is None else _rational(focal_length),
        Base.FNumber: None if f_number is None else _rational(f_number),
        Base.ExposureTime: None if exposure is None else _rational(exposure),
        Base.ISOSpeedRatings: iso,
    }
    position: dict[int, Any] = {}
    if gps is not None:
        lat, lon, alt = gps
        position[GPS.GPSVersionID] = b"\x02\x03\x00\x00"
        position[GPS.GPSLatitudeRef] = "S" if lat < 0 else "N"
        position[GPS.GPSLatitude] = _dms(lat)
        position[GPS.GPSLongitudeRef] = "W" if lon < 0 else "E"
        position[GPS.GPSLongitude] = _dms(lon)
        if alt is not None:
            position[GPS.GPSAltitudeRef] = b"\x01" if alt < 0 else b"\x00"
            position[GPS.GPSAltitude] = _rational(abs(alt))
    if gps_time is not None:
        day, clock = gps_time.split(" ")
        hours, minutes, seconds = (int(part) for part in clock.split(":"))
        position[GPS.GPSDateStamp] = day
        position[GPS.GPSTimeStamp] = (
            IFDRational(hours, 1),
            IFDRational(minutes, 1),
            IFDRational(seconds, 1),
        )
    for target, values, extra in (
        (exif, ifd0, extra_base),
        (exif.get_ifd(ExifTags.IFD.Exif), photo, extra_exif),
        (exif.get_ifd(ExifTags.IFD.GPSInfo), position, extra_gps),
    ):
        for tag, value in {**values, **(extra or {})}.items():
            if value is not None:
                target[tag] = value
    return exif


def _with_ifd_pointers(exif: Image.Exif) -> Image.Exif:
    # Pillow's TIFF writer iterates the Exif's own keys: a sub-IFD is written only when its
    # pointer tag is present (its value is replaced by the real offset)
    for ifd in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo):
        if exif.get_ifd(ifd):
            exif[ifd] = 0
    return exif


def jpeg(
    path: Path | str,
    *,
    size: tuple[int, int] = (640, 480),
    taken: str | None = "2023:07:14 10:15:30",
    offset: str | None = "+02:00",
    subsec: str | None = "123",
    digitized: str | None = None,
    gps: GpsFix | None = None,
    gps_time: str | None = None,
    orientation: int | None = 1,
    make: str | None = "Canon",
    model: str | None = "EOS R5",
    lens: str | None = None,
    focal_length: float | None = None,
    f_number: float | None = None,
    exposure: float | str | Fraction | None = None,
    iso: int | None = None,
    seed: int = 0,
    quality: int = 85,
    **more_exif: Any,
) -> Path:
    """A baseline JPEG with EXIF (see :func:`build_exif` for ``more_exif``)."""
    exif = build_exif(
        taken=taken,
        offset=offset,
        subsec=subsec,
        digitized=digitized,
        gps=gps,
        gps_time=gps_time,
        orientation=orientation,
        make=make,
        model=model,
        lens=lens,
        focal_length=focal_length,
        f_number=f_number,
        exposure=exposure,
        iso=iso,
        **more_exif,
    )
    target = _target(path, f"IMG_{seed:04d}.jpg")
    picture(size, seed).save(target, "JPEG", exif=exif, quality=quality)
    return target


def png(
    path: Path | str, *, size: tuple[int, int] = (640, 480), seed: int = 0, **exif: Any
) -> Path:
    """A PNG with an eXIf chunk."""
    target = _target(path, f"IMG_{seed:04d}.png")
    picture(size, seed).save(target, "PNG", exif=build_exif(**exif))
    return target


def tiff(
    path: Path | str, *, size: tuple[int, int] = (640, 480), seed: int = 0, **exif: Any
) -> Path:
    """An uncompressed RGB TIFF whose IFD0 carries the EXIF tags and sub-IFDs."""
    target = _target(path, f"IMG_{seed:04d}.tif")
    picture(size, seed).save(target, "TIFF", tiffinfo=_with_ifd_pointers(build_exif(**exif)))
    return target


def webp(
    path: Path | str, *, size: tuple[int, int] = (640, 480), seed: int = 0, **exif: Any
) -> Path:
    """A lossy WebP with an EXIF chunk."""
    target = _target(path, f"IMG_{seed:04d}.webp")
    picture(size, seed).save(target, "WEBP", exif=build_exif(**exif).tobytes(), quality=80)
    return target


def heic(
    path: Path | str, *, size: tuple[int, int] = (640, 480), seed: int = 0, **exif: Any
) -> Path:
    """An HEVC-coded HEIF (pillow-heif) with EXIF.

    pillow-heif turns an EXIF ``orientation`` into HEIF transforms (irot/imir): readers get
    the image already turned (5..8 swap its size) and EXIF orientation 1.
    """
    target = _target(path, f"IMG_{seed:04d}.heic")
    heif = pillow_heif.from_pillow(picture(size, seed))
    heif.save(target, exif=build_exif(**exif).tobytes(), quality=60)
    return target


def _cfa_tiff(
    path: Path,
    *,
    size: tuple[int, int],
    seed: int,
    raw_tags: Mapping[int, Any],
    exif: Mapping[str, Any],
) -> Path:
    """A 16-bit Bayer (CFA) TIFF: the shape LibRaw accepts as a camera RAW."""
    width, height = size
    data = random.Random(seed).randbytes(width * height * 2)
    image = Image.frombytes("I;16", size, data)
    tags = _with_ifd_pointers(build_exif(**exif))
    tags[Base.PhotometricInterpretation] = 32803  # CFA
    tags[0x828D] = (2, 2)  # CFARepeatPatternDim
    tags[0x828E] = b"\x00\x01\x01\x02"  # CFAPattern: RGGB
    for tag, value in raw_tags.items():
        tags[tag] = value
    image.save(path, "TIFF", tiffinfo=tags)
    return path


def dng(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str | None = "Canon",
    model: str | None = "EOS R5",
    **exif: Any,
) -> Path:
    """A minimal uncompressed Bayer DNG that exifread reads and LibRaw opens."""
    target = _target(path, f"IMG_{seed:04d}.dng")
    raw_tags = {
        0xC612: b"\x01\x04\x00\x00",  # DNGVersion 1.4
        0xC613: b"\x01\x01\x00\x00",  # DNGBackwardVersion
        0xC614: f"{make or ''} {model or ''}".strip() or "Unknown",  # UniqueCameraModel
    }
    return _cfa_tiff(
        target, size=size, seed=seed, raw_tags=raw_tags, exif={**exif, "make": make, "model": model}
    )


def nef(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str = "NIKON CORPORATION",
    model: str = "NIKON Z 6",
    **exif: Any,
) -> Path:
    """A Nikon-made uncompressed Bayer TIFF: LibRaw opens it, so it reads as NEF."""
    target = _target(path, f"DSC_{seed:04d}.nef")
    return _cfa_tiff(
        target, size=size, seed=seed, raw_tags={}, exif={**exif, "make": make, "model": model}
    )


def arw(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str = "SONY",
    model: str = "ILCE-7M3",
    **exif: Any,
) -> Path:
    """A Sony-made uncompressed Bayer TIFF: LibRaw opens it, so it reads as ARW."""
    target = _target(path, f"DSC{seed:05d}.arw")
    return _cfa_tiff(
        target, size=size, seed=seed, raw_tags={}, exif={**exif, "make": make, "model": model}
    )


def maker_raw(
    path: Path | str,
    *,
    make: str,
    model: str,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    **exif: Any,
) -> Path:
    """An uncompressed Bayer TIFF made by ``make``: LibRaw opens it, so it reads as
    that maker's TIFF-based RAW (SRW, 3FR, ERF, MEF, MOS, DCR, ...)."""
    target = _target(path, f"IMG_{seed:04d}.raw")
    return _cfa_tiff(
        target, size=size, seed=seed, raw_tags={}, exif={**exif, "make": make, "model": model}
    )


def cr2(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    sensor: tuple[int, int] | None = (6720, 4480),
    seed: int = 0,
    make: str | None = "Canon",
    model: str | None = "Canon EOS 5D Mark IV",
    **exif: Any,
) -> Path:
    """A CR2-shaped file: the "CR" marker after the TIFF header and an RGB preview in IFD0.

    It holds no Canon raw data, so LibRaw refuses it and the pixel size must come from the
    EXIF ExifImageWidth/Height (``sensor``; None leaves them out).
    """
    target = _target(path, f"IMG_{seed:04d}.cr2")
    tags = build_exif(make=make, model=model, **exif)
    if sensor is not None:
        photo = tags.get_ifd(ExifTags.IFD.Exif)
        photo[Base.ExifImageWidth], photo[Base.ExifImageHeight] = sensor
    preview = picture(size, seed)
    ifd = TiffImagePlugin.ImageFileDirectory_v2(prefix=b"II")
    ifd[Base.ImageWidth], ifd[Base.ImageLength] = size
    ifd[Base.BitsPerSample] = (8, 8, 8)
    ifd[Base.Compression] = 1
    ifd[Base.PhotometricInterpretation] = 2
    ifd[Base.SamplesPerPixel] = 3
    ifd[Base.RowsPerStrip] = size[1]
    ifd[Base.StripByteCounts] = len(preview.tobytes())
    ifd[Base.StripOffsets] = 0  # Pillow's IFD writer points it just past the IFD
    ifd.tagtype[Base.StripOffsets] = TiffTags.LONG
    for tag, value in tags.items():
        if tag not in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo):
            ifd[tag] = value
    for pointer in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo):
        if sub := dict(tags.get_ifd(pointer)):
            ifd[pointer] = sub
            ifd.tagtype[pointer] = TiffTags.LONG
    first_ifd = 16
    header = b"II*\x00" + struct.pack("<I", first_ifd) + b"CR\x02\x00" + struct.pack("<I", 0)
    target.write_bytes(header + ifd.tobytes(first_ifd) + preview.tobytes())
    return target


# --- broken files -------------------------------------------------------------------------


def empty(path: Path | str) -> Path:
    """A zero-byte file."""
    target = _target(path, "empty.jpg")
    target.write_bytes(b"")
    return target


def truncated_jpeg(path: Path | str, *, keep: float = 0.6, seed: int = 0, **kwargs: Any) -> Path:
    """A JPEG cut off inside its entropy-coded scan (header intact, EOI missing)."""
    target = _target(path, f"truncated_{seed:04d}.jpg")
    jpeg(target, seed=seed, **kwargs)
    data = target.read_bytes()
    start_of_scan = data.index(b"\xff\xda")
    cut = max(start_of_scan + 32, int(len(data) * keep))
    target.write_bytes(data[: min(cut, len(data) - 2)])
    return target


def text_as_jpeg(path: Path | str) -> Path:
    """A text file that only its name claims is a JPEG."""
    target = _target(path, "not_a_photo.jpg")
    target.write_text("This is a shopping list, not a photo.\nmilk\neggs\n")
    return target


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb(path: Path | str, *, size: tuple[int, int] = (20_000, 20_000)) -> Path:
    """A valid 1-bit PNG of ``size`` (400 Mpx by default) that deflates to a few dozen KB."""
    width, height = size
    target = _target(path, "bomb.png")
    row = b"\x00" + bytes((width + 7) // 8)  # filter byte + packed bits, all black
    compressor = zlib.compressobj(9)
    idat = io.BytesIO()
    for _ in range(height):
        idat.write(compressor.compress(row))
    idat.write(compressor.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    target.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat.getvalue())
        + _png_chunk(b"IEND", b"")
    )
    return target


def garbage_exif_dates(path: Path | str, **kwargs: Any) -> Path:
    """A JPEG whose EXIF dates and offsets are all present but invalid."""
    fields: dict[str, Any] = {
        "taken": "0000:00:00 00:00:00",
        "digitized": "2023:13:45 10:15:30",
        "offset": "  :  ",
        "subsec": "",
        "extra_base": {Base.DateTime: ""},
    }
    seed = kwargs.get("seed", 0)
    return jpeg(_target(path, f"garbage_dates_{seed:04d}.jpg"), **{**fields, **kwargs})


def corrupt_exif(path: Path | str, *, seed: int = 0) -> Path:
    """A JPEG with intact pixels whose APP1 EXIF block is random junk."""
    target = _target(path, f"bad_exif_{seed:04d}.jpg")
    junk = b"Exif\x00\x00II*\x00\x08\x00\x00\x00" + random.Random(seed).randbytes(200)
    picture((320, 240), seed).save(target, "JPEG", exif=junk)
    return target


# --- more formats: AVIF and RAWs with containers of their own ------------------------------


def avif(
    path: Path | str, *, size: tuple[int, int] = (640, 480), seed: int = 0, **exif: Any
) -> Path:
    """An AV1-coded AVIF (Pillow's libavif) with EXIF."""
    target = _target(path, f"IMG_{seed:04d}.avif")
    picture(size, seed).save(target, "AVIF", exif=build_exif(**exif).tobytes(), quality=60)
    return target


def _tiff_with_magic(target: Path, magic: bytes, size: tuple[int, int], seed: int, **exif: Any):
    # ORF and RW2 are TIFFs whose magic number says who made them; LibRaw opens only real
    # sensor data, so these serve the header parsing (the pixel size comes from the IFD)
    tiff(target, size=size, seed=seed, **exif)
    data = target.read_bytes()
    target.write_bytes(magic + data[4:])
    return target


def orf(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str = "OLYMPUS CORPORATION",
    model: str = "E-M1MarkIII",
    **exif: Any,
) -> Path:
    """An Olympus-shaped file: a TIFF with the ``IIRO`` magic number and EXIF."""
    target = _target(path, f"P{seed:07d}.ORF")
    return _tiff_with_magic(target, b"IIRO", size, seed, make=make, model=model, **exif)


def rw2(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str = "Panasonic",
    model: str = "DC-G9",
    **exif: Any,
) -> Path:
    """A Panasonic-shaped file: a TIFF with the ``IIU\\0`` magic number and EXIF."""
    target = _target(path, f"P{seed:07d}.RW2")
    return _tiff_with_magic(target, b"IIU\x00", size, seed, make=make, model=model, **exif)


def pef(
    path: Path | str,
    *,
    size: tuple[int, int] = (96, 64),
    seed: int = 0,
    make: str = "PENTAX",
    model: str = "PENTAX K-3 Mark III",
    **exif: Any,
) -> Path:
    """A Pentax-made uncompressed Bayer TIFF: LibRaw opens it, so it reads as PEF."""
    target = _target(path, f"IMGP{seed:04d}.PEF")
    return _cfa_tiff(
        target, size=size, seed=seed, raw_tags={}, exif={**exif, "make": make, "model": model}
    )


def raf(
    path: Path | str,
    *,
    preview_size: tuple[int, int] = (160, 120),
    sensor: tuple[int, int] = (6240, 4160),
    seed: int = 0,
    make: str = "FUJIFILM",
    model: str = "X-T5",
    **exif: Any,
) -> Path:
    """A RAF-shaped file: the ``FUJIFILMCCD-RAW`` header pointing at a JPEG preview that
    carries the EXIF (``sensor`` as ExifImageWidth/Height); no sensor data."""
    target = _target(path, f"DSCF{seed:04d}.RAF")
    tags = build_exif(make=make, model=model, **exif)
    photo = tags.get_ifd(ExifTags.IFD.Exif)
    photo[Base.ExifImageWidth], photo[Base.ExifImageHeight] = sensor
    buffer = io.BytesIO()
    picture(preview_size, seed).save(buffer, "JPEG", exif=tags, quality=85)
    preview = buffer.getvalue()
    header = b"FUJIFILMCCD-RAW 0201FF383501" + model.encode().ljust(32, b"\x00")
    header = header.ljust(84, b"\x00")
    offset = 84 + 8 + 16  # pointers: JPEG offset/length, then CFA header/data (zero)
    header += struct.pack(">II", offset, len(preview)) + bytes(16)
    target.write_bytes(header + preview)
    return target


def _box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", 8 + len(payload)) + kind + payload


def _tiff_block(tags: Mapping[int, Any]) -> bytes:
    """A little TIFF whose IFD0 holds ``tags`` (a CR3 CMT box)."""
    exif = Image.Exif()
    for tag, value in tags.items():
        if value is not None:
            exif[tag] = value
    return exif.tobytes()[len(b"Exif\x00\x00") :]


CANON_UUID = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")


def cr3(
    path: Path | str,
    *,
    sensor: tuple[int, int] = (6000, 4000),
    seed: int = 0,
    make: str = "Canon",
    model: str = "Canon EOS R5",
    **exif: Any,
) -> Path:
    """A CR3-shaped file: ISO-BMFF ``ftyp crx`` and ``moov/uuid(Canon)/CMT1,CMT2,CMT4`` with
    the IFD0, Exif and GPS tags as TIFF blocks, as Canon writes them; no image data."""
    target = _target(path, f"IMG_{seed:04d}.CR3")
    tags = build_exif(make=make, model=model, **exif)
    photo = dict(tags.get_ifd(ExifTags.IFD.Exif))
    photo[Base.ExifImageWidth], photo[Base.ExifImageHeight] = sensor
    base = {tag: value for tag, value in tags.items() if tag not in ExifTags.IFD.__members__}
    base = {t: v for t, v in base.items() if t not in (ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo)}
    canon = (
        CANON_UUID
        + _box(b"CMT1", _tiff_block(base))
        + _box(b"CMT2", _tiff_block(photo))
        + _box(b"CMT4", _tiff_block(dict(tags.get_ifd(ExifTags.IFD.GPSInfo))))
    )
    ftyp = _box(b"ftyp", b"crx \x00\x00\x00\x01crx isom")
    target.write_bytes(ftyp + _box(b"moov", _box(b"uuid", canon)) + _box(b"mdat", bytes(64)))
    return target
