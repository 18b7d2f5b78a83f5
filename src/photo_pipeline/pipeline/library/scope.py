"""What part of the library a curation job covers: some registered sources, capture
dates from ``since`` to ``until`` (local calendar days, both included). ``organize``
and ``dedupe`` take one; no scope is the whole library.

A source is named by its id or by its folder, which must be a registered source
itself (``source_not_registered`` otherwise: a folder inside one is not a source).
Dates are the local capture dates the library shows (``assets.taken_local``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import sources
from photo_pipeline.errors import PhotoPipelineError


class ScopeError(PhotoPipelineError):
    """A scope that names no registered source (``source_not_registered``) or no
    date (``invalid_date``), or dates the wrong way round (``invalid_date_range``)."""

    code = "invalid_scope"
    status = 422


@dataclass(frozen=True)
class Scope:
    """Source ids (empty: every source) and an inclusive range of local dates."""

    source_ids: frozenset[int] = frozenset()
    since: date | None = None
    until: date | None = None

    @property
    def everything(self) -> bool:
        return not self.source_ids and self.since is None and self.until is None

    def takes(self, source_id: int, taken_local: object) -> bool:
        """Whether a file of ``source_id`` taken at ``taken_local`` is in scope."""
        if self.source_ids and source_id not in self.source_ids:
            return False
        if self.since is None and self.until is None:
            return True
        day = _day_of(taken_local)
        if day is None:
            return False
        return (self.since is None or day >= self.since) and (
            self.until is None or day <= self.until
        )

    def as_params(self) -> dict[str, Any]:
        """The job parameters that carry it (none for the whole library, so that the
        parameters of a request without a scope stay what they were)."""
        params: dict[str, Any] = {}
        if self.source_ids:
            params["sources"] = sorted(self.source_ids)
        if self.since is not None:
            params["since"] = self.since.isoformat()
        if self.until is not None:
            params["until"] = self.until.isoformat()
        return params

    @classmethod
    def of_params(cls, params: Mapping[str, Any]) -> Scope:
        """The scope a job's parameters carry (``as_params``)."""
        since, until = params.get("since"), params.get("until")
        return cls(
            frozenset(int(i) for i in params.get("sources", ())),
            date.fromisoformat(since) if since else None,
            date.fromisoformat(until) if until else None,
        )


def _day_of(taken_local: object) -> date | None:
    if isinstance(taken_local, datetime):
        return taken_local.date()
    if isinstance(taken_local, str) and taken_local:
        try:
            return datetime.fromisoformat(taken_local).date()
        except ValueError:
            return None
    return None


def parse_day(text: str | date | None, option: str) -> date | None:
    """A ``YYYY-MM-DD`` day (``--since``/``--until``), refused as ``invalid_date``."""
    if text is None or isinstance(text, date):
        return text
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ScopeError(
            "invalid_date", f"{option} takes a date as YYYY-MM-DD, got {text!r}"
        ) from None


def registered_sources(session_factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    """Every registered source a scope can name: its id and folder, by folder."""
    with read_session(session_factory) as session:
        rows = session.execute(select(sources.c.id, sources.c.path).order_by(sources.c.path))
        return [{"id": row.id, "path": row.path} for row in rows]


def resolve_scope(
    session_factory: sessionmaker[Session],
    named_sources: Iterable[str | int] = (),
    since: str | date | None = None,
    until: str | date | None = None,
) -> Scope:
    """The scope of a request: each source by id or folder (a registered source, else
    ``source_not_registered``), and the days checked (``since`` not after ``until``)."""
    with read_session(session_factory) as session:
        registered = {row.id: row.path for row in session.execute(select(sources))}
    by_path = {path: source_id for source_id, path in registered.items()}
    ids: set[int] = set()
    for named in named_sources:
        text = str(named).strip()
        if text.isascii() and text.isdigit() and int(text) in registered:
            ids.add(int(text))
            continue
        real = os.path.realpath(os.path.expanduser(text)) if text else ""
        if real in by_path:
            ids.add(by_path[real])
            continue
        listed = ", ".join(f"{i} {p}" for i, p in sorted(registered.items())) or "none yet"
        raise ScopeError(
            "source_not_registered",
            f"{text!r} is not a registered source (by id or folder; registered: {listed}); "
            "`photo-pipeline sources` lists them, `import` adds one",
        )
    first, last = parse_day(since, "--since"), parse_day(until, "--until")
    if first is not None and last is not None and first > last:
        raise ScopeError("invalid_date_range", f"--since {first} is after --until {last}")
    return Scope(frozenset(ids), first, last)
