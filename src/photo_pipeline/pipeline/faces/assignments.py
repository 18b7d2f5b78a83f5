"""Who placed a face (``faces.assigned``): the grouping (:data:`AUTO`) or the user
(:data:`USER`, never undone); and the unnamed people left with no face. Apart from the
grouping so that the user's decisions and the XMP regions load without NumPy."""

from __future__ import annotations

from sqlalchemy import delete, exists
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import faces, people

AUTO = "auto"
USER = "user"


def drop_empty_people(session: Session) -> None:
    """Unnamed people no face belongs to any more are gone; a named one stays."""
    session.execute(
        delete(people).where(
            people.c.name.is_(None),
            ~exists().where(faces.c.person_id == people.c.id),
        )
    )
