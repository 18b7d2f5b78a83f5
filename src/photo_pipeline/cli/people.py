"""Faces and people: ``faces`` (find and group them), ``people list|show|name|merge|
split|move|release|not-face``. A person is named by its id or its name; one not
found exits 3, a bad name exits 2."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, TypeVar

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    CURATION_PANEL,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    JsonOption,
    WaitOption,
    app,
    console,
    err_console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_job
from photo_pipeline.cli.shown import counted, shown

people_app = typer.Typer(
    help="People: faces grouped by the faces job, named by you.", no_args_is_help=True
)
app.add_typer(people_app, name="people", rich_help_panel=CURATION_PANEL)

PersonArg = Annotated[str, typer.Argument(metavar="PERSON", help="A person's id or name.")]
FaceIds = Annotated[list[int], typer.Argument(metavar="FACE…", help="Face ids (`people show`).")]
T = TypeVar("T")


@contextmanager
def _not_found_exits() -> Iterator[None]:
    from photo_pipeline.pipeline.faces.people import FaceNotFound, PersonNotFound

    try:
        yield
    except (PersonNotFound, FaceNotFound) as exc:
        err_console.print(
            f"[red]error[/] {shown(exc.code)}: {shown(exc.detail)}", highlight=False, soft_wrap=True
        )
        sys.exit(EXIT_NOT_FOUND)


def _run(action: Callable[[], T], *, changes: bool = False) -> T:
    """Run a people command; after a decision the sidecars' MWG regions follow (an
    ``xmp_write`` is queued while the outbox holds changes)."""
    with _not_found_exits():
        done = action()
    if changes:
        from photo_pipeline.pipeline.xmp import request_write

        request_write(library().service)
    return done


def person_or_exit(ref: str) -> int:
    """The id of the person ``ref`` names, or exit 3."""
    from photo_pipeline.pipeline.faces.people import find_person

    return _run(lambda: find_person(library().sessions, ref))


@app.command()
def faces(
    regroup: Annotated[
        bool,
        typer.Option(
            "--regroup",
            help="Group again the faces the grouping placed in unnamed people (names and "
            "your decisions stay); with no new photos, only that.",
        ),
    ] = False,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Find the faces of every photo not looked at yet and group them into people.

    Faces are found in the preview. Needs dlib and its models here or on a
    `worker --types faces`."""
    from photo_pipeline.media.faces import missing_models
    from photo_pipeline.pipeline.faces.job import enqueue_faces

    lib = library()
    reason = missing_models()
    if reason is not None:
        if wait:
            err_console.print(f"[red]error[/] face_models_missing: {reason}", highlight=False)
            raise typer.Exit(EXIT_REFUSED)
        err_console.print(
            f"[yellow]note[/] this machine cannot find faces ({reason}); the job waits for "
            "`photo-pipeline worker --types faces` where dlib is installed",
            highlight=False,
        )
    if regroup:
        from photo_pipeline.pipeline.faces.grouping import reset_unnamed

        freed = reset_unnamed(lib.sessions)
        if not as_json:
            console.print(f"{counted(freed, 'faces')} back in the pool to group", highlight=False)
    job = enqueue_faces(lib.service, lib.settings.home).job
    finish_job(job, wait=wait, as_json=as_json, what="assets looked at")


@people_app.command("list")
def list_people(as_json: JsonOption = False) -> None:
    """Every person, named ones first: faces, photos, the face shown for them."""
    from photo_pipeline.pipeline.faces.people import list_people as listed

    rows = listed(library().sessions)
    if as_json:
        print_json(rows)
        return
    table = Table("id", "name", "faces", "photos", "shown face")
    for row in rows:
        table.add_row(
            str(row["id"]),
            shown(row["name"]) if row["name"] else "[dim](unnamed)[/]",
            str(row["faces"]),
            str(row["assets"]),
            str(row["cover_face_id"] or "-"),
        )
    console.print(table if rows else "no people yet (`photo-pipeline faces` finds them)")


@people_app.command("show")
def show_person(person: PersonArg, as_json: JsonOption = False) -> None:
    """A person's faces: face id, photo id and where the face is."""
    from photo_pipeline.pipeline.faces.people import person_faces

    rows = _run(lambda: person_faces(library().sessions, person))
    if as_json:
        print_json(rows)
        return
    table = Table("face", "photo", "box (left, top, width, height)", "placed by")
    for row in rows:
        box = ", ".join(f"{row[k]:.3f}" for k in ("box_left", "box_top", "box_width", "box_height"))
        table.add_row(str(row["id"]), str(row["asset_id"]), box, row["assigned"] or "-")
    console.print(table)


@people_app.command("name")
def name_person(
    person: PersonArg,
    name: Annotated[str, typer.Argument(help="The name to give.")],
    as_json: JsonOption = False,
) -> None:
    """Name (or rename) a person; its faces are confirmed as theirs."""
    from photo_pipeline.pipeline.faces.people import name_person as name_it

    done = _run(lambda: name_it(library().sessions, person, name), changes=True)
    if as_json:
        print_json(done)
    else:
        console.print(f"person {done['id']} is {shown(done['name'])}", highlight=False)


@people_app.command("merge")
def merge_people(
    into: PersonArg,
    others: Annotated[list[str], typer.Argument(metavar="OTHER…", help="People merged in.")],
    as_json: JsonOption = False,
) -> None:
    """The faces of OTHER… join PERSON; they are gone."""
    from photo_pipeline.pipeline.faces.people import merge_people as merge

    done = _run(lambda: merge(library().sessions, into, list(others)), changes=True)
    if as_json:
        print_json(done)
    else:
        console.print(
            f"person {done['id']}: {counted(done['faces_moved'], 'faces moved')} in",
            highlight=False,
        )


@people_app.command("split")
def split_person(faces: FaceIds, as_json: JsonOption = False) -> None:
    """The faces become a new person of their own."""
    from photo_pipeline.pipeline.faces.people import move_faces

    done = _run(lambda: move_faces(library().sessions, list(faces), None), changes=True)
    _moved(done, as_json)


@people_app.command("move")
def move_faces(
    faces: FaceIds,
    to: Annotated[str, typer.Option("--to", help="The person they belong to.")],
    as_json: JsonOption = False,
) -> None:
    """The faces belong to another person."""
    from photo_pipeline.pipeline.faces.people import move_faces as move

    done = _run(lambda: move(library().sessions, list(faces), to), changes=True)
    _moved(done, as_json)


def _moved(done: dict[str, int], as_json: bool) -> None:
    if as_json:
        print_json(done)
    else:
        console.print(
            f"{counted(done['faces_moved'], 'faces moved')} to person {done['id']}",
            highlight=False,
        )


@people_app.command("release")
def release_faces(faces: FaceIds, as_json: JsonOption = False) -> None:
    """The faces belong to no one (the grouping leaves them so)."""
    _release(list(faces), not_face=False, as_json=as_json)


@people_app.command("not-face")
def not_a_face(faces: FaceIds, as_json: JsonOption = False) -> None:
    """What was found is no face: it leaves its person and every listing of faces."""
    _release(list(faces), not_face=True, as_json=as_json)


def _release(face_ids: list[int], *, not_face: bool, as_json: bool) -> None:
    from photo_pipeline.pipeline.faces.people import release_faces as release

    count = _run(lambda: release(library().sessions, face_ids, not_face=not_face), changes=True)
    if as_json:
        print_json({"faces": count, "not_face": not_face})
    else:
        what = "marked no face" if not_face else "belonging to no one now"
        console.print(f"{counted(count, 'faces')} {what}", highlight=False)
