"""Every asset stores the SHA-256 of its content, read with its BLAKE3 (the upload
pre-check asks by it); an asset catalogued without one (before revision 0021) gets
it when a scan reads its file again (``import --reread``)."""

from __future__ import annotations

import hashlib

from sqlalchemy import select, update

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.schema import assets
from tests.factories import photos
from tests.support.import_jobs import run_import


def _sha256s(session_factory) -> dict[int, str | None]:
    with read_session(session_factory) as session:
        return {row.id: row.sha256 for row in session.execute(select(assets.c.id, assets.c.sha256))}


def test_a_scan_stores_each_assets_sha256_and_fills_a_missing_one(session_factory, tmp_path):
    folder = tmp_path / "photos"
    shot = [photos.jpeg(folder / f"{n}.jpg", size=(64, 48), seed=n) for n in range(3)]
    expected = {hashlib.sha256(p.read_bytes()).hexdigest() for p in shot}
    run_import(session_factory, folder)
    assert set(_sha256s(session_factory).values()) == expected

    with write_session(session_factory) as session:  # as an older version left them
        session.execute(update(assets).values(sha256=None))
    run_import(session_factory, folder)  # unchanged files are not read: still none
    assert set(_sha256s(session_factory).values()) == {None}
    run_import(session_factory, folder, reread=True)
    assert set(_sha256s(session_factory).values()) == expected
