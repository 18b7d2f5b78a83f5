"""``photo-pipeline search TEXT``: the library's search box on the command line."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import typer

from photo_pipeline.cli.common import JsonOption, app, library
from photo_pipeline.cli.library import print_asset_table, stream_assets_json


@app.command()
def search(
    text: Annotated[
        str,
        typer.Argument(
            help='Words of file names, camera, lens or place (prefixes: "pari" finds '
            'Paris), date words ("2019", "june 2019", "2019-06-14", "14 june 2019") '
            "and kinds (photo, video, live); all must match."
        ),
    ],
    limit: Annotated[int, typer.Option(min=1, max=1_000_000)] = 1000,
    as_json: JsonOption = False,
) -> None:
    """Catalogued photos and videos that match a search.

    In the order ``assets`` lists them (by the local time they were taken)."""
    from photo_pipeline.pipeline.library.search import parse

    where = parse(text)  # a bad search fails before the library opens
    rows = _matches(where, limit)
    if as_json:
        stream_assets_json(rows)
    else:
        print_asset_table(rows)


def _matches(where: Any, limit: int) -> Iterator[dict[str, Any]]:
    """The matching assets, a keyset page at a time, at most ``limit``."""
    from photo_pipeline.pipeline.library.browse import Browser

    browser = Browser(library().sessions)
    cursor: str | None = None
    left = limit
    while left > 0:
        rows, cursor = browser.asset_page(where, cursor=cursor, limit=min(left, 500), sort="taken")
        yield from rows
        left -= len(rows)
        if cursor is None:
            return
