"""Create or upgrade the schema with Alembic, safely when many processes start at once."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

from photo_pipeline.db.engine import _WRITE

_SCRIPTS = Path(__file__).parent / "migrations"
# Arbitrary constant shared by every photo-pipeline process on one PostgreSQL.
_PG_MIGRATION_LOCK = 0x70686F746F


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision``; concurrent callers run the migration once."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    with engine.connect().execution_options(**{_WRITE: True}) as conn, conn.begin():
        # SQLite: BEGIN IMMEDIATE already serialises us. PostgreSQL: a transaction-
        # scoped advisory lock, released at commit.
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.connect().execution_options(**{_WRITE: True}) as conn, conn.begin():
        command.downgrade(alembic_config(conn), revision)
