"""The Alembic migrations produce exactly the schema the models declare."""

import warnings

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from photo_pipeline.db import create_database_engine
from photo_pipeline.db.migrate import (
    alembic_head_revision,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)
from photo_pipeline.db.schema import metadata


def schema_of(engine) -> dict:
    inspector = inspect(engine)
    return {
        table: {
            "columns": [
                (c["name"], str(c["type"]), c["nullable"]) for c in inspector.get_columns(table)
            ],
            "indexes": sorted(
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in inspector.get_indexes(table)
            ),
            "uniques": sorted(u["name"] for u in inspector.get_unique_constraints(table)),
            "fks": sorted(f["name"] for f in inspector.get_foreign_keys(table)),
        }
        for table in sorted(inspector.get_table_names())
    }


def _declared_here(dialect: str):
    """What the models declare on ``dialect``: the search index is each database's own
    (migration 0024): on SQLite an FTS5 table with shadow tables the models do not
    declare, on PostgreSQL a GIN index the models declare for it alone (``ddl_if``)."""

    def include(obj, name, type_, reflected, compare_to) -> bool:
        if type_ == "table" and name.startswith("asset_search_fts"):
            return dialect != "sqlite"
        if type_ == "index" and name == "ix_asset_search_document":
            return dialect == "postgresql"
        return True

    return include


def test_migrated_schema_matches_the_models(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    include = _declared_here(engine.dialect.name)
    with engine.connect() as conn, warnings.catch_warnings():
        # SQLite has no expression index to compare the PostgreSQL-only one with.
        warnings.filterwarnings("ignore", "autogenerate skipping .*ix_asset_search_document")
        opts = {"compare_type": True, "include_object": include}
        diff = compare_metadata(MigrationContext.configure(conn, opts=opts), metadata)
    assert diff == []
    # Every declared index exists under its declared name (compare_metadata does not
    # look at partial-index predicates, so the names at least must line up).
    declared = {
        i.name
        for t in metadata.tables.values()
        for i in t.indexes
        if include(i, i.name, "index", False, None)
    }
    present = {i[0] for t in schema_of(engine).values() for i in t["indexes"]}
    assert declared <= present
    engine.dispose()


def test_downgrade_then_upgrade_ends_identical(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine)
    fresh = schema_of(engine)
    downgrade(engine, "base")
    assert [t for t in inspect(engine).get_table_names() if t != "alembic_version"] == []
    upgrade(engine)
    assert schema_of(engine) == fresh
    engine.dispose()


def test_upgrading_step_by_step_equals_a_fresh_database(backend, tmp_path):
    from tests.conftest import make_database_url

    fresh_urls = make_database_url(backend, tmp_path / "fresh")
    stepped_urls = make_database_url(backend, tmp_path / "stepped")
    (tmp_path / "fresh").mkdir()
    (tmp_path / "stepped").mkdir()
    try:
        fresh = create_database_engine(next(fresh_urls))
        stepped = create_database_engine(next(stepped_urls))
        upgrade(fresh)
        upgrade(stepped, "0001")
        upgrade(stepped)
        assert schema_of(stepped) == schema_of(fresh)
        fresh.dispose()
        stepped.dispose()
    finally:
        fresh_urls.close()
        stepped_urls.close()


def test_the_head_read_from_file_names_is_alembics():
    """Commands find the head without Alembic (from the files' revision prefixes):
    both must agree, so every migration's revision id is its file's prefix."""
    assert head_revision() == alembic_head_revision()
