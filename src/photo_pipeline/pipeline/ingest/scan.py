"""The ``scan`` job: walk sources, catalogue new and changed files, notice deleted and
moved ones. Items are the files that need reading; unchanged ones cost one stat.

Every file is an item, and what it is decides what it becomes:

* a photo or video (by content; ``media.formats``): an asset, or a failed item with
  the reason when it does not read (a media extension that does not decode fails);
* an ``.xmp``/``.aae`` sidecar: recorded unread (``sidecar``), to travel with its photo;
* anything else whose content is no media either (README, notes.txt, Thumbs.db):
  recorded as ``ignored``, which the scan's summary counts; never a failure.

A Live Photo's still and MOV are paired as the catalogue rows are written
(``pipeline.library.live_photos``), inside the transaction that reports the items done.

With render settings in its params (``import`` passes the library's), a scan also
renders each new photo in its item: the decode that makes the thumbnail and preview is
the one that proves the photo whole (a truncated JPEG fails its item with
``corrupt_file``), so a first import decodes every photo once, not twice (the metadata
read skips its own check decode: ``media.decode.pixels_checked_by_caller``). An asset
is catalogued only in the transaction that records its renditions, never before its
decode succeeded. Measured against the other way (the scan skips the check, the render
job's decode makes it), 48 24-MP photos imported in 4.1 s instead of 5.1 s (median of
4, the chain's hand-over and a second pass over the items saved) for 81 instead of 83
ms CPU a photo, and that way would list a truncated photo until its render failed.
Videos, and photos whose renditions could not be written, are left to the ``render``
job that follows, as are settings changes and ``render --force``.

A file whose read ran out of memory (``out_of_memory``: a huge progressive JPEG beside
others, under a ``ulimit``) is no corrupt file: its item runs once more after the
others, alone (``JobContext.map``), and if memory is still short its row stays failed
with that code, which every later scan reads again, changed or not, until it reads.

A source with ``paths`` in its params (a watcher's scan, ``pipeline.watch.batches``)
is compared at those paths only, and below the folders among them (``walk``'s
``within``: the same confinement and exclusions), against the catalogue's rows there
(``Catalog.known_files_within``), not the whole source's; deletions and renames among them are
noticed as a whole scan notices them.

With ``reread`` in its params (``import --reread``), every file is read again, changed
or not, and each asset takes what its file and sidecars say now (``catalog.record``):
how a library catalogued by an older version gets what a newer one reads. Photos whose
renditions exist are not decoded again.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, files
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.media import (
    DEFAULT_MAX_PIXELS,
    MediaError,
    cost,
    hash_file_digests,
    read_metadata,
)
from photo_pipeline.media.decode import pixels_checked_by_caller
from photo_pipeline.media.errors import TRANSIENT_CODES
from photo_pipeline.media.files import open_original
from photo_pipeline.media.formats import (
    HEADER_SIZE,
    SIDECAR_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    sniff,
)
from photo_pipeline.media.render import RenderSettings, render_file
from photo_pipeline.media.video import DEFAULT_TIME_LIMIT
from photo_pipeline.pipeline import abandoned
from photo_pipeline.pipeline.files import paths, roots
from photo_pipeline.pipeline.ingest.places import locate_reports, prepare
from photo_pipeline.pipeline.ingest.sidecars import (
    beside_changed_sidecars,
    may_be_sidecar,
    with_sidecars_of,
)
from photo_pipeline.pipeline.ingest.walk import below, listed_fingerprint, walk
from photo_pipeline.pipeline.library.catalog import (
    FAILED,
    IGNORED,
    MISSING,
    SIDECAR,
    Catalog,
    FileReport,
    KnownFile,
)
from photo_pipeline.pipeline.library.unexpected import unexpected_failure
from photo_pipeline.pipeline.renditions.render import stage_renditions
from photo_pipeline.pipeline.renditions.rows import Renditions
from photo_pipeline.pipeline.renditions.store import (
    RenderOutcome,
    discard,
    publish,
    relative_path,
    remove_files,
)

JOB_TYPE = "scan"


def lock_for(source_id: int) -> str:
    """One active scan per source: two would race to catalogue the same files."""
    return f"scan:{source_id}"


_ADD_CHUNK = 1000


def render_params(home: Path, settings: RenderSettings) -> dict[str, Any]:
    """The ``render`` entry of a scan's params: render new photos with ``settings``
    into the library at ``home`` (see the module's docstring)."""
    return {"home": str(home), "settings": settings.to_params()}


@dataclass(frozen=True)
class Inspected:
    """What the item of one file made: its report, and the renditions it staged
    (``asset_id`` 0: the asset is known once the report is recorded)."""

    report: FileReport
    rendered: RenderOutcome | None = None


@registry.handler(JOB_TYPE)
def scan(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # else a file a killed job hid is missing
    catalog = Catalog(ctx.session_factory)
    # Items an earlier run finished are not read again: their curation is read back
    # from the catalogue's files at the end (that run was killed before its read-back).
    resumed = next(ctx.succeeded_items(), None) is not None
    # A file symlink is read only when its target really lies in one of these.
    allowed = roots.library_roots(ctx.session_factory)
    for source in ctx.params["sources"]:
        if ctx.should_stop:
            return
        _discover(ctx, catalog, source)

    found: list[FileReport] = []
    rendered: dict[str, RenderOutcome] = {}  # by content hash: a copy renders once
    render = ctx.params.get("render")
    reread = bool(ctx.params.get("reread"))
    home = Path(render["home"]) if render else Path()
    fingerprint = RenderSettings.from_params(render["settings"]).fingerprint() if render else ""
    renditions = Renditions(ctx.session_factory)
    orphans: list[str] = []  # files of committed batches that no row names any more
    read: set[str] = set()  # the contents read: their curation in XMP is read back

    def keep(_key: str, inspected: Inspected) -> None:
        report, outcome = inspected.report, inspected.rendered
        found.append(report)
        if report.content_hash is not None and not report.error:
            read.add(report.content_hash)
        if outcome is not None and report.content_hash is not None:
            if report.content_hash in rendered:
                discard(outcome.staged)  # a copy of a photo of this batch
            else:
                rendered[report.content_hash] = outcome
        prepare(report)
        if report.error:
            # Memory short: recorded as such for now, and read once more, alone
            raise ItemError(*report.error, transient=report.error[0] in TRANSIENT_CODES)

    def record() -> RowWriter | None:
        for warning in remove_files(home, orphans):  # the previous batch's
            ctx.log.warning("old rendition not removed: %s", warning)
        orphans.clear()
        if not found:
            return None  # nothing to write (a flush between two pages of items)
        # Zones and places are looked up here, in the worker, one batch at a time:
        # the place data is loaded once per worker, not once per pool process.
        batch = found.copy()  # the writer runs later: it must not see the list cleared
        found.clear()
        located = locate_reports(batch)
        # Durable under their names before any row names them.
        published = dict(zip(rendered, publish(home, list(rendered.values())), strict=True))
        rendered.clear()

        # Written with the items: a scan that lost its lease writes no rows.
        def write(session: Session) -> None:
            catalog.record_in(session, located, refresh=reread)
            if published:
                outcomes = _with_asset_ids(session, published)
                # Assigned, not appended: a retried transaction computes them again.
                orphans[:] = renditions.record_in(session, outcomes, fingerprint)

        return write

    # The catalogue rows of a batch land just before its items are reported done.
    ctx.before_flush(record)
    # A partial of a module-level function: picklable for a process pool too.
    ctx.map(
        functools.partial(inspect_file_within, allowed),
        on_result=keep,
        # A huge progressive JPEG waits for memory (the worker's budget), not for luck.
        weigh=functools.partial(weigh_file_within, allowed),
    )
    if not ctx.should_stop:
        ctx.flush()
        for warning in remove_files(home, orphans):
            ctx.log.warning("old rendition not removed: %s", warning)
        # A scan of given paths looked at those only: the source is not scanned whole.
        catalog.mark_scanned(
            source["id"] for source in ctx.params["sources"] if source.get("paths") is None
        )
        earlier = _assets_of_items(ctx.session_factory, ctx.succeeded_items()) if resumed else []
        _read_back_curation(ctx, read, earlier)


def _assets_of_items(factory: sessionmaker[Session], item_keys: Iterable[str]) -> list[int]:
    """The assets of the files these items (``source id:path``) catalogued."""
    by_source: dict[int, list[str]] = {}
    for key in item_keys:
        source, stored = key.split(":", 1)
        by_source.setdefault(int(source), []).append(stored)
    found: list[int] = []
    with read_session(factory) as session:
        for source_id, stored_paths in by_source.items():
            for at in range(0, len(stored_paths), 500):
                found += session.scalars(
                    select(files.c.asset_id).where(
                        files.c.source_id == source_id,
                        files.c.path.in_(stored_paths[at : at + 500]),
                        files.c.asset_id.is_not(None),
                    )
                )
    return found


def _read_back_curation(ctx: JobContext, contents: set[str], asset_ids: list[int]) -> None:
    """What another program changed in the sidecars of the files read and of these
    assets (or a new photo's own rating and keywords) comes into the catalogue
    (``pipeline.xmp``), and what the catalogue changed more recently is queued for
    writing."""
    if not contents and not asset_ids:
        return
    from photo_pipeline.jobs import JobService
    from photo_pipeline.pipeline.xmp import readback, request_write

    asset_ids = asset_ids + readback.assets_of_hashes(ctx.session_factory, contents)
    counts = readback.readback(ctx.session_factory, asset_ids)
    if counts["taken"]:
        ctx.log.info("curation read back from XMP: %s fields", counts["taken"])
    request_write(JobService(ctx.session_factory))


def _with_asset_ids(session: Session, by_hash: dict[str, RenderOutcome]) -> list[RenderOutcome]:
    """The outcomes with the ids of their assets, just recorded in ``session``."""
    query = select(assets.c.content_hash, assets.c.id).where(
        assets.c.content_hash.in_(list(by_hash))
    )
    ids = {row.content_hash: row.id for row in session.execute(query)}
    return [
        replace(outcome, asset_id=ids[content_hash])
        for content_hash, outcome in by_hash.items()
        if content_hash in ids
    ]


def _discover(ctx: JobContext, catalog: Catalog, source: dict[str, Any]) -> None:
    """Compare the tree with the catalogue: new or changed files become items, and so
    do files a sidecar beside changed (every file, with ``reread``); vanished ones are
    marked missing. Safe to repeat after a crash."""
    reread = bool(ctx.params.get("reread"))
    # A scan of given paths (a watcher's): those, and all below the folders among them.
    within = None if source.get("paths") is None else [paths.from_text(p) for p in source["paths"]]
    not_files: list[str] = []  # given paths that are folders, or gone
    unreadable: list[str] = []  # folders that could not be listed
    listing = walk(
        source["path"],
        skip=_sources_inside(catalog, source["path"]),
        unreadable=unreadable,
        within=within,
        not_files=not_files,
    )
    if within is None:
        known = catalog.known_files(source["id"])
    else:
        found_now = list(listing)  # listed first: the folders among the paths are known then
        listing = iter(found_now)
        known = catalog.known_files_within(
            source["id"],
            [paths.to_text(p) for p in within],
            [paths.to_text(p) for p in not_files],
        )
    listed = 0  # files the walk found
    changed: list[str] = []
    sidecars: list[str] = []  # sidecars added, changed or removed (relative paths)
    for relative, fingerprint in listing:
        stored = paths.to_text(relative)
        listed += 1
        before = known.pop(stored, None)  # what stays in ``known`` was not seen
        if (
            before is None
            or before.state == MISSING
            or before[:3] != fingerprint
            or _failed_for_the_moment(before)
        ):
            changed.append(f"{source['id']}:{stored}")
            if may_be_sidecar(relative):
                sidecars.append(relative)
        elif reread:
            changed.append(f"{source['id']}:{stored}")
    # What an unreadable folder holds is not gone: it could not be looked at.
    gone = [
        p
        for p, file in known.items()
        if file.state != MISSING and not below(paths.from_text(p), unreadable)
    ]
    if "" in unreadable:
        ctx.log.warning("source %s: cannot be listed; nothing marked missing", source["path"])
    if gone:
        catalog.mark_missing(source["id"], gone)
    sidecars += [r for r in map(paths.from_text, gone) if may_be_sidecar(r)]
    changed += sorted(_beside(source, sidecars).difference(changed))
    for start in range(0, len(changed), _ADD_CHUNK):
        ctx.add_items(changed[start : start + _ADD_CHUNK])
    ctx.log.info(
        "source %s: %d files, %d to read, %d gone",
        source["path"],
        listed,
        len(changed),
        len(gone),
    )


def _failed_for_the_moment(known: KnownFile) -> bool:
    """A file that failed for a reason of its moment (memory ran short), not of its
    content: read again by every scan until it reads, unchanged or not."""
    return known.state == FAILED and known.error_code in TRANSIENT_CODES


def _sources_inside(catalog: Catalog, root: str) -> list[str]:
    """The registered sources below ``root``, relative to it: their files are theirs."""
    return [
        os.path.relpath(path, root)
        for path in catalog.source_paths()
        if path != root and Path(path).is_relative_to(root)
    ]


def _beside(source: dict[str, Any], sidecars: list[str]) -> set[str]:
    """The items of the files whose sidecars are among ``sidecars``."""
    by_folder: dict[str, set[str]] = {}
    for relative in sidecars:
        folder, name = os.path.split(relative)
        by_folder.setdefault(folder, set()).add(name)
    return {
        f"{source['id']}:{paths.to_text(os.path.join(folder, name))}"
        for folder, names in by_folder.items()
        for name in beside_changed_sidecars(os.path.join(source["path"], folder), names)
    }


def _listed_fields(path: str) -> dict[str, int]:
    """A failed file's fingerprint fields, so that its failure is remembered until it
    changes, like any file's."""
    fingerprint = listed_fingerprint(path)
    if fingerprint is None:
        return {}
    return dict(zip(("size", "mtime_ns", "inode"), fingerprint, strict=True))


def inspect_file_within(allowed: Sequence[str], params: dict[str, Any], item_key: str) -> Inspected:
    """Hash a file and read its metadata, and render it when the scan renders (runs
    in the worker's item pool). A file whose real path (symlinks followed) leaves
    ``allowed`` is refused, unread, with ``symlink_outside_roots``; it is checked on
    the opened file, so a link swapped in after the check cannot lead outside either."""
    source_id, stored = item_key.split(":", 1)
    folders = {str(source["id"]): source["path"] for source in params["sources"]}
    path = os.path.join(folders[source_id], paths.from_text(stored))
    base: dict[str, Any] = {"source_id": int(source_id), "path": stored}
    try:
        roots.real_path_inside(path, allowed)
        info = os.stat(path)
    except roots.PathOutsideRoots as exc:
        base.update(_listed_fields(path))  # a stat, as the walk's: its bytes stay unread
        return Inspected(FileReport(**base, error=(exc.code, exc.detail)))
    except FileNotFoundError:
        if not os.path.islink(path):
            return _vanished(base)
        # There, but what it names is not: remembered by the link, as walk() lists it.
        base.update(_listed_fields(path))
        error = ("broken_symlink", "a symbolic link to a file that does not exist")
        return Inspected(FileReport(**base, error=error))
    except OSError as exc:
        base.update(_listed_fields(path))
        error = ("unreadable_file", f"cannot stat: {exc.strerror}")
        return Inspected(FileReport(**base, error=error))
    base.update(size=info.st_size, mtime_ns=info.st_mtime_ns, inode=info.st_ino)
    if stat.S_ISDIR(info.st_mode):  # a folder the walk could not list
        return Inspected(FileReport(**base, error=_unlisted(path)))
    if not stat.S_ISREG(info.st_mode):
        return Inspected(FileReport(**base, error=("unsupported_format", "not a regular file")))
    extension = os.path.splitext(path)[1].lower()
    if extension in SIDECAR_EXTENSIONS:
        return Inspected(FileReport(**base, role=SIDECAR))
    render = params.get("render")
    rendered = None
    try:
        with roots.pinned(path, allowed) as original:
            opened = original.stat  # what is read is what is fingerprinted
            base.update(size=opened.st_size, mtime_ns=opened.st_mtime_ns, inode=opened.st_ino)
            if extension not in SUPPORTED_EXTENSIONS and not _is_media(original.path):
                return Inspected(FileReport(**base, role=IGNORED))
            # Metadata first: a broken file (a 4 GB one without an index, say) fails
            # before its bytes are all hashed.
            checked: AbstractContextManager[None] = (
                pixels_checked_by_caller() if render else nullcontext()
            )
            time_limit = params.get("video_time_limit", DEFAULT_TIME_LIMIT)
            with checked:  # the render below decodes every pixel instead
                metadata = read_metadata(
                    Path(original.path),
                    max_pixels=params.get("max_pixels", DEFAULT_MAX_PIXELS),
                    time_limit=time_limit,
                    isolate_video=True,  # a demuxer stuck in FFmpeg is killed at the limit
                )
            metadata, sidecars = with_sidecars_of(path, metadata, allowed, time_limit)
            digests = hash_file_digests(Path(original.path))  # BLAKE3 and SHA-256, one read
            content_hash = digests.blake3
            if render and metadata.kind == "photo":
                rendered = _render(original.path, content_hash, render)
    except roots.PathOutsideRoots as exc:
        return Inspected(FileReport(**base, error=(exc.code, exc.detail)))
    except MediaError as exc:
        if exc.code == "file_vanished":
            return _vanished(base)
        return Inspected(FileReport(**base, error=(exc.code, exc.detail)))
    except Exception as exc:  # one odd file must not fail the scan of all the others
        return Inspected(
            FileReport(**base, error=unexpected_failure(exc, paths.display(paths.to_text(path))))
        )
    report = FileReport(
        **base,
        content_hash=content_hash,
        sha256=digests.sha256,
        metadata=metadata,
        sidecars=sidecars,
    )
    return Inspected(report, rendered)


def _unlisted(path: str) -> tuple[str, str]:
    """The failure of a folder that cannot be listed (tried again now, for the reason)."""
    try:
        os.scandir(path).close()
    except OSError as exc:
        return "unreadable_folder", f"cannot list its files: {exc.strerror}"
    return "unreadable_folder", "could not be listed during the scan; scan again"


def weigh_file_within(allowed: Sequence[str], params: dict[str, Any], item_key: str) -> int:
    """The memory reading a file will take (``media.cost``, from its header): its
    metadata check, or its renditions when the scan renders too (``params["render"]``;
    a video, which it leaves to the render job, is weighed as rendered all the same);
    a file outside ``allowed`` is not opened (its item fails unread)."""
    source_id, stored = item_key.split(":", 1)
    folders = {str(source["id"]): source["path"] for source in params["sources"]}
    path = os.path.join(folders[source_id], paths.from_text(stored))
    try:
        roots.real_path_inside(path, allowed)
    except roots.PathOutsideRoots:
        return cost.FLOOR
    max_pixels = params.get("max_pixels", DEFAULT_MAX_PIXELS)
    weight = cost.check_cost(path, max_pixels=max_pixels)
    if params.get("render"):
        settings = RenderSettings.from_params(params["render"]["settings"])
        size = max(settings.sizes.values())
        weight = max(weight, cost.render_cost(path, size=size, max_pixels=max_pixels))
    return weight


def _render(path: str, content_hash: str, render: dict[str, Any]) -> RenderOutcome | None:
    """Render a photo and stage its renditions; raises MediaError when it does not
    decode (then the file is not catalogued). None when there is nothing to stage: its
    renditions exist already (this content decoded before: these very bytes), or they
    could not be written (a full disk: the asset is catalogued all the same, and the
    ``render`` job tries again)."""
    home, settings = Path(render["home"]), RenderSettings.from_params(render["settings"])
    if all(
        (home / relative_path(content_hash, kind, settings.extension)).is_file()
        for kind in settings.sizes
    ):
        return None
    outcome = stage_renditions(home, 0, content_hash, render_file(path, settings), settings)
    return None if outcome.error else outcome


def _is_media(path: str) -> bool:
    """Whether the content of a file whose name is no media's is a photo or video all
    the same (an ``IMG_0001`` without extension); an unreadable one is not."""
    try:
        with open_original(path) as fp:
            header = fp.read(HEADER_SIZE)
    except (MediaError, OSError):
        return False
    return bool(header) and not sniff(header).startswith("other:")


def _vanished(base: dict[str, Any]) -> Inspected:
    error = ("file_vanished", "the file was deleted after it was listed")
    return Inspected(FileReport(**base, vanished=True, error=error))
