"""Where uploads land and their limits, from the environment.

``PHOTO_PIPELINE_UPLOADS_DIR``: the uploads source (default: ``uploads`` in the first
allowed root; without allowed roots, ``<home>-uploads`` beside the library home, never
in it). ``PHOTO_PIPELINE_UPLOAD_MAX_FILE_BYTES`` (default 16 GiB),
``PHOTO_PIPELINE_UPLOAD_MAX_DAY_BYTES`` (bytes all uploads created in one UTC day may
declare, default 200 GiB), ``PHOTO_PIPELINE_UPLOAD_EXPIRE_HOURS`` (an unfinished upload
untouched this long is removed, default 24) and ``PHOTO_PIPELINE_UPLOAD_SWEEP_SECONDS``
(how often ``serve`` sweeps, default 60).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from photo_pipeline.config import Settings

PARTIALS = ".pp-uploads"  # hidden: scans never list it


@dataclass(frozen=True)
class UploadSettings:
    root: Path
    max_file_bytes: int = 16 << 30
    max_day_bytes: int = 200 << 30
    expire_after: timedelta = timedelta(hours=24)
    sweep_seconds: float = 60.0
    # Free space a creation must leave on the uploads' filesystem (else 507).
    reserve_bytes: int = 64 << 20

    @property
    def partials(self) -> Path:
        """The hidden folder of unfinished uploads, inside the root: the same
        filesystem, so that a finished one lands by hard link, never by copy."""
        return self.root / PARTIALS

    @classmethod
    def from_env(
        cls, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> UploadSettings:
        env = os.environ if environ is None else environ
        configured = env.get("PHOTO_PIPELINE_UPLOADS_DIR")
        if configured:
            root = Path(configured).expanduser()
        elif settings.allowed_roots:
            root = settings.allowed_roots[0] / "uploads"
        else:
            home = settings.home.expanduser().resolve()
            root = home.with_name(home.name + "-uploads")
        return cls(
            root=root.resolve(),
            max_file_bytes=_number(env, "PHOTO_PIPELINE_UPLOAD_MAX_FILE_BYTES", cls.max_file_bytes),
            max_day_bytes=_number(env, "PHOTO_PIPELINE_UPLOAD_MAX_DAY_BYTES", cls.max_day_bytes),
            expire_after=timedelta(hours=_number(env, "PHOTO_PIPELINE_UPLOAD_EXPIRE_HOURS", 24)),
            sweep_seconds=_number(env, "PHOTO_PIPELINE_UPLOAD_SWEEP_SECONDS", 60),
        )


def _number(env: Mapping[str, str], name: str, default: float) -> int:
    raw = env.get(name)
    if not raw:
        return int(default)
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {raw!r}")
    return int(value)
