"""db.dialect answers the same for every kind of bind, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select

from photo_pipeline.db.dialect import dialect_name, engine_of, insert_for, is_postgresql
from photo_pipeline.db.schema import sources


def test_every_bind_names_its_database_and_inserts_ignore_conflicts(session_factory, db_url):
    expected = "postgresql" if db_url.startswith("postgresql") else "sqlite"
    engine = engine_of(session_factory)
    with session_factory() as session, engine.connect() as connection:
        binds = (engine, connection, session, session_factory)
        assert {dialect_name(bind) for bind in binds} == {expected}
        assert is_postgresql(session) is (expected == "postgresql")
        assert is_postgresql(session_factory) is (expected == "postgresql")
        row = {"id": 7, "path": "/photos", "added_at": datetime(2026, 1, 1, tzinfo=UTC)}
        for _ in range(2):  # the second is a conflict, ignored
            session.execute(insert_for(session, sources).values(**row).on_conflict_do_nothing())
        assert session.scalars(select(sources.c.path).where(sources.c.id == 7)).all() == ["/photos"]
        session.rollback()
