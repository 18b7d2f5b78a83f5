"""The listing's two text filters, camera and place: a part of the make or model, or of
the city, district, region or country (or the whole country code), in any case. Each is
a condition on any table with the assets' columns of those names: the assets, or a
summary counted by them (``timeline``'s), so both read the same matches."""

from __future__ import annotations

from sqlalchemy import ColumnElement, Table, func, or_

from photo_pipeline.db.schema import assets


def camera_matches(text: str, table: Table = assets) -> ColumnElement[bool]:
    pattern = f"%{text.lower()}%"
    return or_(func.lower(table.c.make).like(pattern), func.lower(table.c.model).like(pattern))


def place_matches(text: str, table: Table = assets) -> ColumnElement[bool]:
    pattern = f"%{text.lower()}%"
    return or_(
        *(
            func.lower(table.c[name]).like(pattern)
            for name in ("city", "district", "region", "country")
        ),
        func.lower(table.c.country_code) == text.lower(),
    )
