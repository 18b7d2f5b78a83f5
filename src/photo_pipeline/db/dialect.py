"""Where SQLite and PostgreSQL differ, asked in one place: the engine a session
factory opens sessions on, which database a bind is, an INSERT that can say what
to do on a conflict (both dialects have ``on_conflict_do_nothing``/``_do_update``,
the generic one has neither), and the libpq connection string of a PostgreSQL URL
(for the driver's own connections, which LISTEN)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import URL, Connection, Engine
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

Bindable = Engine | Connection | Session | sessionmaker[Session]


def engine_of(factory: sessionmaker[Session]) -> Engine:
    """The engine ``factory`` opens its sessions on (``db.open_database`` binds one)."""
    engine = factory.kw.get("bind")
    if not isinstance(engine, Engine):
        raise TypeError(f"the session factory is bound to {engine!r}, not to an engine")
    return engine


def dialect_name(bind: Bindable) -> str:
    """``"postgresql"`` or ``"sqlite"`` for an engine, connection, session or factory."""
    if isinstance(bind, sessionmaker):
        return engine_of(bind).dialect.name
    if isinstance(bind, Session):
        return bind.get_bind().dialect.name
    return bind.dialect.name


def is_postgresql(bind: Bindable) -> bool:
    return dialect_name(bind) == "postgresql"


def insert_for(bind: Bindable, table: Any) -> postgresql.Insert | sqlite.Insert:
    """An INSERT into ``table`` in the dialect of ``bind``, with its ON CONFLICT clauses."""
    return postgresql.insert(table) if is_postgresql(bind) else sqlite.insert(table)


def libpq_conninfo(url: URL) -> str:
    """``url`` as psycopg's own ``connect`` takes it: SQLAlchemy's ``+driver`` dropped,
    the password kept (a connection outside the pool, such as one that LISTENs)."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)
