"""The listing's two text filters, camera and place: a part of the make or model, or of
the city, district, region or country (or the whole country code), in any case.

A filter is a few *arms*, each a test of one column's lower case (``LIKE`` a pattern,
or ``=`` a word); an asset matches when any arm does. ``matches`` is that condition on
any table with the assets' columns of those names: the assets, or a summary counted by
them (``timeline``'s), so both read the same matches. ``matching_values`` lists a
column's distinct stored values an arm accepts by a loose scan of an index led by the
column (a probe per distinct value, never a row per asset), so that a reader can take
the few matching values' ranges of an index instead of testing every row.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from sqlalchemy import ColumnElement, Table, bindparam, func, or_, text
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import assets


class Arm(NamedTuple):
    column: str  # an assets column's name
    operator: Literal["LIKE", "="]
    operand: str  # compared with the column's lower case


def camera_arms(camera: str) -> list[Arm]:
    pattern = f"%{camera.lower()}%"
    return [Arm("make", "LIKE", pattern), Arm("model", "LIKE", pattern)]


def place_arms(place: str) -> list[Arm]:
    pattern = f"%{place.lower()}%"
    return [
        *(Arm(name, "LIKE", pattern) for name in ("city", "district", "region", "country")),
        Arm("country_code", "=", place.lower()),
    ]


def matches(arms: list[Arm], table: Table = assets) -> ColumnElement[bool]:
    """Any arm's test on ``table``'s columns."""
    tests = []
    for column, operator, operand in arms:
        lowered = func.lower(table.c[column])
        tests.append(lowered.like(operand) if operator == "LIKE" else lowered == operand)
    return or_(*tests)


def camera_matches(camera: str, table: Table = assets) -> ColumnElement[bool]:
    return matches(camera_arms(camera), table)


def place_matches(place: str, table: Table = assets) -> ColumnElement[bool]:
    return matches(place_arms(place), table)


def matching_values(session: Session, table: Table, arm: Arm) -> list[str]:
    """The distinct values of ``table``'s ``arm.column`` that the arm accepts, by a
    loose scan of an index led by that column (the caller's to have one)."""
    column, name = table.c[arm.column].name, table.name  # the schema's own names
    distinct = text(
        f"WITH RECURSIVE v(x) AS ("
        f" SELECT min({column}) FROM {name}"
        f" UNION ALL SELECT (SELECT min({column}) FROM {name} WHERE {column} > v.x)"
        f" FROM v WHERE v.x IS NOT NULL)"
        f" SELECT x FROM v WHERE x IS NOT NULL AND lower(x) {arm.operator} :operand"
    ).bindparams(bindparam("operand", arm.operand))
    return [value for (value,) in session.execute(distinct)]
