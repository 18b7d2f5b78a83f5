"""File names as any bytes a Linux filesystem takes (not UTF-8, the byte forms of lone
surrogates, newlines, a leading ``-``, the catalogue's own ``%bytes:`` marker, NFC and
NFD spellings of one name side by side, 255-byte names), some with an ``.xmp`` sidecar
of their stem and some byte-identical copies, through import, dedupe and its undo,
organize (copy, then move) and its undo, on both databases: every photo is catalogued
(its sidecar read) and no job fails; at every step's end the files are the same
contents, each under its own name or where the step put it, and every undo gives back
the exact byte names."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import dedupe, organize
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.catalog.record import SIDECARS_UNREAD
from tests.conftest import BACKENDS
from tests.factories import photos
from tests.factories.dated import require_exiftool, xmp_packet
from tests.support.import_jobs import catalogue_by_path
from tests.support.photo_jobs import TEMPLATE, run_worker

SIDECAR_DATE = "2011-11-11T11:11:11"
SIDECAR_DATED = ("xmp_sidecar", SIDECAR_DATE)
EXTENSIONS = (b".jpg", b".JPG", b".png", b".jpeg", b"")  # none: read as what it holds
MAX_STEM = 255 - len(b".jpeg")  # the longest photo name is 255 bytes, its sidecar too
# What a file name may hold that a name from a share, a card or a script does.
FRAGMENTS = (
    b"\xed\xa0\x80",  # a lone surrogate (U+D800) as UTF-8 would write it: no UTF-8
    b"\xed\xbf\xbf",
    b"\xff",
    b"\xe9",  # Latin-1 e-acute
    b"\xc3",  # half of a UTF-8 sequence
    b"\n",
    b"\r",
    b"\t",
    b"-",
    b" ",
    b"%bytes:",  # the catalogue's marker of a stored non-UTF-8 path
    b"%E9",
    b"%",
    b":",
    b";",
    b"\\",
    b"*?",
    b"\x1b[2J",
    b"\x7f",
    "\u202e".encode(),  # a bidi override
    "e\u0301".encode(),  # NFD
    "\u00e9".encode(),  # NFC
    "\ufeff".encode(),
    "日本".encode(),
    "\U0001f642".encode(),
    b"IMG_0001",
    b".xmp",
    b"..",
)


def _clean(raw: bytes) -> bytes:
    """A name the filesystem takes: no separator, no NUL, at most MAX_STEM bytes."""
    return raw.replace(b"/", b"_").replace(b"\x00", b"_")[:MAX_STEM] or b"_"


@st.composite
def stems(draw: st.DrawFn) -> bytes:
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(FRAGMENTS), st.binary(min_size=1, max_size=6)),
            min_size=1,
            max_size=6,
        )
    )
    stem = b"".join(parts)
    if draw(st.booleans()):
        stem = b"-" + stem  # as an option would read it
    if draw(st.integers(0, 7)) == 0:  # a very long name: up to the 255 bytes a name may have
        stem = (stem * (MAX_STEM // len(stem) + 1))[: draw(st.integers(MAX_STEM - 8, MAX_STEM))]
    return _clean(stem)


@dataclass(frozen=True)
class Photo:
    folder: bytes  # b"" or the subfolder
    stem: bytes
    extension: bytes
    sidecar: bool
    copy_of: int | None  # the index of an earlier photo whose bytes it has

    @property
    def relative(self) -> bytes:
        return os.path.join(self.folder, self.stem + self.extension)

    @property
    def hidden(self) -> bool:  # the scan passes over hidden files, as everyone does
        return self.stem.startswith(b".")


@st.composite
def libraries(draw: st.DrawFn) -> list[Photo]:
    """The photos of a tree of two folders (the subfolder's name generated too): an
    NFC/NFD pair of one name in one folder, generated names, sidecars, copies."""
    subfolder = _clean(b"d" + draw(stems()))
    accented = draw(st.text(alphabet="aeiouAEIOU\u00e9\u00e8\u00fc\u00f1\u00e5 ", min_size=1))
    accented += "\u00e9"  # one that NFC and NFD spell differently at least
    photos_: list[Photo] = []
    taken: set[bytes] = set()

    def add(folder: bytes, stem: bytes, copy: bool) -> None:
        extension = draw(st.sampled_from(EXTENSIONS))
        if not extension and (os.path.splitext(stem)[1] or stem in (b".", b"..")):
            extension = b".jpg"  # else its own (.xmp, .mov, .txt) would say what it is
        photo = Photo(
            folder,
            stem,
            extension,
            sidecar=draw(st.booleans()),
            copy_of=draw(st.integers(0, len(photos_) - 1)) if copy and photos_ else None,
        )
        if photo.relative not in taken:  # photos of one stem share its sidecar
            taken.add(photo.relative)
            photos_.append(photo)

    for form in ("NFC", "NFD"):
        add(b"", unicodedata.normalize(form, accented).encode(), copy=False)
    for _ in range(draw(st.integers(10, 30))):
        add(draw(st.sampled_from((b"", subfolder))), draw(stems()), copy=draw(st.booleans()))
    return photos_


def write_library(root: Path, photos_: list[Photo]) -> None:
    root.mkdir()
    broot = os.fsencode(root)
    for n, photo in enumerate(photos_):
        path = os.path.join(broot, photo.relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if photo.copy_of is not None:
            shutil.copyfile(os.path.join(broot, photos_[photo.copy_of].relative), path)
        elif photo.extension == b".png":
            photos.png(os.fsdecode(path), size=(12, 8), seed=n)
        else:
            photos.jpeg(os.fsdecode(path), size=(12, 8), seed=n)
        if photo.sidecar:
            sidecar = os.path.join(broot, photo.folder, photo.stem + b".xmp")
            with open(sidecar, "wb") as out:
                out.write(xmp_packet(photoshop_DateCreated=SIDECAR_DATE))


def contents(root: Path) -> dict[bytes, str]:
    """Relative path (bytes, as the filesystem has it) -> sha256 of every file below."""
    found = {}
    broot = os.fsencode(root)
    for folder, _, names in os.walk(broot):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, broot)] = hashlib.sha256(f.read()).hexdigest()
    return found


def named(*trees: dict[bytes, str]) -> Counter[tuple[bytes, str]]:
    """Each file as (its name, its content), over ``trees``."""
    return Counter((os.path.basename(p), h) for tree in trees for p, h in tree.items())


def run(session_factory, job: dict) -> dict:
    """Run ``job`` (and whatever else is queued) to the end: neither it nor any of its
    items failed."""
    run_worker(session_factory)
    service = JobService(session_factory)
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED, final
    failed = service.items(job["id"], states=["failed"])
    assert not failed, [(i["item_key"], i["error_code"], i["error_message"]) for i in failed]
    return final


@contextlib.contextmanager
def fresh_database(migrated_templates, kind: str, folder: Path) -> Iterator[str]:
    yield from migrated_templates.database_url(kind, folder)


@pytest.mark.parametrize("kind", BACKENDS)
def test_any_file_name_survives_import_dedupe_organize_and_their_undos(
    kind, migrated_templates, tmp_path_factory
) -> None:
    require_exiftool()

    # Not shrunk: an example takes seconds (six jobs on real files), so shrinking one
    # would outlast the test's time-out; a failing library is printed as generated.
    @settings(
        max_examples=15 if kind == "sqlite" else 6,
        deadline=None,
        phases=(Phase.explicit, Phase.reuse, Phase.generate),
    )
    @given(generated=libraries())
    def one_library(generated: list[Photo]) -> None:
        base = tmp_path_factory.mktemp("hostile")
        with fresh_database(migrated_templates, kind, base) as url:
            session_factory = open_database(url)
            try:
                through_every_step(session_factory, base, generated)
            finally:
                session_factory.kw["bind"].dispose()
        shutil.rmtree(base)

    one_library()


def through_every_step(session_factory, base: Path, generated: list[Photo]) -> None:
    src, home, dest = base / "photos", base / "home", base / "sorted"
    write_library(src, generated)
    before = contents(src)

    service = JobService(session_factory)
    [scan] = import_folders(service, Catalog(session_factory), [src])
    run(session_factory, scan)
    assert contents(src) == before
    rows = {os.fsencode(p): row for p, row in catalogue_by_path(Catalog(session_factory)).items()}
    shared = Counter(row["asset_id"] for row in rows.values())  # an asset per content
    for photo in generated:
        if photo.hidden:
            assert photo.relative not in rows
            continue
        row = rows[photo.relative]
        assert (row["state"], row["error_code"]) == ("present", None), photo
        if photo.sidecar:  # read, and (its content its own) dated by it
            assert row["sidecars"] not in (None, SIDECARS_UNREAD), photo
            if shared[row["asset_id"]] == 1:
                asset = row["asset"]
                assert (asset["taken_source"], asset["taken_local"]) == SIDECAR_DATED, photo

    # dedupe: all copies of a content but one go into the quarantine (with their
    # sidecars), under their own names
    catalogued = {p.relative: before[p.relative] for p in generated if not p.hidden}
    photo_contents = set(catalogued.values())
    job = run(session_factory, dedupe.start_dedupe(service, home).job)
    quarantine = Path(dedupe.quarantine_folder(home, job["id"]))
    kept, held = contents(src), contents(quarantine) if quarantine.exists() else {}
    assert named(kept, held) == named(before)
    assert kept.items() <= before.items()
    assert {h for p, h in kept.items() if p in catalogued} == photo_contents
    held_photos = [h for h in held.values() if h in photo_contents]
    assert len(held_photos) == len(catalogued) - len(photo_contents)
    run(session_factory, dedupe.start_undo(service, job["id"]).job)
    assert contents(src) == before
    assert not quarantine.exists() or contents(quarantine) == {}

    # organize, a copy: the originals stay as they are; its undo removes the copies
    job = run(session_factory, organize.start_organize(service, dest, TEMPLATE).job)
    assert contents(src) == before
    placed = Counter(h for h in contents(dest).values() if h in photo_contents)
    assert placed == Counter(photo_contents)
    run(session_factory, organize.start_undo(service, job["id"]).job)
    assert contents(src) == before
    assert contents(dest) == {}

    # organize, a move: every file is in one place or the other; its undo brings
    # each back under its very name
    job = run(session_factory, organize.start_organize(service, dest, TEMPLATE, move=True).job)
    left, moved = contents(src), contents(dest)
    assert Counter(left.values()) + Counter(moved.values()) == Counter(before.values())
    assert left.items() <= before.items()
    moved_photos = Counter(h for h in moved.values() if h in photo_contents)
    assert moved_photos == Counter(photo_contents)  # each once: copies stay
    run(session_factory, organize.start_undo(service, job["id"]).job)
    assert contents(src) == before
    assert contents(dest) == {}

    # and the catalogue has each photo where it is again
    run(session_factory, import_folders(service, Catalog(session_factory), [src])[0])
    rows = {os.fsencode(p): row for p, row in catalogue_by_path(Catalog(session_factory)).items()}
    assert {p: rows[p]["state"] for p in catalogued} == dict.fromkeys(catalogued, "present")
