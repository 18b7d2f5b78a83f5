"""The ``uploads`` rows (db.schema.uploads): one per tus upload from its creation on.

The day's quota is the sum of the lengths that uploads created since the UTC day began
declared: checked and taken in one write transaction (on PostgreSQL under a
transaction-scoped advisory lock, on SQLite under its write lock), so two creations
at once cannot both pass a quota only one of them fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import uploads
from photo_pipeline.errors import PhotoPipelineError

_QUOTA_LOCK = 0x75706C64  # "upld": the advisory lock of the day's quota


class OverQuota(PhotoPipelineError):
    code = "daily_quota_exceeded"
    status = 413


@dataclass(frozen=True)
class Upload:
    id: str
    device: str
    filename: str
    length: int
    mtime_ns: int | None
    created_at: datetime
    expires_at: datetime
    finished_at: datetime | None
    placed: str | None


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def used_today(session: Session, now: datetime) -> int:
    total = session.scalar(
        select(func.coalesce(func.sum(uploads.c.length), 0)).where(
            uploads.c.created_at >= day_start(now)
        )
    )
    return int(total or 0)


def create(factory: sessionmaker[Session], upload: Upload, max_day_bytes: int) -> None:
    """Insert ``upload`` if the day's uploads leave room for its length (``OverQuota``)."""
    with write_session(factory) as session:
        if is_postgresql(session):
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _QUOTA_LOCK})
        used = used_today(session, upload.created_at)
        if used + upload.length > max_day_bytes:
            left = max(0, max_day_bytes - used)
            raise OverQuota(
                "daily_quota_exceeded",
                f"today's uploads may declare {max_day_bytes} bytes in all; {left} are left "
                f"and this file has {upload.length}; try again tomorrow (UTC) or raise "
                "PHOTO_PIPELINE_UPLOAD_MAX_DAY_BYTES",
                limit=max_day_bytes,
                left=left,
            )
        session.execute(uploads.insert().values(**upload.__dict__))


def get(factory: sessionmaker[Session], upload_id: str) -> Upload | None:
    with read_session(factory) as session:
        row = session.execute(
            select(*(uploads.c[name] for name in Upload.__dataclass_fields__)).where(
                uploads.c.id == upload_id
            )
        ).first()
    return None if row is None else Upload(**row._mapping)


def extend(factory: sessionmaker[Session], upload_id: str, expires_at: datetime) -> None:
    """An upload that is being sent is not abandoned: it expires later."""
    with write_session(factory) as session:
        session.execute(
            update(uploads)
            .where(uploads.c.id == upload_id, uploads.c.finished_at.is_(None))
            .values(expires_at=expires_at)
        )


def finish(factory: sessionmaker[Session], upload_id: str, placed: str, now: datetime) -> None:
    with write_session(factory) as session:
        session.execute(
            update(uploads)
            .where(uploads.c.id == upload_id, uploads.c.finished_at.is_(None))
            .values(finished_at=now, placed=placed)
        )


def forget(factory: sessionmaker[Session], upload_ids: list[str]) -> None:
    if upload_ids:
        with write_session(factory) as session:
            session.execute(delete(uploads).where(uploads.c.id.in_(upload_ids)))


def expired(factory: sessionmaker[Session], now: datetime) -> list[str]:
    """Unfinished uploads whose time is up."""
    with read_session(factory) as session:
        return list(
            session.scalars(
                select(uploads.c.id).where(
                    uploads.c.expires_at < now, uploads.c.finished_at.is_(None)
                )
            )
        )


def finished_ids(factory: sessionmaker[Session], upload_ids: list[str]) -> set[str]:
    with read_session(factory) as session:
        return set(
            session.scalars(
                select(uploads.c.id).where(
                    uploads.c.id.in_(upload_ids), uploads.c.finished_at.is_not(None)
                )
            )
        )


def known_ids(factory: sessionmaker[Session], upload_ids: list[str]) -> set[str]:
    with read_session(factory) as session:
        return set(session.scalars(select(uploads.c.id).where(uploads.c.id.in_(upload_ids))))


def awaiting_catalogue(factory: sessionmaker[Session]) -> list[tuple[str, str]]:
    """(id, landed path) of the finished uploads whose file is not catalogued yet."""
    with read_session(factory) as session:
        rows = session.execute(
            select(uploads.c.id, uploads.c.placed).where(
                uploads.c.finished_at.is_not(None), uploads.c.catalogued_at.is_(None)
            )
        )
        return [(row.id, row.placed) for row in rows]


def mark_catalogued(factory: sessionmaker[Session], upload_ids: list[str], now: datetime) -> None:
    if upload_ids:
        with write_session(factory) as session:
            session.execute(
                update(uploads).where(uploads.c.id.in_(upload_ids)).values(catalogued_at=now)
            )


def prune_before(factory: sessionmaker[Session], before: datetime) -> None:
    """Catalogued uploads of past days: their quota day is over."""
    with write_session(factory) as session:
        session.execute(
            delete(uploads).where(
                uploads.c.catalogued_at.is_not(None), uploads.c.created_at < before
            )
        )
