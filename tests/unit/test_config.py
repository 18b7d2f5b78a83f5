from pathlib import Path

import pytest

from photo_pipeline.config import Settings
from photo_pipeline.db import create_database_engine


def test_default_database_is_sqlite_under_home(tmp_path):
    settings = Settings.from_env({"PHOTO_PIPELINE_HOME": str(tmp_path)})
    assert settings.home == tmp_path
    assert settings.database_url == f"sqlite:///{tmp_path / 'library.sqlite3'}"


def test_database_url_overrides_home():
    settings = Settings.from_env({"PHOTO_PIPELINE_DATABASE_URL": "postgresql://db/x"})
    assert settings.database_url == "postgresql://db/x"
    assert settings.home == Path("~/.local/share/photo-pipeline").expanduser()


def test_unsupported_database_url_is_refused():
    with pytest.raises(ValueError, match="unsupported database URL"):
        create_database_engine("mysql://localhost/x")


def test_the_video_time_limit_is_a_setting():
    assert Settings.from_env({}).video_time_limit == 30.0
    settings = Settings.from_env({"PHOTO_PIPELINE_VIDEO_TIME_LIMIT": "7.5"})
    assert settings.video_time_limit == 7.5
