"""Where the library lives and which database it uses, from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOME = Path("~/.local/share/photo-pipeline")


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Read ``PHOTO_PIPELINE_HOME`` and ``PHOTO_PIPELINE_DATABASE_URL``."""
        env = os.environ if environ is None else environ
        home = Path(env.get("PHOTO_PIPELINE_HOME") or DEFAULT_HOME).expanduser()
        url = env.get("PHOTO_PIPELINE_DATABASE_URL") or f"sqlite:///{home / 'library.sqlite3'}"
        return cls(home=home, database_url=url)
