"""Database layer: engines, sessions, schema and migrations."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.engine import (
    changed_rows,
    create_database_engine,
    read_session,
    write_session,
)

__all__ = [
    "changed_rows",
    "create_database_engine",
    "open_database",
    "read_session",
    "write_session",
]


def open_database(url: str) -> sessionmaker[Session]:
    """Open the database at ``url``, creating or upgrading its schema, and return a
    session factory bound to it."""
    from photo_pipeline.db.migrate import upgrade  # Alembic loads only if there is work

    engine = create_database_engine(url)
    upgrade(engine)
    return sessionmaker(engine, expire_on_commit=False)
