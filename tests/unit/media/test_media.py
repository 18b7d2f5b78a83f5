"""read_metadata on real files of every supported format, written by the photo factory."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone

import pytest
from PIL import Image

from photo_pipeline import media
from photo_pipeline.media import CaptureTime, MediaError, PhotoMetadata, read_metadata
from tests.factories import photos

PILLOW_FORMATS = [
    # factory, format, mime
    (photos.jpeg, "jpeg", "image/jpeg"),
    (photos.png, "png", "image/png"),
    (photos.tiff, "tiff", "image/tiff"),
    (photos.webp, "webp", "image/webp"),
]
RAW_FORMATS = [
    (photos.dng, "dng", "image/x-adobe-dng"),
    (photos.nef, "nef", "image/x-nikon-nef"),
    (photos.arw, "arw", "image/x-sony-arw"),
]


def test_public_api() -> None:
    assert set(media.__all__) == {
        "DEFAULT_MAX_PIXELS",
        "SUPPORTED_EXTENSIONS",
        "CaptureTime",
        "EmbeddedVideo",
        "MediaError",
        "MediaMetadata",
        "PhotoMetadata",
        "capture_time_from_filename",
        "find_embedded_video",
        "hash_file",
        "hash_file_digests",
        "read_metadata",
    }
    assert media.DEFAULT_MAX_PIXELS == 200_000_000
    assert {
        ".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".heic", ".heif", ".avif",
        ".dng", ".cr2", ".nef", ".arw", ".cr3", ".raf", ".orf", ".rw2", ".pef",
        ".nrw", ".srf", ".sr2", ".rwl", ".srw", ".3fr", ".erf", ".mef", ".mos", ".dcr", ".kdc",
        ".mp4", ".mov", ".m4v", ".3gp", ".3g2", ".mts", ".m2ts", ".ts", ".avi", ".mkv", ".webm",
    } == media.SUPPORTED_EXTENSIONS  # fmt: skip
    assert MediaError.status == 422
    assert MediaError("corrupt_file", "x").code == "corrupt_file"


@pytest.mark.parametrize(("factory", "fmt", "mime"), PILLOW_FORMATS)
def test_pillow_formats_read_size_camera_and_time(tmp_path, factory, fmt, mime) -> None:
    path = factory(tmp_path / f"photo.{fmt}", size=(120, 80), make="Fujifilm", model="X-T5")
    meta = read_metadata(path)
    assert isinstance(meta, PhotoMetadata)
    assert (meta.format, meta.mime) == (fmt, mime)
    assert (meta.width, meta.height, meta.orientation) == (120, 80, 1)
    assert (meta.make, meta.model) == ("Fujifilm", "X-T5")
    assert meta.taken == CaptureTime(
        datetime(2023, 7, 14, 10, 15, 30, 123000), 120, "exif_original"
    )


def test_heif_reads_size_exif_and_mime(tmp_path) -> None:
    path = photos.heic(tmp_path / "IMG_1.heic", size=(96, 64), model="iPhone 15", make="Apple")
    meta = read_metadata(path)
    assert (meta.format, meta.mime) == ("heif", "image/heic")
    assert (meta.width, meta.height) == (96, 64)
    assert (meta.make, meta.model) == ("Apple", "iPhone 15")
    assert meta.taken.source == "exif_original"
    assert meta.taken.utc == datetime(2023, 7, 14, 8, 15, 30, 123000, tzinfo=UTC)


def test_heif_orientation_is_already_applied_by_the_container(tmp_path) -> None:
    # pillow-heif writes an EXIF orientation as HEIF transforms (irot/imir), libheif applies
    # them on decode and pillow-heif resets the EXIF tag: the decoded pixels are upright, so
    # orientation is 1 and the size is the display size (like an iPhone portrait HEIC)
    path = photos.heic(tmp_path / "turned.heic", size=(96, 64), orientation=6)
    meta = read_metadata(path)
    assert meta.orientation == 1
    assert (meta.width, meta.height) == (64, 96)


@pytest.mark.parametrize(("factory", "fmt", "mime"), RAW_FORMATS)
def test_raw_formats_via_exifread_and_libraw(tmp_path, factory, fmt, mime) -> None:
    path = factory(tmp_path / f"raw.{fmt}", size=(96, 64), iso=800, f_number=4.0)
    meta = read_metadata(path)
    assert (meta.format, meta.mime) == (fmt, mime)
    assert (meta.width, meta.height) == (96, 64)  # LibRaw's visible sensor area
    assert meta.taken == CaptureTime(
        datetime(2023, 7, 14, 10, 15, 30, 123000), 120, "exif_original"
    )
    assert (meta.iso, meta.f_number) == (800, 4.0)


def test_raw_makers(tmp_path) -> None:
    assert read_metadata(photos.dng(tmp_path / "a.dng", make="Leica", model="Q3")).make == "Leica"
    nef = read_metadata(photos.nef(tmp_path / "b.nef"))
    assert (nef.make, nef.model) == ("NIKON CORPORATION", "NIKON Z 6")
    arw = read_metadata(photos.arw(tmp_path / "c.arw"))
    assert (arw.make, arw.model) == ("SONY", "ILCE-7M3")


def test_dng_without_model_falls_back_to_unique_camera_model(tmp_path) -> None:
    path = photos.dng(tmp_path / "a.dng", make="Pentax", model=None)
    assert read_metadata(path).model == "Pentax"


def test_cr2_is_recognised_by_its_marker_and_sized_from_exif(tmp_path) -> None:
    # LibRaw refuses the factory CR2 (no Canon raw data): the size comes from EXIF
    meta = read_metadata(photos.cr2(tmp_path / "IMG_0001.cr2", gps=(1.0, 2.0, None)))
    assert (meta.format, meta.mime) == ("cr2", "image/x-canon-cr2")
    assert (meta.width, meta.height) == (6720, 4480)
    assert (meta.make, meta.model) == ("Canon", "Canon EOS 5D Mark IV")
    assert meta.taken.source == "exif_original"
    assert meta.gps_latitude == pytest.approx(1.0)


def test_cr2_without_any_size_is_corrupt(tmp_path) -> None:
    path = photos.cr2(tmp_path / "IMG_0001.cr2", sensor=None, extra_base={0xFE: 1})
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "corrupt_file"


def test_raw_orientation_comes_from_exif(tmp_path) -> None:
    meta = read_metadata(photos.dng(tmp_path / "a.dng", size=(96, 64), orientation=8))
    assert (meta.orientation, meta.width, meta.height) == (8, 64, 96)


def test_raw_orientation_falls_back_to_libraw_flip(tmp_path) -> None:
    meta = read_metadata(photos.nef(tmp_path / "a.nef", size=(96, 64), orientation=None))
    assert (meta.orientation, meta.width, meta.height) == (1, 96, 64)


def test_nikon_tiff_that_is_not_raw_is_a_tiff(tmp_path) -> None:
    path = photos.tiff(tmp_path / "scan.tif", make="NIKON CORPORATION", model="LS-5000")
    meta = read_metadata(path)
    assert (meta.format, meta.make) == ("tiff", "NIKON CORPORATION")


def test_bayer_tiff_of_another_maker_is_unsupported(tmp_path) -> None:
    path = photos.nef(tmp_path / "odd.tif", make="Acme Imaging", model="Sensor One")
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "unsupported_format"


def test_format_comes_from_content_not_extension(tmp_path) -> None:
    path = photos.png(tmp_path / "really_a_png.jpg")
    meta = read_metadata(path)
    assert (meta.format, meta.mime) == ("png", "image/png")
    assert read_metadata(photos.jpeg(tmp_path / "noext")).format == "jpeg"


@pytest.mark.parametrize("factory", [photos.jpeg, photos.png, photos.tiff, photos.webp, photos.dng])
@pytest.mark.parametrize(("orientation", "swapped"), [(1, False), (2, False), (3, False),
                                                      (4, False), (5, True), (6, True),
                                                      (7, True), (8, True)])  # fmt: skip
def test_orientation_5_to_8_swaps_width_and_height(tmp_path, factory, orientation, swapped) -> None:
    meta = read_metadata(factory(tmp_path / "p", size=(96, 64), orientation=orientation))
    assert meta.orientation == orientation
    assert (meta.width, meta.height) == ((64, 96) if swapped else (96, 64))


@pytest.mark.parametrize("bad", [None, 0, 9, 300])
def test_missing_or_invalid_orientation_means_1(tmp_path, bad) -> None:
    meta = read_metadata(photos.jpeg(tmp_path / "p.jpg", size=(96, 64), orientation=bad))
    assert (meta.orientation, meta.width, meta.height) == (1, 96, 64)


def test_camera_and_exposure_fields(tmp_path) -> None:
    path = photos.jpeg(
        tmp_path / "p.jpg",
        lens="RF24-70mm F2.8 L IS USM",
        focal_length=35.0,
        f_number=2.8,
        exposure="1/250",
        iso=6400,
    )
    meta = read_metadata(path)
    assert meta.lens == "RF24-70mm F2.8 L IS USM"
    assert meta.focal_length_mm == 35.0
    assert meta.f_number == 2.8
    assert meta.exposure_seconds == pytest.approx(1 / 250)
    assert meta.iso == 6400


def test_absent_camera_fields_are_none(tmp_path) -> None:
    meta = read_metadata(photos.jpeg(tmp_path / "p.jpg", make=None, model=None))
    assert (meta.make, meta.model, meta.lens) == (None, None, None)
    assert (meta.focal_length_mm, meta.f_number, meta.exposure_seconds, meta.iso) == (None,) * 4


def test_apex_values_stand_in_for_missing_fnumber_and_exposure(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg", extra_exif={0x9202: 3.0, 0x9201: 8.0})
    meta = read_metadata(path)
    assert meta.f_number == 2.8  # 2 ** (3 / 2) = 2.83
    assert meta.exposure_seconds == pytest.approx(1 / 256)


def test_zero_or_nonsense_exposure_values_are_none(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg", extra_exif={0x829D: 0.0, 0x829A: 0.0, 0x8827: 0})
    meta = read_metadata(path)
    assert (meta.f_number, meta.exposure_seconds, meta.iso) == (None, None, None)


# --- GPS -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fix", "expected"),
    [
        ((48.858222, 2.2945, 35.0), (48.858222, 2.2945, 35.0)),  # N, E
        ((-33.856784, 151.215297, 5.5), (-33.856784, 151.215297, 5.5)),  # S, E
        ((40.689247, -74.044502, 93.0), (40.689247, -74.044502, 93.0)),  # N, W
        ((-22.951916, -43.210487, 700.0), (-22.951916, -43.210487, 700.0)),  # S, W
        ((31.5, 35.5, -430.5), (31.5, 35.5, -430.5)),  # below sea level: GPSAltitudeRef 1
        ((10.0, 20.0, None), (10.0, 20.0, None)),
    ],
)
@pytest.mark.parametrize("factory", [photos.jpeg, photos.tiff, photos.dng])
def test_gps_signed_decimals(tmp_path, factory, fix, expected) -> None:
    meta = read_metadata(factory(tmp_path / "p", gps=fix))
    lat, lon, alt = expected
    assert meta.gps_latitude == pytest.approx(lat, abs=1e-6)
    assert meta.gps_longitude == pytest.approx(lon, abs=1e-6)
    assert meta.gps_altitude == (None if alt is None else pytest.approx(alt))


def test_no_gps(tmp_path) -> None:
    meta = read_metadata(photos.jpeg(tmp_path / "p.jpg"))
    assert (meta.gps_latitude, meta.gps_longitude, meta.gps_altitude) == (None, None, None)


def test_gps_void_status_and_out_of_range_positions_are_dropped(tmp_path) -> None:
    void = photos.jpeg(tmp_path / "void.jpg", gps=(1.0, 2.0, 3.0), extra_gps={9: "V"})
    assert read_metadata(void).gps_latitude is None
    bad = photos.jpeg(tmp_path / "bad.jpg", gps=(1.0, 2.0, 3.0), extra_gps={2: (95.0, 0.0, 0.0)})
    meta = read_metadata(bad)
    assert (meta.gps_latitude, meta.gps_longitude) == (None, None)


# --- capture time ----------------------------------------------------------------------------


def test_exif_original_with_offset_and_subseconds(tmp_path) -> None:
    taken = read_metadata(photos.jpeg(tmp_path / "p.jpg", offset="-05:30", subsec="7")).taken
    assert taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30, 700000), -330, "exif_original")
    assert taken.utc == datetime(2023, 7, 14, 15, 45, 30, 700000, tzinfo=UTC)


def test_exif_original_without_offset_is_floating(tmp_path) -> None:
    taken = read_metadata(photos.jpeg(tmp_path / "p.jpg", offset=None, subsec=None)).taken
    assert taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30), None, "exif_original")
    assert taken.utc is None


def test_offset_time_stands_in_for_missing_offset_time_original(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg", offset=None, offset_time="+09:00")
    assert read_metadata(path).taken.offset_minutes == 540


def test_original_wins_over_digitized_gps_and_name(tmp_path) -> None:
    path = photos.jpeg(
        tmp_path / "IMG_20200101_000000.jpg",
        digitized="2023:07:14 11:00:00",
        gps_time="2023:07:14 08:15:31",
    )
    assert read_metadata(path).taken.source == "exif_original"


def test_digitized_when_original_is_missing(tmp_path) -> None:
    path = photos.jpeg(
        tmp_path / "p.jpg",
        taken=None,
        digitized="2023:07:14 11:00:00",
        digitized_offset="-04:00",
        gps_time="2023:07:14 08:15:31",
        extra_exif={0x9292: "45"},
    )
    taken = read_metadata(path).taken
    assert taken == CaptureTime(datetime(2023, 7, 14, 11, 0, 0, 450000), -240, "exif_digitized")


def test_gps_time_is_utc(tmp_path) -> None:
    path = photos.jpeg(
        tmp_path / "IMG_20200101_000000.jpg", taken=None, gps_time="2023:07:14 08:15:30"
    )
    taken = read_metadata(path).taken
    assert taken == CaptureTime(datetime(2023, 7, 14, 8, 15, 30), 0, "gps")
    assert taken.utc == datetime(2023, 7, 14, 8, 15, 30, tzinfo=UTC)


def test_file_name_when_no_exif_time(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "PXL_20230714_101530123.jpg", taken=None)
    taken = read_metadata(path).taken
    assert taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30, 123000), None, "filename")


def test_given_mtime_is_the_last_resort(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "DSC_0001.jpg", taken=None)
    taken = read_metadata(path, mtime=datetime(2021, 5, 6, 7, 8, 9)).taken
    assert taken == CaptureTime(datetime(2021, 5, 6, 7, 8, 9), None, "mtime")


def test_aware_mtime_is_expressed_in_local_wall_clock_time(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "DSC_0001.jpg", taken=None)
    moment = datetime(2021, 5, 6, 7, 8, 9, tzinfo=timezone(timedelta(hours=3)))
    taken = read_metadata(path, mtime=moment).taken
    assert taken.source == "mtime"
    assert taken.local == moment.astimezone().replace(tzinfo=None)


def test_file_mtime_when_no_mtime_given(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "DSC_0001.jpg", taken=None)
    stamp = datetime(2020, 2, 3, 4, 5, 6).timestamp()
    os.utime(path, (stamp, stamp))
    taken = read_metadata(path).taken
    # this machine's wall clock, with its offset then: the mtime is an instant
    offset = datetime(2020, 2, 3, 4, 5, 6).astimezone().utcoffset() // timedelta(minutes=1)
    assert taken == CaptureTime(datetime(2020, 2, 3, 4, 5, 6), offset, "mtime")


@pytest.mark.parametrize("factory", [photos.png, photos.tiff, photos.webp, photos.heic, photos.dng])
def test_every_format_falls_back_through_gps_and_file_name(tmp_path, factory) -> None:
    with_gps = factory(tmp_path / "a", taken=None, gps_time="2023:07:14 08:15:30", size=(64, 48))
    assert read_metadata(with_gps).taken.source == "gps"
    named = factory(tmp_path / "IMG_20230714_101530.bin", taken=None, size=(64, 48))
    assert read_metadata(named).taken == CaptureTime(
        datetime(2023, 7, 14, 10, 15, 30), None, "filename"
    )


class TestGarbageDates:
    def test_fall_through_to_gps(self, tmp_path) -> None:
        path = photos.garbage_exif_dates(tmp_path / "p.jpg", gps_time="2023:07:14 08:15:30")
        assert read_metadata(path).taken.source == "gps"

    def test_fall_through_to_file_name(self, tmp_path) -> None:
        path = photos.garbage_exif_dates(tmp_path / "IMG-20230714-WA0001.jpg")
        assert read_metadata(path).taken == CaptureTime(datetime(2023, 7, 14), None, "filename")

    def test_fall_through_to_mtime(self, tmp_path) -> None:
        path = photos.garbage_exif_dates(tmp_path / "p.jpg")
        taken = read_metadata(path, mtime=datetime(2022, 1, 1, 12, 0)).taken
        assert taken == CaptureTime(datetime(2022, 1, 1, 12, 0), None, "mtime")

    @pytest.mark.parametrize(
        "garbage",
        ["", "    :  :     :  :  ", "2023:00:10 10:00:00", "2023:02:30 10:00:00",
         "2023:07:14 24:00:00", "1600:01:01 00:00:00", "yesterday", "2023:07:14"],
    )  # fmt: skip
    def test_each_garbage_value_is_ignored(self, tmp_path, garbage) -> None:
        path = photos.jpeg(tmp_path / "p.jpg", taken=garbage, digitized="2023:07:14 11:00:00")
        assert read_metadata(path).taken.source == "exif_digitized"

    def test_garbage_offset_leaves_the_time_floating(self, tmp_path) -> None:
        path = photos.jpeg(tmp_path / "p.jpg", offset="+25:00")
        taken = read_metadata(path).taken
        assert (taken.source, taken.offset_minutes) == ("exif_original", None)

    def test_garbage_gps_date_is_ignored(self, tmp_path) -> None:
        path = photos.jpeg(
            tmp_path / "p.jpg",
            taken=None,
            gps_time="2023:07:14 08:15:30",
            extra_gps={29: "0000:00:00"},
        )
        assert read_metadata(path, mtime=datetime(2022, 1, 1)).taken.source == "mtime"


# Pillow warns (UserWarning) about the junk while opening the JPEG; in production a warning is
# printed and the photo reads, which is what this test checks. Under pytest's
# filterwarnings=error the same file raises corrupt_file instead.
@pytest.mark.filterwarnings("ignore:Corrupt EXIF data:UserWarning")
def test_corrupt_exif_block_costs_metadata_not_the_photo(tmp_path) -> None:
    meta = read_metadata(photos.corrupt_exif(tmp_path / "p.jpg"), mtime=datetime(2022, 1, 1))
    assert (meta.format, meta.width, meta.height) == ("jpeg", 320, 240)
    assert meta.taken.source == "mtime"
    assert meta.make is None


def test_png_exif_after_the_pixel_data_is_found_without_decoding(tmp_path) -> None:
    # move the eXIf chunk behind IDAT, where Pillow would only find it by decoding the image
    path = photos.png(tmp_path / "late.png", size=(64, 48), model="Late EXIF")
    data = path.read_bytes()
    start = data.index(b"eXIf") - 4
    length = int.from_bytes(data[start : start + 4], "big")
    chunk = data[start : start + 12 + length]
    rest = data[:start] + data[start + 12 + length :]
    end = rest.index(b"IEND") - 4
    path.write_bytes(rest[:end] + chunk + rest[end:])
    meta = read_metadata(path)
    assert meta.model == "Late EXIF"
    assert meta.taken.source == "exif_original"


def test_png_without_exif(tmp_path) -> None:
    path = tmp_path / "Screenshot_2023-07-14-10-15-30.png"
    Image.new("RGB", (32, 32), "red").save(path)
    meta = read_metadata(path)
    assert (meta.format, meta.make) == ("png", None)
    assert meta.taken == CaptureTime(datetime(2023, 7, 14, 10, 15, 30), None, "filename")


def test_reading_never_writes_the_original(tmp_path) -> None:
    path = photos.jpeg(tmp_path / "p.jpg")
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    path.chmod(0o444)
    read_metadata(path)
    media.hash_file(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
