"""Counting the SQL statements a coordinator sends, by their first word (SELECT,
UPDATE...), for the tests that bound its round trips."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from photo_pipeline.jobs import JobService


@contextmanager
def statements(service: JobService) -> Iterator[Counter[str]]:
    """Count the SQL statements ``service`` sends (BEGIN/COMMIT are not statements
    on PostgreSQL, where the driver sends them; in autocommit it sends none)."""
    engine = service.session_factory.kw["bind"]
    seen: Counter[str] = Counter()

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen[statement.split(None, 1)[0].upper()] += 1

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)
