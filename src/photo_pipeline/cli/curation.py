"""Curation commands: ``rate``, ``favorite``, ``reject``, ``tag …`` and ``album …``.
Each is idempotent: what an asset already has is reported unchanged, not changed
again. An asset, album or tag not found exits 3; bad input (a rating of 7, an empty
tag) exits 2."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    CURATION_PANEL,
    EXIT_NOT_FOUND,
    JsonOption,
    app,
    console,
    err_console,
    library,
    print_json,
)
from photo_pipeline.cli.shown import counted, shown

if TYPE_CHECKING:
    from photo_pipeline.pipeline.curation import Changed, CurationFilter

tag_app = typer.Typer(
    help="Tags (keywords) on photos; Places|France|Paris nests.", no_args_is_help=True
)
album_app = typer.Typer(
    help="Albums: named sets of photos (a photo may be in many).", no_args_is_help=True
)
app.add_typer(tag_app, name="tag", rich_help_panel=CURATION_PANEL)
app.add_typer(album_app, name="album", rich_help_panel=CURATION_PANEL)

AssetIds = Annotated[
    list[int], typer.Argument(metavar="ID…", help="Asset ids (`assets` lists them).")
]
OffOption = Annotated[bool, typer.Option("--off", help="Take the mark off instead.")]
T = TypeVar("T")


@contextmanager
def _not_found_exits() -> Iterator[None]:
    """An asset, album or tag that is not there: one line and exit 3 (`not found`)."""
    from photo_pipeline.pipeline.curation import AlbumNotFound, AssetNotFound, TagNotFound

    try:
        yield
    except (AssetNotFound, AlbumNotFound, TagNotFound) as exc:
        err_console.print(
            f"[red]error[/] {shown(exc.code)}: {shown(exc.detail)}", highlight=False, soft_wrap=True
        )
        sys.exit(EXIT_NOT_FOUND)


def _run(action: Callable[[], T], *, changes: bool = True) -> T:
    """Run a curation command; after a change the sidecars follow (an ``xmp_write`` is
    queued, run by `serve` or `worker`, or by `xmp write --wait`)."""
    from photo_pipeline.pipeline.xmp import request_write

    with _not_found_exits():
        done = action()
    if changes:
        request_write(library().service)
    return done


def _report(what: str, outcome: Changed, as_json: bool, **extra: Any) -> None:
    if as_json:
        print_json({**extra, **outcome.as_dict()})
        return
    line = f"{what}: {counted(len(outcome.changed), 'assets changed')}"
    if outcome.unchanged:
        line += f", {counted(len(outcome.unchanged), 'assets')} already so"
    console.print(line, highlight=False)


@app.command(rich_help_panel=CURATION_PANEL)
def rate(
    rating: Annotated[int, typer.Argument(metavar="N", help="0 to 5 stars (0: unrated).")],
    ids: AssetIds,
    as_json: JsonOption = False,
) -> None:
    """Rate photos 0-5 stars (0 takes the rating off)."""
    from photo_pipeline.pipeline.curation import set_rating

    outcome = _run(lambda: set_rating(library().sessions, ids, rating))
    _report(f"rated {rating}", outcome, as_json, rating=rating)


@app.command(rich_help_panel=CURATION_PANEL)
def favorite(ids: AssetIds, off: OffOption = False, as_json: JsonOption = False) -> None:
    """Mark photos as favourites (--off: no longer)."""
    from photo_pipeline.pipeline.curation import set_favorite

    outcome = _run(lambda: set_favorite(library().sessions, ids, not off))
    _report("not favourite" if off else "favourite", outcome, as_json, favorite=not off)


@app.command(rich_help_panel=CURATION_PANEL)
def reject(ids: AssetIds, off: OffOption = False, as_json: JsonOption = False) -> None:
    """Flag photos as rejected (--off: no longer); nothing is deleted.

    `assets --rejected` lists them, `assets --not-rejected` the others."""
    from photo_pipeline.pipeline.curation import set_rejected

    outcome = _run(lambda: set_rejected(library().sessions, ids, not off))
    _report("not rejected" if off else "rejected", outcome, as_json, rejected=not off)


@tag_app.command("add")
def tag_add(
    tag: Annotated[str, typer.Argument(help="The tag; levels joined by | nest.")],
    ids: AssetIds,
    as_json: JsonOption = False,
) -> None:
    """Put a tag on photos."""
    from photo_pipeline.pipeline.curation import add_tag, normalise_tag

    outcome = _run(lambda: add_tag(library().sessions, tag, ids))
    _report(f"tagged {shown(normalise_tag(tag)[0])}", outcome, as_json, tag=tag)


@tag_app.command("remove")
def tag_remove(
    tag: Annotated[str, typer.Argument(help="The tag (its children stay).")],
    ids: AssetIds,
    as_json: JsonOption = False,
) -> None:
    """Take a tag off photos."""
    from photo_pipeline.pipeline.curation import normalise_tag, remove_tag

    outcome = _run(lambda: remove_tag(library().sessions, tag, ids))
    _report(f"untagged {shown(normalise_tag(tag)[0])}", outcome, as_json, tag=tag)


@tag_app.command("list")
def tag_list(as_json: JsonOption = False) -> None:
    """Every tag, children under their parent, with how many photos carry it."""
    from photo_pipeline.pipeline.curation import list_tags

    rows = list_tags(library().sessions)
    if as_json:
        print_json(rows)
        return
    table = Table("tag", "photos")
    for row in rows:
        table.add_row("  " * row["depth"] + shown(row["name"]), str(row["count"]))
    console.print(table if rows else "no tags: `photo-pipeline tag add TAG ID…` adds one")


@album_app.command("create")
def album_create(
    name: Annotated[str, typer.Argument(help="The album's name (unique, whatever the case).")],
    as_json: JsonOption = False,
) -> None:
    """Make an album (an album of that name already there is kept as it is)."""
    from photo_pipeline.pipeline.curation import create_album

    made, created = create_album(library().sessions, name)
    if as_json:
        print_json({**made, "created": created})
        return
    verb = "created" if created else "already there:"
    console.print(f"{verb} album {made['id']} {shown(made['name'])}", highlight=False)


@album_app.command("add")
def album_add(
    album: Annotated[str, typer.Argument(metavar="ALBUM", help="Its name or id.")],
    ids: AssetIds,
    as_json: JsonOption = False,
) -> None:
    """Put photos in an album."""
    from photo_pipeline.pipeline.curation import add_to_album

    summary, outcome = _run(lambda: add_to_album(library().sessions, album, ids))
    _report(f"album {shown(summary['name'])}", outcome, as_json, album=summary)


@album_app.command("remove")
def album_remove(
    album: Annotated[str, typer.Argument(metavar="ALBUM", help="Its name or id.")],
    ids: Annotated[
        list[int] | None,
        typer.Argument(metavar="[ID…]", help="Photos to take out; none: remove the album."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Take photos out of an album, or with no ids remove the album itself.

    The photos stay in the catalogue either way."""
    from photo_pipeline.pipeline.curation import delete_album, remove_from_album

    if ids:
        summary, outcome = _run(lambda: remove_from_album(library().sessions, album, ids))
        _report(f"album {shown(summary['name'])}", outcome, as_json, album=summary)
        return
    gone = _run(lambda: delete_album(library().sessions, album))
    if as_json:
        print_json({"removed": gone})
        return
    console.print(
        f"removed album {gone['id']} {shown(gone['name'])} "
        f"({counted(gone['count'], 'photos')} stay in the library)",
        highlight=False,
    )


@album_app.command("rename")
def album_rename(
    album: Annotated[str, typer.Argument(metavar="ALBUM", help="Its name or id.")],
    name: Annotated[str, typer.Argument(help="The new name.")],
    as_json: JsonOption = False,
) -> None:
    """Rename an album."""
    from photo_pipeline.pipeline.curation import update_album

    summary = _run(lambda: update_album(library().sessions, album, name=name))
    _show_album(summary, as_json)


@album_app.command("cover")
def album_cover(
    album: Annotated[str, typer.Argument(metavar="ALBUM", help="Its name or id.")],
    asset: Annotated[int, typer.Argument(metavar="ID", help="A photo in the album.")],
    as_json: JsonOption = False,
) -> None:
    """Choose an album's cover (otherwise the first photo added)."""
    from photo_pipeline.pipeline.curation import update_album

    summary = _run(lambda: update_album(library().sessions, album, cover_asset_id=asset))
    _show_album(summary, as_json)


@album_app.command("list")
def album_list(as_json: JsonOption = False) -> None:
    """Every album: photos, dates (of its first and last photo), cover."""
    from photo_pipeline.pipeline.curation import list_albums

    rows = list_albums(library().sessions)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "album", "photos", "from", "to", "cover")
    for row in rows:
        table.add_row(
            str(row["id"]),
            shown(row["name"]),
            str(row["count"]),
            _day(row["taken_from"]),
            _day(row["taken_to"]),
            str(row["cover_asset_id"] or ""),
        )
    console.print(table if rows else "no albums: `photo-pipeline album create NAME` makes one")


@album_app.command("show")
def album_show(
    album: Annotated[str, typer.Argument(metavar="ALBUM", help="Its name or id.")],
    limit: Annotated[int, typer.Option(min=1, max=1_000_000)] = 1000,
    as_json: JsonOption = False,
) -> None:
    """An album and its photos, by the local time they were taken."""
    from photo_pipeline.pipeline.curation import CurationFilter
    from photo_pipeline.pipeline.curation import album as album_of
    from photo_pipeline.pipeline.library.catalog import Catalog

    summary = _run(lambda: album_of(library().sessions, album), changes=False)
    listed = Catalog(library().sessions).assets(
        curation=CurationFilter(album=summary["id"]), limit=limit, sort="taken"
    )
    if as_json:
        print_json({**summary, "assets": listed})
        return
    _show_album(summary, False)
    table = Table("name", "taken", "marks", "id")
    for row in listed:
        table.add_row(
            shown(row["name"] or ""),
            shown(row["taken_local"].replace("T", " ")),
            marks(row),
            str(row["id"]),
        )
    if listed:
        console.print(table)


def _show_album(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    span = ""
    if summary["taken_from"]:
        span = f", {_day(summary['taken_from'])} to {_day(summary['taken_to'])}"
    console.print(
        f"album {summary['id']} {shown(summary['name'])}: "
        f"{counted(summary['count'], 'photos')}{span}",
        highlight=False,
    )


def _day(local: str | None) -> str:
    return local[:10] if local else ""


def marks(row: dict[str, Any]) -> str:
    """A row's curation as the tables show it: ``★★★★ ♥``, ``rejected``."""
    shown_marks = "★" * row["rating"] + (" ♥" if row["favorite"] else "")
    return str(shown_marks + (" rejected" if row["rejected"] else "")).strip()


def curation_filter(
    album: str | None,
    tag: str | None,
    rating: str | None,
    favorite: bool | None,
    rejected: bool | None,
) -> CurationFilter | None:
    """The ``assets`` options as a listing filter (an album by name or id)."""
    if album is None and tag is None and rating is None and favorite is None and rejected is None:
        return None
    from photo_pipeline.pipeline.curation import CurationFilter, find_album, parse_rating_range

    return CurationFilter(
        album=_run(lambda: find_album(library().sessions, album), changes=False)
        if album is not None
        else None,
        tag=tag,
        rating=parse_rating_range(rating) if rating is not None else None,
        favorite=favorite,
        rejected=rejected,
    )
