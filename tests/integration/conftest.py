"""Fixtures shared by the integration tests."""

from __future__ import annotations

import sys

import pytest

from photo_pipeline.cli import main
from photo_pipeline.cli.common import library


@pytest.fixture
def cli(db_url, tmp_path, monkeypatch, capsys):
    """Run ``photo-pipeline ARGS…`` in-process on the test's database: (code, out, err)."""
    monkeypatch.setenv("PHOTO_PIPELINE_DATABASE_URL", db_url)
    monkeypatch.setenv("PHOTO_PIPELINE_HOME", str(tmp_path / "home"))
    library.cache_clear()

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["photo-pipeline", *args])
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    if library.cache_info().currsize:
        library().close()
    library.cache_clear()
