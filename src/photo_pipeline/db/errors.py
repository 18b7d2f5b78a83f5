"""Driver errors translated in one place, per dialect."""

from __future__ import annotations

from sqlalchemy import Index, UniqueConstraint
from sqlalchemy.exc import IntegrityError

from photo_pipeline.db.schema import metadata

_SQLITE_UNIQUE = "UNIQUE constraint failed: "


def _unique_names_by_columns() -> dict[str, str]:
    names: dict[str, str] = {}
    for table in metadata.tables.values():
        uniques = [c for c in table.constraints if isinstance(c, UniqueConstraint)]
        uniques += [i for i in table.indexes if isinstance(i, Index) and i.unique]
        for unique in uniques:
            columns = ", ".join(f"{table.name}.{c.name}" for c in unique.columns)
            names[columns] = str(unique.name)
    return names


_BY_COLUMNS = _unique_names_by_columns()


def unique_violation(exc: IntegrityError) -> str | None:
    """The name of the unique constraint or index ``exc`` violated, else None.

    PostgreSQL reports it (SQLSTATE 23505); SQLite names the columns instead.
    """
    orig = exc.orig
    if getattr(orig, "sqlstate", None) == "23505":
        return orig.diag.constraint_name  # type: ignore[union-attr]
    message = str(orig)
    if message.startswith(_SQLITE_UNIQUE):
        return _BY_COLUMNS.get(message[len(_SQLITE_UNIQUE) :].strip())
    return None
