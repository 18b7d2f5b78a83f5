"""The photo job types ``POST /api/jobs`` starts, each a thin call into the pipeline."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.job_types import (
    confined_path,
    job_type,
    require_inside_allowed_roots,
    require_job_paths_inside_roots,
    require_utf8_path,
)
from photo_pipeline.api.models import JOB_ID, PLAIN_TEXT
from photo_pipeline.api.organize import TEMPLATE_HELP, Scoped
from photo_pipeline.jobs import Enqueued
from photo_pipeline.pipeline import dedupe, organize, timeshift, verify, xmp
from photo_pipeline.pipeline.ingest import places
from photo_pipeline.pipeline.ingest.imports import folders_to_scan, start_import
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.near.similar import enqueue_similar
from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImportParams(Params):
    paths: list[str] = Field(min_length=1, max_length=50, description="Absolute folders.")
    reread: bool = Field(
        default=False,
        description="Read every file again, not only new and changed ones, and refresh "
        "each asset from what is read now (dates you shifted stay).",
    )
    watch: bool = Field(
        default=False,
        description="Watch the folders from now on: what arrives in them is catalogued "
        "once it has settled (a `serve` or `watch` process watches them).",
    )


class RenderParams(Params):
    force: bool = False


class SimilarParams(Params):
    max_distance: int | None = Field(default=None, ge=0, le=32)


class OrganizeParams(Scoped):
    dest: str = Field(min_length=1, max_length=4096)
    template: str = Field(
        default=organize.DEFAULT_TEMPLATE,
        min_length=1,
        max_length=1000,
        pattern=PLAIN_TEXT,
        description=TEMPLATE_HELP,
    )
    move: bool = False
    keep_duplicates: bool = False


class UndoParams(Params):
    job_id: str = Field(pattern=JOB_ID, description="The job to undo.")


class TimeshiftParams(Params):
    """Which assets (``camera`` or ``asset_ids``) and what change (``by`` or ``set``)."""

    camera: str | None = Field(default=None, min_length=1, max_length=200, pattern=PLAIN_TEXT)
    asset_ids: list[Annotated[int, Field(ge=1, le=2**62)]] | None = Field(
        default=None,
        min_length=1,
        max_length=timeshift.MAX_ASSET_IDS,
        description="These assets (with their Live Photo motion parts) instead of a camera.",
    )
    by: str | None = Field(
        default=None, min_length=1, max_length=40, pattern=PLAIN_TEXT, examples=["+2h15m"]
    )
    set: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        pattern=PLAIN_TEXT,
        examples=["2019-06-14T10:00"],
        description="Give every asset this local date and time instead of shifting by "
        "``by``: the date becomes the user's (taken_source user, trusted).",
    )
    since: str | None = Field(default=None, max_length=40, pattern=PLAIN_TEXT)
    until: str | None = Field(default=None, max_length=40, pattern=PLAIN_TEXT)


class NoParams(Params):
    pass


@job_type("import", ImportParams, "Scan folders, then render, then find near duplicates.")
def start_import_job(lib: Library, params: ImportParams, key: str | None) -> Enqueued:
    folders = [confined_path(lib, raw, f"params.paths[{n}]") for n, raw in enumerate(params.paths)]
    # A folder inside a registered one scans that one, which must be allowed too.
    for folder in folders_to_scan(lib.catalog, folders):
        if folder not in folders:
            require_inside_allowed_roots(lib, folder, "import: the registered folder it lies in")
    return start_import(
        lib.service,
        lib.catalog,
        folders,
        lib.settings,
        idempotency_key=key,
        reread=params.reread,
        roots=lib.settings.allowed_roots,
        watch=params.watch,
    )


@job_type("render", RenderParams, "Thumbnails and previews that are missing or stale.")
def start_render(lib: Library, params: RenderParams, key: str | None) -> Enqueued:
    settings = render_settings(lib.settings)
    return enqueue_render(
        lib.service, lib.settings.home, settings, force=params.force, idempotency_key=key
    )


@job_type("similar", SimilarParams, "Perceptual hashes and near-duplicate groups.")
def start_similar(lib: Library, params: SimilarParams, key: str | None) -> Enqueued:
    distance = lib.settings.near_distance if params.max_distance is None else params.max_distance
    return enqueue_similar(
        lib.service, lib.settings.home, max_distance=distance, idempotency_key=key
    )


class FacesParams(Params):
    pass


@job_type("faces", FacesParams, "Faces in the previews, grouped into people.")
def start_faces(lib: Library, params: FacesParams, key: str | None) -> Enqueued:
    from photo_pipeline.pipeline.faces.job import enqueue_faces

    return enqueue_faces(lib.service, lib.settings.home, idempotency_key=key)


@job_type("organize", OrganizeParams, "Copy or move originals into a dated layout.")
def start_organize(lib: Library, params: OrganizeParams, key: str | None) -> Enqueued:
    # Resolved, the destination can name a folder that is not UTF-8 (through a symlink).
    dest = require_utf8_path(confined_path(lib, params.dest, "params.dest"), "params.dest")
    # It reads (and with move, removes) files in every source: each must be allowed.
    _require_sources_inside_roots(lib, set(lib.catalog.source_paths()), "organize")
    return organize.start_organize(
        lib.service,
        dest,
        params.template,
        move=params.move,
        idempotency_key=key,
        keep_duplicates=params.keep_duplicates,
        roots=lib.settings.allowed_roots,
        **params.scope(),
    )


@job_type("organize_undo", UndoParams, "Put back what an organize job moved or copied.")
def start_organize_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    # One undo per organize job, whatever the request's key: asking again returns it.
    return organize.start_undo(lib.service, params.job_id)


class VerifyParams(Params):
    sample: float | None = Field(
        default=None,
        gt=0,
        le=100,
        description="Percent of the files to check, the least recently verified first "
        "(a rolling window); none: all.",
    )


@job_type("verify", VerifyParams, "Re-hash originals: bit rot and missing files.")
def start_verify(lib: Library, params: VerifyParams, key: str | None) -> Enqueued:
    return verify.start_verify(lib.service, idempotency_key=key, sample=params.sample)


@job_type("places", NoParams, "Time zones and places of assets that have none yet.")
def start_places(lib: Library, params: NoParams, key: str | None) -> Enqueued:
    return places.start_backfill(lib.service, idempotency_key=key)


@job_type(
    "timeshift", TimeshiftParams, "Shift one camera's capture times, or set chosen assets' dates."
)
def start_timeshift(lib: Library, params: TimeshiftParams, key: str | None) -> Enqueued:
    return timeshift.start_timeshift(
        lib.service,
        camera=params.camera,
        asset_ids=params.asset_ids,
        by=params.by,
        set_to=params.set,
        since=params.since,
        until=params.until,
        idempotency_key=key,
    )


@job_type("timeshift_undo", UndoParams, "Restore what a timeshift job changed.")
def start_timeshift_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    return timeshift.start_undo(lib.service, params.job_id, idempotency_key=key)


# ── dedupe (#16) ───────────────────────────────────────────────────────────────
class DedupeParams(Scoped):
    near: bool = Field(
        default=False, description="Also near-duplicate groups with a recorded decision."
    )


class PurgeParams(Params):
    older_than_days: int = Field(ge=0, le=36_525, description="Quarantined before this.")


def _require_sources_inside_roots(lib: Library, roots: set[str], what: str) -> None:
    """A dedupe moves files in the library's sources (its undo, back into them): with
    ``PHOTO_PIPELINE_ALLOWED_ROOTS``, each must resolve inside one (403 otherwise)."""
    if not lib.settings.allowed_roots:
        return
    for root in sorted(roots):
        require_inside_allowed_roots(lib, root, f"{what}: source")


@job_type("dedupe", DedupeParams, "Keep one copy of each duplicate; quarantine the others.")
def start_dedupe(lib: Library, params: DedupeParams, key: str | None) -> Enqueued:
    _require_sources_inside_roots(lib, set(lib.catalog.source_paths()), "dedupe")
    return dedupe.start_dedupe(
        lib.service,
        lib.settings.home,
        near=params.near,
        idempotency_key=key,
        roots=lib.settings.allowed_roots,
        **params.scope(),
    )


@job_type("dedupe_undo", UndoParams, "Put back what a dedupe job moved into the quarantine.")
def start_dedupe_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    # One undo per dedupe job, whatever the request's key: asking again returns it.
    return dedupe.start_undo(lib.service, params.job_id)


@job_type("dedupe_purge", PurgeParams, "Delete files quarantined N days ago or more, for good.")
def start_dedupe_purge(lib: Library, params: PurgeParams, key: str | None) -> Enqueued:
    return dedupe.start_purge(
        lib.service, lib.settings.home, params.older_than_days, idempotency_key=key
    )


@job_type("xmp_write", NoParams, "Write the curation changes not in the XMP sidecars yet.")
def start_xmp_write(lib: Library, params: NoParams, key: str | None) -> Enqueued:
    # One writer at a time: a request while one is queued or running joins it.
    return xmp.start_write(lib.service)


@job_type("xmp_write_undo", UndoParams, "Put back the XMP sidecars an xmp_write job wrote.")
def start_xmp_write_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    return xmp.start_undo(lib.service, params.job_id)
