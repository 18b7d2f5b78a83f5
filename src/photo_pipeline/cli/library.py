"""Commands over the photo library: import, sources, assets, duplicates."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Iterator
from datetime import datetime
from enum import StrEnum
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    JsonOption,
    WaitOption,
    app,
    console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import early_wait, finish_jobs, summarise
from photo_pipeline.cli.shown import counted, shown
from photo_pipeline.pipeline.files import paths

if TYPE_CHECKING:
    from photo_pipeline.pipeline.library.catalog import Catalog


def _catalog() -> Catalog:
    from photo_pipeline.pipeline.library.catalog import Catalog

    return Catalog(library().sessions)


@app.command("import")
def import_(
    folders: Annotated[list[Path], typer.Argument(help="Folders of photos.")],
    reread: Annotated[
        bool,
        typer.Option(
            "--reread",
            help="Read every file again, not only new and changed ones, and refresh each "
            "asset's dates, places and camera details from what is read now (after an "
            "upgrade that reads more). Dates you shifted stay.",
        ),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Watch the folders from now on: `serve` (or `watch`) catalogues what "
            "arrives in them once each file has settled.",
        ),
    ] = False,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Register folders and catalogue their photos: scan, render, similar.

    Scan hashes and reads metadata (exact duplicates), render makes thumbnails and
    previews, similar groups near duplicates."""
    from photo_pipeline.pipeline.ingest.imports import IMPORT_CHAIN, import_folders

    lib = library()
    with early_wait(wait, set(IMPORT_CHAIN)) as ready:
        jobs = import_folders(
            lib.service,
            _catalog(),
            folders,
            max_pixels=lib.settings.max_pixels,
            follow_up=lib.settings,  # render and similar after the scans
            reread=reread,
            watch=watch,
        )
    finish_jobs(
        jobs,
        wait=wait,
        as_json=as_json,
        what="items done",
        show=lambda final: _show_import(final, as_json),
        ready=ready,
    )


def _show_import(jobs: list[dict[str, Any]], as_json: bool) -> None:
    """The jobs, and beside each scan how many files of its folders are not media
    (``ignored``: never failures)."""
    scans = [job for job in jobs if job["job_type"] == "scan"]
    sources = [source["id"] for job in scans for source in job["params"].get("sources", [])]
    ignored = _catalog().ignored_counts(sources)
    counts = {
        job["id"]: sum(ignored.get(s["id"], 0) for s in job["params"].get("sources", []))
        for job in scans
    }
    if as_json:
        print_json([{**job, "ignored": counts[job["id"]]} if job in scans else job for job in jobs])
        return
    summarise(jobs, "items done")
    for job in scans:
        if counts[job["id"]]:
            console.print(
                f"scan job {job['id']}: {counted(counts[job['id']], 'files ignored')} (not media)",
                highlight=False,
            )


class AssetType(StrEnum):
    photo = "photo"
    video = "video"
    live = "live"


class AssetSort(StrEnum):
    taken = "taken"
    taken_utc = "taken-utc"
    added = "added"


# How far each date can be trusted (media.capture_time.CONFIDENCES), as the table says it.
_DATED_BY = {
    "user": "set by you",
    "camera": "camera",
    "inferred": "GPS/zone",
    "filename": "file name",
    "file_time": "[yellow]undated[/]",
}


@app.command()
def assets(
    since: Annotated[
        datetime | None,
        typer.Option(
            formats=["%Y-%m-%d"], help="Taken on or after this date (YYYY-MM-DD, local time)."
        ),
    ] = None,
    camera: Annotated[str | None, typer.Option(help="Make or model contains this.")] = None,
    place: Annotated[
        str | None,
        typer.Option(help="Country code (FR), or text in the country, region or city name."),
    ] = None,
    asset_type: Annotated[
        AssetType | None,
        typer.Option("--type", help="Live: Live Photos and Motion Photos."),
    ] = None,
    sort: Annotated[
        AssetSort,
        typer.Option(
            help="taken: by the local time shown (the camera's clock); taken-utc: by the "
            "instant, zones interleaved; added: newest in the catalogue first."
        ),
    ] = AssetSort.taken,
    album: Annotated[str | None, typer.Option(help="In this album (name or id).")] = None,
    tag: Annotated[
        str | None, typer.Option(help="Carrying this tag or one below it (Places|France).")
    ] = None,
    rating: Annotated[
        str | None, typer.Option(help="Rated: 4, >=4, >3, <=2, <2, 2-4 (0: unrated).")
    ] = None,
    favorite: Annotated[
        bool | None, typer.Option("--favorite/--not-favorite", help="Favourites, or the others.")
    ] = None,
    rejected: Annotated[
        bool | None, typer.Option("--rejected/--not-rejected", help="Rejected, or the others.")
    ] = None,
    person: Annotated[
        str | None, typer.Option(help="With a face of this person (name or id, `people`).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1_000_000)] = 1000,
    as_json: JsonOption = False,
) -> None:
    """Catalogued photos and videos, oldest first by the local time they were taken.

    A Live Photo is one asset. The README says what each column means."""
    from photo_pipeline.cli.curation import curation_filter

    kind = asset_type.value if asset_type is not None else None
    day = since.date().isoformat() if since is not None else None
    where: dict[str, Any] = {
        "since": day,
        "camera": camera,
        "place": place,
        "type": kind,
        "sort": sort.value,
        "curation": curation_filter(album, tag, rating, favorite, rejected),
        "person": None if person is None else _person_id(person),
    }
    if as_json:
        listing = _catalog().iter_assets(**where, limit=limit)
        _stream_json(_with_media_fields(row) for row in listing)
        return
    print_asset_table(_catalog().assets(**where, limit=limit))


def _person_id(ref: str) -> int:
    from photo_pipeline.cli.people import person_or_exit

    return person_or_exit(ref)


def print_asset_table(listed: Iterable[dict[str, Any]]) -> None:
    """The table ``assets`` prints (``search`` too), of listing rows."""
    from photo_pipeline.cli.curation import marks

    rows = [_with_media_fields(row) for row in listed]
    table = Table("name", "taken", "dated by", "place", "camera", "kind", "files", "marks", "id")
    for row in rows:
        table.add_row(
            shown(row["name"] or ""),
            shown(row["taken_local"].replace("T", " ")),
            _DATED_BY.get(row["taken_confidence"], shown(row["taken_confidence"])),
            shown(row["place"] or ""),
            shown(row["camera"] or ""),
            _kind_label(row),
            str(row["files"]),
            marks(row),
            str(row["id"]),
        )
    console.print(table if rows else "no photos")


@app.command("sources")
def sources_(
    remove: Annotated[
        int | None,
        typer.Option(
            "--remove",
            metavar="ID",
            help="Forget this source: its file rows and the assets no other file holds. "
            "Its folder and photos stay on disk; importing it again brings them back.",
        ),
    ] = None,
    watch: Annotated[
        int | None,
        typer.Option("--watch", metavar="ID", help="Watch this source (see `import --watch`)."),
    ] = None,
    unwatch: Annotated[
        int | None,
        typer.Option("--unwatch", metavar="ID", help="Stop watching this source."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Registered source folders: id, path, files, last scan, watched by whom."""
    from photo_pipeline.pipeline.ingest.sources import list_sources, remove_source, set_watch

    lib = library()
    for source_id, watched in ((watch, True), (unwatch, False)):
        if source_id is not None:
            (row,) = set_watch(lib.service, [source_id], watched)
            if as_json:
                print_json(row)
            else:
                verb = "watching" if watched else "no longer watching"
                console.print(f"{verb} source {row['id']} {shown(row['path'])}", highlight=False)
    if watch is not None or unwatch is not None:
        return
    if remove is not None:
        gone = remove_source(lib.service, remove)
        if as_json:
            print_json(gone)
            return
        console.print(
            f"forgot source {gone['id']} {shown(gone['path'])}: "
            f"{counted(gone['files_removed'], 'file rows')}, "
            f"{counted(gone['assets_removed'], 'assets')} (nothing on disk was touched)",
            highlight=False,
        )
        return
    rows = list_sources(lib.service, lib.settings.allowed_roots)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "path", "files", "scanned", "added", "watch")
    for row in rows:
        flag = "  [red](outside the allowed roots)[/]" if row["outside_allowed_roots"] else ""
        table.add_row(
            str(row["id"]),
            shown(row["path"]) + flag,
            str(row["files"]),
            shown(row["scanned_at"]) if row["scanned_at"] else "never",
            shown(row["added_at"]),
            _watch_state(row),
        )
    console.print(table if rows else "no sources: `photo-pipeline import DIR` registers one")


def _watch_state(row: dict[str, Any]) -> str:
    """no; yes (nobody watching it now); or the live watcher's host and mode."""
    watcher = row.get("watcher")
    if not row.get("watch"):
        return "no"
    if watcher is None:
        return "yes (no watcher running)"
    return shown(f"{watcher['mode']} on {watcher['host']}")


def _with_media_fields(row: dict[str, Any]) -> dict[str, Any]:
    """An asset row with ``duration`` (seconds) and ``live`` as the API names them."""
    return {
        **row,
        "duration": row.get("duration_seconds"),
        "live": row.get("motion_asset_id") is not None or bool(row.get("is_motion_photo")),
    }


def _kind_label(row: dict[str, Any]) -> str:
    if row.get("kind") == "video":
        seconds = round(row.get("duration") or 0)
        return f"video {seconds // 60}:{seconds % 60:02d}"
    return "live" if row.get("live") else "photo"


@app.command()
def duplicates(
    near: Annotated[
        bool,
        typer.Option(
            "--near", help="Near duplicates (found by `similar`), best to keep marked first."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Exact duplicates: the same content at several paths (--near: similar photos)."""
    if near:
        _near_duplicates(as_json)
        return
    from photo_pipeline.pipeline.dedupe.plan import annotate_exact_groups

    # The suggested keeper (what `dedupe` would keep) first, with why.
    sessions = library().sessions
    pages = _catalog().iter_duplicates()
    if as_json:
        _stream_json(
            group for page in _pages(pages) for group in annotate_exact_groups(sessions, page)
        )
        return
    groups = [group for page in _pages(pages) for group in annotate_exact_groups(sessions, page)]
    if not groups:
        console.print("no exact duplicates")
    for group in groups:
        console.print(f"[bold]{group['content_hash'][:12]}[/] {group['size']} bytes")
        for file in group["files"]:
            mark = f"keep ({shown(group['keeper_reason'])})" if file.get("keep") else "    "
            console.print(
                f"  {mark} {shown(file['source'])}/{shown(file['path'])}",
                highlight=False,
                soft_wrap=True,
            )


def _near_duplicates(as_json: bool) -> None:
    from photo_pipeline.pipeline.near.similar import iter_near_groups, near_duplicate_groups

    if as_json:
        _stream_json(iter_near_groups(library().sessions))
        return
    groups = near_duplicate_groups(library().sessions)
    if not groups:
        console.print("no near duplicates (`photo-pipeline similar` looks for them)")
    for number, group in enumerate(groups, 1):
        console.print(f"[bold]group {number}[/] {counted(len(group['assets']), 'photos')}")
        for asset in group["assets"]:
            mark = "keep" if asset["keep"] else f"d={asset['distance']:<2}"
            file = asset["files"][0]
            console.print(
                f"  {mark} {asset['width']}x{asset['height']} {shown(asset['taken_local'])} "
                f"{shown(file['source'])}/{shown(paths.display(file['path']))}",
                highlight=False,
                soft_wrap=True,
            )


def stream_assets_json(rows: Iterable[dict[str, Any]]) -> None:
    """Listing rows as ``assets --json`` writes them, one at a time."""
    _stream_json(_with_media_fields(row) for row in rows)


def _stream_json(rows: Iterable[Any]) -> None:
    """A JSON array written one element at a time: nothing is held but the current
    page of rows (the same document ``print_json`` would print)."""
    first = True
    for row in rows:
        text = json.dumps(row, default=str, indent=2)
        typer.echo(("[\n" if first else ",\n") + textwrap.indent(text, "  "), nl=False)
        first = False
    typer.echo("[]" if first else "\n]")


def _pages(groups: Iterator[dict[str, Any]], size: int = 500) -> Iterator[list[dict[str, Any]]]:
    """Consecutive lists of ``size`` groups, annotated a list at a time (an
    annotation reads what its groups' keepers depend on)."""
    while page := list(islice(groups, size)):
        yield page


@app.command()
def sample(
    folder: Annotated[Path, typer.Argument(help="Where to write the sample photos.")],
    count: Annotated[int, typer.Option(min=1, max=10_000)] = 60,
    as_json: JsonOption = False,
) -> None:
    """Write a generated sample set of photos (with duplicates and a broken file)."""
    from photo_pipeline.sample import write_sample

    written = write_sample(folder, count)
    if as_json:
        print_json({"folder": str(folder), "photos": [str(path) for path in written]})
    else:
        console.print(f"wrote {len(written)} photos (+2 copies, 1 broken file) to {shown(folder)}")
