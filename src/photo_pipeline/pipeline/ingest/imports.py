"""Importing folders: register them as sources and queue the jobs that catalogue them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from photo_pipeline.config import Settings
from photo_pipeline.db.text import is_text, storable
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import Enqueued, JobService, JobSnapshot, LockHeld
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media import DEFAULT_MAX_PIXELS
from photo_pipeline.pipeline.files import roots as roots_module
from photo_pipeline.pipeline.files import spots
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.home import of_the_home

# The job types an import queues (scan.JOB_TYPE, render.JOB_TYPE, similar.JOB_TYPE),
# named here so that a wait can start its worker before those modules (and the
# decoders they load) are imported.
IMPORT_CHAIN = ("scan", "render", "similar")


class NotAFolder(PhotoPipelineError):
    code = "not_a_folder"
    status = 422


class PathNotUtf8(PhotoPipelineError):
    """A registered folder's path is stored as text: its own name must be UTF-8 (the
    names below it need not be)."""

    code = "path_not_utf8"
    status = 422


class FolderChanged(PhotoPipelineError):
    """A folder to register changed since it was resolved (a link swapped in)."""

    code = "root_changed"
    status = 409


class InsideLibraryHome(PhotoPipelineError):
    """The library's own files (renditions, quarantined copies) are no originals."""

    code = "inside_library_home"
    status = 422


def import_folders(
    service: JobService,
    catalog: Catalog,
    folders: list[Path],
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    follow_up: Settings | None = None,
    idempotency_key: str | None = None,
    reread: bool = False,
    watch: bool = False,
) -> list[JobSnapshot]:
    """Register ``folders`` and queue one scan per folder; a folder whose scan is
    already queued or running gets that job back instead of a second one.

    With ``follow_up`` (the library's settings), a ``render`` job waits for those
    scans and a ``similar`` job for the render; they are returned after the scans. When
    every scan was joined, so are the render and similar already queued after them.
    With ``idempotency_key``, repeating the same import returns the same jobs. With
    ``reread``, the scans read every file again and refresh its asset (``scan``). With
    ``watch``, the sources are watched from now on (``pipeline.watch``)."""
    return [
        queued.job
        for queued in _import(
            service, catalog, folders, max_pixels, follow_up, idempotency_key, reread, (), watch
        )
    ]


def start_import(
    service: JobService,
    catalog: Catalog,
    folders: list[Path],
    settings: Settings,
    *,
    idempotency_key: str | None = None,
    reread: bool = False,
    roots: Sequence[Path | str] = (),
    watch: bool = False,
) -> Enqueued:
    """The whole import chain (scan → render → similar) for one request: returns its
    last job, and whether this call created it (False: an idempotent replay).
    ``roots``: the allowed roots the request was checked against (the API's); each
    folder registered must still lie inside them as it is opened. ``watch``: the
    sources are watched from now on."""
    return _import(
        service,
        catalog,
        folders,
        settings.max_pixels,
        settings,
        idempotency_key,
        reread,
        roots,
        watch,
    )[-1]


def _scan_or_its_holder(service: JobService, request: dict[str, Any]) -> Enqueued:
    """The scan, or the active scan of the source that holds its lock: any scan of the
    folder joins, but one that reads only what changed is no ``reread``."""

    def joins(held: JobSnapshot) -> bool:
        return not request["params"].get("reread") or bool(held["params"].get("reread"))

    return service.submit_or_join(**request, joins=joins)


def _check_registrable(folder: Path, roots: Sequence[Path | str]) -> None:
    """A folder is registered as the real path it was resolved to, never through a
    link: it must open now with no link on its path (a link swapped in since, and the
    folder it leads to, are refused) and lie inside ``roots`` when the request was
    checked against them."""
    try:
        os.close(spots.open_root(str(folder)))
    except ItemError as exc:
        raise FolderChanged(exc.code, exc.message) from None
    if roots:
        roots_module.real_path_inside(folder, [str(root) for root in roots], "import")


def folders_to_scan(catalog: Catalog, folders: list[Path]) -> list[Path]:
    """The folders to register and scan: a folder inside a registered source is that
    source's (the innermost one) and scanning it scans that source, so that no file is
    ever catalogued twice; each folder once, in order."""
    registered = [Path(path) for path in catalog.source_paths()]
    chosen: dict[Path, None] = {}
    for folder in folders:
        resolved = folder.resolve()
        holders = [source for source in registered if resolved.is_relative_to(source)]
        chosen[max(holders, key=lambda s: len(s.parts)) if holders else resolved] = None
    return list(chosen)


def _faces_after(
    service: JobService, settings: Settings, render_id: str, key: str | None
) -> Enqueued | None:
    """The faces job after the render, when the library wants one (``queued_on_import``);
    the similar job stays the chain's last, so that waiting for an import does not wait
    for a faces worker on another machine."""
    from photo_pipeline.pipeline.faces.job import enqueue_faces, queued_on_import

    if not queued_on_import(settings.faces):
        return None
    return enqueue_faces(
        service,
        settings.home,
        prerequisites=[render_id],
        idempotency_key=None if key is None else f"{key}#faces",
        join_equivalent=True,
    )


def _import(
    service: JobService,
    catalog: Catalog,
    folders: list[Path],
    max_pixels: int,
    follow_up: Settings | None,
    key: str | None,
    reread: bool,
    roots: Sequence[Path | str] = (),
    watch: bool = False,
) -> list[Enqueued]:
    # Here, not at the top: the job modules load the decoders, and commands that
    # merely import this module (every CLI command, for --help) must start fast.
    from photo_pipeline.pipeline.ingest import scan
    from photo_pipeline.pipeline.near import similar
    from photo_pipeline.pipeline.renditions import render

    home = None if follow_up is None else follow_up.home.resolve()
    for folder in folders:
        if not folder.is_dir():
            raise NotAFolder("not_a_folder", f"{folder} is not a folder")
        if home is not None and of_the_home(folder.resolve(), home):
            raise InsideLibraryHome(
                "inside_library_home",
                f"{folder} is the library home {home} or holds its own files (renditions, "
                "quarantined copies), not photos to import",
            )
    folders = folders_to_scan(catalog, folders)
    for folder in folders:
        if not is_text(str(folder)):
            raise PathNotUtf8(
                "path_not_utf8",
                f"{storable(str(folder))}: a folder whose path is not UTF-8 cannot be "
                "registered; import the folder that holds it (names below a folder may be "
                "anything)",
            )
        _check_registrable(folder, roots)
    # Every job of the chain gets its own key, derived from the request's.
    scan_keys = [None if key is None else f"{key}#scan-{n}" for n in range(len(folders))]
    # With a render to follow, the scans render new photos themselves (one decode each).
    renders_with = (
        {}
        if follow_up is None
        else {
            "render": scan.render_params(follow_up.home, render.render_settings(follow_up)),
            "video_time_limit": follow_up.video_time_limit,
        }
    )
    registered = [catalog.add_source(folder, resolved=True) for folder in folders]
    if watch:
        from photo_pipeline.pipeline.ingest.sources import set_watch

        set_watch(service, [source["id"] for source in registered], True)
    scans = [
        {
            "job_type": scan.JOB_TYPE,
            "lock": scan.lock_for(source["id"]),
            "idempotency_key": scan_key,
            "params": {
                "sources": [{"id": source["id"], "path": source["path"]}],
                "max_pixels": max_pixels,
                **renders_with,
                **({"reread": True} if reread else {}),  # a plain import's request as before
            },
        }
        for source, scan_key in zip(registered, scan_keys, strict=True)
    ]
    try:
        # Every folder's scan in one transaction.
        jobs = service.submit_many(scans)
    except LockHeld:
        # A folder being scanned already: that scan joins the chain instead.
        jobs = [_scan_or_its_holder(service, request) for request in scans]
    if follow_up is not None:
        # A scan joined (an import run again while its scan waits or runs) joins the
        # render and similar queued after it as well: one chain, not one per import.
        renders = render.enqueue_render(
            service,
            follow_up.home,
            render.render_settings(follow_up),
            prerequisites=[queued.job["id"] for queued in jobs],
            idempotency_key=None if key is None else f"{key}#render",
            join_equivalent=True,
        )
        jobs.append(renders)
        faces = _faces_after(service, follow_up, renders.job["id"], key)
        if faces is not None:
            jobs.append(faces)
        jobs.append(
            similar.enqueue_similar(
                service,
                follow_up.home,
                max_distance=follow_up.near_distance,
                prerequisites=[renders.job["id"]],
                idempotency_key=key,
                join_equivalent=True,
            )
        )
    return jobs
