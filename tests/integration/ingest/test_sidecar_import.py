"""An import of photos with XMP sidecars (darktable's ``NAME.EXT.xmp``, Lightroom's
``STEM.xmp``) catalogues each with the capture time and position its sidecar gives, on
both databases; a sidecar that does not read, or leads outside the roots, is passed
over and the photo keeps its own. Names that are not UTF-8 or hold a newline are
read like any other."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import timeshift
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.factories.dated import require_exiftool, xmp_packet
from tests.support.import_jobs import catalogue_by_path, import_and_run, run_import, settings_for
from tests.support.photo_jobs import run_organize, run_worker

OWN = ("exif_original", "2023-07-14T10:15:30.123000")  # what photos.jpeg writes
SIDECAR_DATE = ("xmp_sidecar", "2019-04-05T12:34:56")  # imported_with_a_dated_sidecar's


def test_import_takes_the_date_and_place_an_editor_wrote_beside_the_photo(
    session_factory, tmp_path
) -> None:
    require_exiftool()
    card = tmp_path / "card"
    photos.jpeg(card / "IMG_0001.JPG", size=(64, 48), seed=1)
    # darktable's name; the user corrected the clock and placed the photo in Paris
    (card / "IMG_0001.JPG.xmp").write_bytes(
        xmp_packet(
            exif_DateTimeOriginal="2019-04-05T12:34:56+02:00",
            exif_GPSLatitude="48,51.3N",
            exif_GPSLongitude="2,17.4E",
        )
    )
    # Lightroom's name, in capitals: a position below sea level, no date
    photos.jpeg(card / "IMG_0002.JPG", size=(64, 48), seed=2)
    (card / "IMG_0002.XMP").write_bytes(
        xmp_packet(
            exif_GPSLatitude="31,30.0N",
            exif_GPSLongitude="35,30.0E",
            exif_GPSAltitude="4200/10",
            exif_GPSAltitudeRef="1",
        )
    )
    # a sidecar that is no XMP, and one that is a link out of the library's roots
    photos.jpeg(card / "IMG_0003.JPG", size=(64, 48), seed=3)
    (card / "IMG_0003.xmp").write_bytes(b"\x00\x01 not xmp at all")
    photos.jpeg(card / "IMG_0004.JPG", size=(64, 48), seed=4)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.xmp").write_bytes(
        xmp_packet(exif_DateTimeOriginal="2001-01-01T01:01:01+00:00")
    )
    os.symlink(elsewhere / "secret.xmp", card / "IMG_0004.xmp")
    # a link that stays inside them is followed
    photos.jpeg(card / "IMG_0006.JPG", size=(64, 48), seed=6)
    (card / "edits").mkdir()
    (card / "edits" / "shared.xmp").write_bytes(
        xmp_packet(photoshop_DateCreated="2020-02-29T23:59:59")
    )
    os.symlink(card / "edits" / "shared.xmp", card / "IMG_0006.JPG.xmp")
    # an editor's xmp:CreateDate is when a file was made, not when the photo was
    photos.jpeg(card / "IMG_0005.JPG", size=(64, 48), seed=5)
    (card / "IMG_0005.xmp").write_bytes(xmp_packet(xmp_CreateDate="2024-02-02T02:02:02"))

    # its name in another case (a card or share that did not keep case): still its own
    photos.jpeg(card / "IMG_0007.JPG", size=(64, 48), seed=7)
    (card / "img_0007.xmp").write_bytes(xmp_packet(photoshop_DateCreated="2017-01-02T03:04:05"))

    run_import(session_factory, card)

    rows = catalogue_by_path(Catalog(session_factory))
    seventh = rows["IMG_0007.JPG"]["asset"]
    assert (seventh["taken_source"], seventh["taken_local"]) == (
        "xmp_sidecar",
        "2017-01-02T03:04:05",
    )
    first = rows["IMG_0001.JPG"]["asset"]
    assert (first["taken_source"], first["taken_local"]) == ("xmp_sidecar", "2019-04-05T12:34:56")
    assert first["taken_utc"] == datetime(2019, 4, 5, 10, 34, 56, tzinfo=UTC)
    assert (first["gps_latitude"], first["gps_longitude"]) == pytest.approx((48.855, 2.29))
    assert first["country_code"] == "FR"

    second = rows["IMG_0002.JPG"]["asset"]
    assert (second["taken_source"], second["taken_local"]) == OWN
    assert (second["gps_latitude"], second["gps_longitude"]) == pytest.approx((31.5, 35.5))
    assert second["gps_altitude"] == pytest.approx(-420.0)

    sixth = rows["IMG_0006.JPG"]["asset"]
    assert (sixth["taken_source"], sixth["taken_local"]) == ("xmp_sidecar", "2020-02-29T23:59:59")

    for name in ("IMG_0003.JPG", "IMG_0004.JPG", "IMG_0005.JPG"):
        asset = rows[name]["asset"]
        assert (asset["taken_source"], asset["taken_local"]) == OWN, name
        assert asset["gps_latitude"] is None, name
    # the sidecars themselves are no assets
    assert rows["IMG_0002.XMP"]["asset"] is None
    assert rows["IMG_0003.xmp"]["asset"] is None


def test_a_sidecar_written_edited_or_removed_later_is_followed_unless_the_date_was_shifted(
    session_factory, tmp_path
) -> None:
    require_exiftool()
    card = tmp_path / "card"
    photos.jpeg(card / "IMG_0001.JPG", size=(64, 48), seed=1, model="EOS R5")
    photos.jpeg(card / "IMG_0002.JPG", size=(64, 48), seed=2, model="X100V", make="Fujifilm")
    run_import(session_factory, card)

    def asset(name: str) -> dict:
        row = catalogue_by_path(Catalog(session_factory))[name]["asset"]
        return {key: row[key] for key in ("taken_source", "taken_local", "country_code")}

    own = {"taken_source": OWN[0], "taken_local": OWN[1], "country_code": None}
    assert asset("IMG_0001.JPG") == own

    def write_sidecars(**properties: str) -> None:
        for name in ("IMG_0001.JPG.xmp", "IMG_0002.JPG.xmp"):
            (card / name).write_bytes(xmp_packet(**properties))

    # geotagged and re-dated in an editor after the import
    write_sidecars(
        exif_DateTimeOriginal="2019-04-05T12:34:56+02:00",
        exif_GPSLatitude="48,51.3N",
        exif_GPSLongitude="2,17.4E",
    )
    run_import(session_factory, card)
    redated = {"taken_source": "xmp_sidecar", "taken_local": "2019-04-05T12:34:56"}
    assert asset("IMG_0001.JPG") == {**redated, "country_code": "FR"}

    # the user shifts the Fujifilm's date: from then on it is theirs
    service = JobService(session_factory)
    shift = timeshift.start_timeshift(service, camera="X100V", by="+1h").job
    run_worker(session_factory)
    assert service.get(shift["id"])["state"] == JobState.SUCCEEDED
    assert asset("IMG_0002.JPG")["taken_local"] == "2019-04-05T13:34:56"

    write_sidecars(photoshop_DateCreated="2018-01-02T03:04:05")  # no position any more
    run_import(session_factory, card)
    assert asset("IMG_0001.JPG") == {
        "taken_source": "xmp_sidecar",
        "taken_local": "2018-01-02T03:04:05",
        "country_code": None,
    }
    assert asset("IMG_0002.JPG")["taken_local"] == "2019-04-05T13:34:56"

    for name in ("IMG_0001.JPG.xmp", "IMG_0002.JPG.xmp"):
        (card / name).unlink()
    run_import(session_factory, card)
    assert asset("IMG_0001.JPG") == own
    assert asset("IMG_0002.JPG")["taken_local"] == "2019-04-05T13:34:56"


def imported_with_a_dated_sidecar(session_factory, tmp_path) -> tuple[Path, Path, Catalog]:
    """A card whose IMG_0001.JPG an editor re-dated in a sidecar, imported: the photo,
    its sidecar and the catalogue."""
    require_exiftool()
    card = tmp_path / "card"
    photo = photos.jpeg(card / "IMG_0001.JPG", size=(64, 48), seed=1)
    sidecar = card / "IMG_0001.JPG.xmp"
    sidecar.write_bytes(xmp_packet(exif_DateTimeOriginal="2019-04-05T12:34:56+02:00"))
    run_import(session_factory, card)
    catalog = Catalog(session_factory)
    assert dated(catalog) == SIDECAR_DATE
    return photo, sidecar, catalog


def dated(catalog: Catalog) -> tuple[str, str]:
    """IMG_0001.JPG's capture time: (source, local)."""
    asset = catalogue_by_path(catalog)["IMG_0001.JPG"]["asset"]
    return asset["taken_source"], asset["taken_local"]


def test_a_scan_stopped_after_its_discovery_still_follows_a_removed_sidecar(
    session_factory, tmp_path
) -> None:
    photo, sidecar, catalog = imported_with_a_dated_sidecar(session_factory, tmp_path)
    card = photo.parent

    # What a scan killed right after its discovery leaves: the sidecar marked missing,
    # the photo beside it queued to be read again. Its next run discovers nothing new.
    sidecar.unlink()
    source = catalog.add_source(card)
    catalog.mark_missing(source["id"], [paths.to_text("IMG_0001.JPG.xmp")])
    service = JobService(session_factory)
    resumed = service.submit(
        job_type=scan.JOB_TYPE,
        lock=scan.lock_for(source["id"]),
        params={"sources": [{"id": source["id"], "path": source["path"]}]},
        items=[f"{source['id']}:{paths.to_text('IMG_0001.JPG')}"],
    ).job
    run_worker(session_factory)
    assert service.get(resumed["id"])["state"] == JobState.SUCCEEDED
    assert dated(catalog) == OWN


def test_a_sidecar_that_fails_to_read_leaves_the_asset_as_it_was(session_factory, tmp_path) -> None:
    photo, sidecar, catalog = imported_with_a_dated_sidecar(session_factory, tmp_path)

    # the photo is read again (touched) while its sidecar does not read: a FIFO now
    sidecar.unlink()
    os.mkfifo(sidecar)
    os.utime(photo, ns=(photo.stat().st_atime_ns, photo.stat().st_mtime_ns + 10**9))
    run_import(session_factory, photo.parent)
    assert dated(catalog) == SIDECAR_DATE


def test_a_sidecar_whose_name_spells_an_accent_otherwise_is_still_its_photos(
    session_factory, tmp_path
) -> None:
    """macOS writes ``é`` decomposed (NFD), Linux and Windows editors composed (NFC):
    the sidecar dates its photo, and a move takes it along."""
    require_exiftool()
    card = tmp_path / "card"
    decomposed, composed = "Cafe\u0301", "Caf\u00e9"
    photos.jpeg(card / f"{decomposed}.jpg", size=(64, 48), seed=1)
    (card / f"{composed}.xmp").write_bytes(xmp_packet(photoshop_DateCreated="2001-02-03T04:05:06"))
    photos.jpeg(card / f"Zo{chr(0xEB)}.jpg", size=(64, 48), seed=2)  # NFC photo
    (card / "Zoe\u0308.jpg.xmp").write_bytes(  # darktable's name, NFD
        xmp_packet(photoshop_DateCreated="2002-03-04T05:06:07")
    )
    run_import(session_factory, card)
    rows = catalogue_by_path(Catalog(session_factory))
    taken = {
        path: (row["asset"]["taken_source"], row["asset"]["taken_local"])
        for path, row in rows.items()
        if row["asset"] is not None
    }
    assert taken == {
        f"{decomposed}.jpg": ("xmp_sidecar", "2001-02-03T04:05:06"),
        f"Zo{chr(0xEB)}.jpg": ("xmp_sidecar", "2002-03-04T05:06:07"),
    }
    job = run_organize(session_factory, tmp_path / "sorted", move=True)
    assert JobService(session_factory).progress(job["id"])["by_state"] == {"succeeded": 4}
    assert sorted(os.listdir(card)) == [], "every sidecar travelled with its photo"


def test_a_photo_and_its_sidecar_whose_names_are_not_utf8_import_with_the_sidecar(
    session_factory, db_url, tmp_path
) -> None:
    """``lat\\xe9`` (Latin-1, from an old Windows share): the stamp of the sidecar
    read names it as the catalogue stores paths, so the scan, and the render and
    similar after it, succeed; an edit of the sidecar is followed."""
    require_exiftool()
    card = tmp_path / "card"
    latin = os.fsdecode(b"lat\xe9")
    photos.png(card / f"{latin}.png", size=(64, 48), seed=1)
    sidecar = card / f"{latin}.xmp"
    sidecar.write_bytes(xmp_packet(photoshop_DateCreated="2017-01-02T03:04:05"))
    # a Takeout JSON's stamp is the same kind: one of each
    takeout = os.fsdecode(b"caf\xe9\xff.jpg")
    photos.jpeg(card / takeout, size=(64, 48), seed=2, taken=None, offset=None, subsec=None)
    (card / f"{takeout}.json").write_text(
        json.dumps({"photoTakenTime": {"timestamp": "1000000000"}})
    )

    jobs = import_and_run(session_factory, card, settings_for(tmp_path / "home", db_url))
    assert [(job["job_type"], job["state"]) for job in jobs] == [
        ("scan", JobState.SUCCEEDED),
        ("render", JobState.SUCCEEDED),
        ("similar", JobState.SUCCEEDED),
    ]
    assert jobs[0]["attempts"] == 1

    def taken(name: str) -> tuple[str, str]:
        asset = catalogue_by_path(Catalog(session_factory))[name]["asset"]
        return asset["taken_source"], asset["taken_local"]

    assert taken(f"{latin}.png") == ("xmp_sidecar", "2017-01-02T03:04:05")
    assert taken(takeout) == ("takeout", "2001-09-09T01:46:40")

    sidecar.write_bytes(xmp_packet(photoshop_DateCreated="2018-02-03T04:05:06"))
    assert run_import(session_factory, card)["failed"] == {}
    assert taken(f"{latin}.png") == ("xmp_sidecar", "2018-02-03T04:05:06")


def test_a_sidecar_whose_name_holds_a_newline_is_read(session_factory, tmp_path) -> None:
    """exiftool takes its arguments a line each: the sidecar is read by a name without
    the newline (it was passed over, as if it said nothing)."""
    require_exiftool()
    card = tmp_path / "card"
    photos.jpeg(card / "new\nline.jpg", size=(64, 48), seed=1)
    (card / "new\nline.xmp").write_bytes(xmp_packet(photoshop_DateCreated="2017-01-02T03:04:05"))
    photos.jpeg(card / "IMG\r\n.jpg", size=(64, 48), seed=2)
    (card / "IMG\r\n.jpg.xmp").write_bytes(xmp_packet(photoshop_DateCreated="2018-01-02T03:04:05"))
    run_import(session_factory, card)
    rows = catalogue_by_path(Catalog(session_factory))
    dated = {
        name: (rows[name]["asset"]["taken_source"], rows[name]["asset"]["taken_local"])
        for name in ("new\nline.jpg", "IMG\r\n.jpg")
    }
    assert dated == {
        "new\nline.jpg": ("xmp_sidecar", "2017-01-02T03:04:05"),
        "IMG\r\n.jpg": ("xmp_sidecar", "2018-01-02T03:04:05"),
    }
