"""The photo job types ``POST /api/jobs`` starts, each a thin call into the pipeline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.job_types import (
    confined_path,
    job_type,
    require_inside_allowed_roots,
    require_job_paths_inside_roots,
)
from photo_pipeline.api.models import JOB_ID, PLAIN_TEXT
from photo_pipeline.jobs import Enqueued, JobConflict, JobSnapshot
from photo_pipeline.pipeline import dedupe, organize, places, timeshift, verify
from photo_pipeline.pipeline.imports import start_import
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.render import enqueue_render, render_settings
from photo_pipeline.pipeline.similar import enqueue_similar


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImportParams(Params):
    paths: list[str] = Field(min_length=1, max_length=50, description="Absolute folders.")


class RenderParams(Params):
    force: bool = False


class SimilarParams(Params):
    max_distance: int | None = Field(default=None, ge=0, le=32)


class OrganizeParams(Params):
    dest: str = Field(min_length=1, max_length=4096)
    template: str = Field(
        default=organize.DEFAULT_TEMPLATE, min_length=1, max_length=1000, pattern=PLAIN_TEXT
    )
    move: bool = False
    keep_duplicates: bool = False


class UndoParams(Params):
    job_id: str = Field(pattern=JOB_ID, description="The job to undo.")


class TimeshiftParams(Params):
    camera: str = Field(min_length=1, max_length=200, pattern=PLAIN_TEXT)
    by: str = Field(min_length=1, max_length=40, pattern=PLAIN_TEXT, examples=["+2h15m"])
    since: str | None = Field(default=None, max_length=40, pattern=PLAIN_TEXT)
    until: str | None = Field(default=None, max_length=40, pattern=PLAIN_TEXT)


class NoParams(Params):
    pass


@job_type("import", ImportParams, "Scan folders, then render, then find near duplicates.")
def start_import_job(lib: Library, params: ImportParams, key: str | None) -> Enqueued:
    folders = [confined_path(lib, raw, f"params.paths[{n}]") for n, raw in enumerate(params.paths)]
    return start_import(lib.service, lib.catalog, folders, lib.settings, idempotency_key=key)


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


# The starters below validate against the catalogue before queueing, so a replay is
# recognised by its key first (and refused if it asked for something else).


def _once(
    lib: Library,
    key: str | None,
    job_type_: str,
    same: Callable[[dict[str, Any]], bool],
    start: Callable[[], JobSnapshot],
) -> Enqueued:
    if key is not None:
        existing = lib.service.find_by_idempotency_key(key)
        if existing is not None:
            if existing["job_type"] != job_type_ or not same(existing["params"]):
                raise JobConflict(
                    "idempotency_conflict",
                    f"idempotency key {key!r} was used for a different request "
                    f"(job {existing['id']})",
                )
            return Enqueued(existing, False)
    return Enqueued(start(), True)


@job_type("organize", OrganizeParams, "Copy or move originals into a dated layout.")
def start_organize(lib: Library, params: OrganizeParams, key: str | None) -> Enqueued:
    dest = str(confined_path(lib, params.dest, "params.dest"))
    return _once(
        lib,
        key,
        organize.JOB_TYPE,
        lambda p: (
            (p["destination"], p["template"], p["move"], p.get("keep_duplicates", False))
            == (dest, params.template, params.move, params.keep_duplicates)
        ),
        lambda: organize.start_organize(
            lib.service,
            dest,
            params.template,
            move=params.move,
            idempotency_key=key,
            keep_duplicates=params.keep_duplicates,
        ),
    )


@job_type("organize_undo", UndoParams, "Put back what an organize job moved or copied.")
def start_organize_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    # One undo per organize job, whatever the request's key: asking again returns it.
    before = lib.service.find_by_idempotency_key(organize.undo_key(params.job_id))
    return Enqueued(organize.start_undo(lib.service, params.job_id), before is None)


@job_type("verify", NoParams, "Re-hash originals: bit rot and missing files.")
def start_verify(lib: Library, params: NoParams, key: str | None) -> Enqueued:
    return _once(
        lib, key, verify.JOB_TYPE, lambda _: True, lambda: verify.start_verify(lib.service)
    )


@job_type("places", NoParams, "Time zones and places of assets that have none yet.")
def start_places(lib: Library, params: NoParams, key: str | None) -> Enqueued:
    return _once(
        lib, key, places.JOB_TYPE, lambda _: True, lambda: places.start_backfill(lib.service)
    )


@job_type("timeshift", TimeshiftParams, "Shift one camera's capture times (catalogue only).")
def start_timeshift(lib: Library, params: TimeshiftParams, key: str | None) -> Enqueued:
    shift = timeshift.parse_shift(params.by)
    window = timeshift.Window.parse(params.since, params.until)
    asked = (params.camera, int(shift.total_seconds()), window.since, params.until)

    def same(stored: dict[str, Any]) -> bool:
        return (stored["camera"], stored["by_seconds"], stored["since"], stored["until"]) == asked

    return _once(
        lib,
        key,
        timeshift.JOB_TYPE,
        same,
        lambda: timeshift.start_timeshift(
            lib.service,
            camera=params.camera,
            by=params.by,
            since=params.since,
            until=params.until,
            idempotency_key=key,
        ),
    )


@job_type("timeshift_undo", UndoParams, "Restore what a timeshift job changed.")
def start_timeshift_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    return _once(
        lib,
        key,
        timeshift.UNDO_JOB_TYPE,
        lambda p: p.get("job_id") == params.job_id,
        lambda: timeshift.start_undo(lib.service, params.job_id, idempotency_key=key),
    )


# ── dedupe (#16) ───────────────────────────────────────────────────────────────
class DedupeParams(Params):
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
    return _once(
        lib,
        key,
        dedupe.JOB_TYPE,
        lambda p: p.get("near", False) == params.near and p.get("hard_links", True),
        lambda: dedupe.start_dedupe(
            lib.service, lib.settings.home, near=params.near, idempotency_key=key
        ),
    )


@job_type("dedupe_undo", UndoParams, "Put back what a dedupe job moved into the quarantine.")
def start_dedupe_undo(lib: Library, params: UndoParams, key: str | None) -> Enqueued:
    require_job_paths_inside_roots(lib, params.job_id)
    # One undo per dedupe job, whatever the request's key: asking again returns it.
    before = lib.service.find_by_idempotency_key(dedupe.undo_key(params.job_id))
    return Enqueued(dedupe.start_undo(lib.service, params.job_id), before is None)


@job_type("dedupe_purge", PurgeParams, "Delete files quarantined N days ago or more, for good.")
def start_dedupe_purge(lib: Library, params: PurgeParams, key: str | None) -> Enqueued:
    return _once(
        lib,
        key,
        dedupe.PURGE_JOB_TYPE,
        lambda p: p.get("older_than_days") == params.older_than_days,
        lambda: dedupe.start_purge(
            lib.service, lib.settings.home, params.older_than_days, idempotency_key=key
        ),
    )
