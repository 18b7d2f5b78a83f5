"""Where the library lives, which database it uses, how jobs retry: from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_HOME = Path("~/.local/share/photo-pipeline")
_FACES = "PHOTO_PIPELINE_FACES"


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    retry_base_seconds: float = 2.0
    retry_max_seconds: float = 600.0
    # Crashes (dead worker, expired lease, database gone) a job survives; they do not
    # spend its attempts. PHOTO_PIPELINE_MAX_INTERRUPTIONS.
    max_interruptions: int = 20
    max_pixels: int = 200_000_000  # larger images fail with too_many_pixels (bomb guard)
    # PHOTO_PIPELINE_VIDEO_TIME_LIMIT: seconds a scan may spend reading one video's
    # headers (in a child process killed then: decode_timeout, the scan goes on).
    video_time_limit: float = 30.0
    api_token: str | None = None  # PHOTO_PIPELINE_TOKEN; else generated under home
    # PHOTO_PIPELINE_ALLOWED_ROOTS (os.pathsep-separated): folders the HTTP API may
    # name in job params; empty means any folder.
    allowed_roots: tuple[Path, ...] = ()
    # Renditions (render job) and near duplicates (similar job):
    # PHOTO_PIPELINE_THUMBNAIL_SIZE / _PREVIEW_SIZE (longest edge, px),
    # PHOTO_PIPELINE_RENDITION_FORMAT (jpeg, webp or avif; jpeg is the fastest to
    # encode, bench/import.py), PHOTO_PIPELINE_RENDITION_QUALITY,
    # PHOTO_PIPELINE_NEAR_DISTANCE (max Hamming distance of 64-bit pHashes).
    thumbnail_size: int = 256
    preview_size: int = 1440
    rendition_format: str = "jpeg"
    rendition_quality: int = 80
    near_distance: int = 12
    # PHOTO_PIPELINE_DEFAULT_SCHEDULES=0: a new library gets no default schedules
    # (pipeline.scheduled: a nightly rescan, a weekly rolling verify).
    default_schedules: bool = True
    # PHOTO_PIPELINE_FACES: auto (an import queues a faces job when this machine has
    # the models), on (always: a worker elsewhere has them), off. Read from the
    # process's environment when not given (the test suite turns it off there).
    faces: str = field(default_factory=lambda: _faces_setting(os.environ.get(_FACES) or "auto"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``PHOTO_PIPELINE_HOME``, ``PHOTO_PIPELINE_DATABASE_URL``,
        ``PHOTO_PIPELINE_RETRY_BASE_SECONDS`` / ``_MAX_SECONDS`` and
        ``PHOTO_PIPELINE_MAX_PIXELS``, ``PHOTO_PIPELINE_VIDEO_TIME_LIMIT``,
        ``PHOTO_PIPELINE_TOKEN`` and
        ``PHOTO_PIPELINE_ALLOWED_ROOTS``."""
        env = os.environ if environ is None else environ
        home = Path(env.get("PHOTO_PIPELINE_HOME") or DEFAULT_HOME).expanduser()
        url = env.get("PHOTO_PIPELINE_DATABASE_URL") or f"sqlite:///{home / 'library.sqlite3'}"
        return cls(
            home=home,
            database_url=url,
            retry_base_seconds=_seconds(env, "PHOTO_PIPELINE_RETRY_BASE_SECONDS", 2.0),
            retry_max_seconds=_seconds(env, "PHOTO_PIPELINE_RETRY_MAX_SECONDS", 600.0),
            max_interruptions=int(_seconds(env, "PHOTO_PIPELINE_MAX_INTERRUPTIONS", 20)),
            max_pixels=int(_seconds(env, "PHOTO_PIPELINE_MAX_PIXELS", 200_000_000)),
            video_time_limit=_seconds(env, "PHOTO_PIPELINE_VIDEO_TIME_LIMIT", 30.0),
            api_token=env.get("PHOTO_PIPELINE_TOKEN") or None,
            allowed_roots=allowed_roots_from_env(env),
            thumbnail_size=int(_seconds(env, "PHOTO_PIPELINE_THUMBNAIL_SIZE", 256)),
            preview_size=int(_seconds(env, "PHOTO_PIPELINE_PREVIEW_SIZE", 1440)),
            rendition_format=(env.get("PHOTO_PIPELINE_RENDITION_FORMAT") or "jpeg").lower(),
            rendition_quality=int(_seconds(env, "PHOTO_PIPELINE_RENDITION_QUALITY", 80)),
            near_distance=int(_seconds(env, "PHOTO_PIPELINE_NEAR_DISTANCE", 12)),
            default_schedules=(env.get("PHOTO_PIPELINE_DEFAULT_SCHEDULES") or "1").strip().lower()
            not in ("0", "false", "no", "off"),
            **({"faces": _faces_setting(env[_FACES])} if env.get(_FACES) else {}),
        )


def allowed_roots_from_env(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """``PHOTO_PIPELINE_ALLOWED_ROOTS`` as real paths (empty: no confinement). Workers
    read it from their own environment when they check a path at the moment of use."""
    env = os.environ if environ is None else environ
    return tuple(
        Path(root).expanduser().resolve()
        for root in env.get("PHOTO_PIPELINE_ALLOWED_ROOTS", "").split(os.pathsep)
        if root.strip()
    )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A non-negative number from the environment (seconds, or a count)."""
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, got {raw!r}")
    return value


def _faces_setting(text: str) -> str:
    value = text.strip().lower()
    if value not in ("auto", "on", "off"):
        raise ValueError(f"PHOTO_PIPELINE_FACES must be auto, on or off, got {text!r}")
    return value
