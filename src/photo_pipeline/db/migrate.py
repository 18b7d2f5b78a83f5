"""Create or upgrade the schema with Alembic, safely when many processes start at once."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.engine import _WRITE
from photo_pipeline.db.errors import DatabaseReadOnly

if TYPE_CHECKING:
    from alembic.config import Config

_SCRIPTS = Path(__file__).parent / "migrations"
# Arbitrary constant shared by every photo-pipeline process on one PostgreSQL.
_PG_MIGRATION_LOCK = 0x70686F746F
# Revision ids are the files' four-digit prefixes, in one line of history: the head is
# the highest. Knowing it without Alembic keeps the start of every command cheap
# (Alembic loads Mako and Pygments); Alembic runs only when there is work to do.
_REVISION_FILE = re.compile(r"^(\d{4})_\w+\.py$")


def alembic_config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_SCRIPTS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The newest revision, from the migration files' names (see ``_REVISION_FILE``)."""
    found = [
        m.group(1) for p in (_SCRIPTS / "versions").iterdir() if (m := _REVISION_FILE.match(p.name))
    ]
    return max(found, default=None)


def alembic_head_revision() -> str | None:
    """The head as Alembic reads it from the scripts (tests check both agree)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision``; concurrent callers run the migration once."""
    if revision == "head" and current_revision(engine) == head_revision():
        return
    from alembic import command

    try:
        with engine.connect().execution_options(**{_WRITE: True}) as conn, conn.begin():
            # SQLite: BEGIN IMMEDIATE already serialises us. PostgreSQL: a transaction-
            # scoped advisory lock, released at commit.
            if is_postgresql(conn):
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK}
                )
            command.upgrade(alembic_config(conn), revision)
    except DatabaseReadOnly as exc:
        database = exc.extra.get("database")
        raise DatabaseReadOnly(
            detail=f"the library database {database} is read-only here and its schema is "
            "older than this version's: run `photo-pipeline init` once where the library "
            "home is writable",
            database=database,
        ) from exc


def downgrade(engine: Engine, revision: str) -> None:
    from alembic import command

    with engine.connect().execution_options(**{_WRITE: True}) as conn, conn.begin():
        command.downgrade(alembic_config(conn), revision)
