"""Alembic environment: runs on the connection handed over by ``migrate.upgrade``."""

from __future__ import annotations

from alembic import context

from photo_pipeline.db.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through photo_pipeline.db.upgrade(), not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
