"""``Uploads``: what the tus routes (api.uploads) call, and the sweep.

An upload is a row (``ledger``) and a partial file (``partials``). Created with its
length checked against the per-file limit (``upload_too_large``), the day's quota
(``daily_quota_exceeded``, both 413) and the disk's free space (``disk_full``, 507);
written in order at its offset; once whole, landed under its name in
``uploads/<device>/`` and a scan of the uploads source queued (the whole import chain:
scan, render, similar). The sweep (``serve`` runs it every ``sweep_seconds``) removes
partials untouched for ``expire_after`` and queues a scan again for landed files that
no scan catalogued yet (one that was running when they landed had walked past them).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import exists, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, files
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.states import JobState
from photo_pipeline.pipeline.files import paths, roots
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.library.catalog import MISSING
from photo_pipeline.pipeline.uploads import ledger, partials
from photo_pipeline.pipeline.uploads.ledger import Upload
from photo_pipeline.pipeline.uploads.names import device_folder, file_name
from photo_pipeline.pipeline.uploads.settings import UploadSettings

log = logging.getLogger(__name__)


class UploadTooLarge(PhotoPipelineError):
    code = "upload_too_large"
    status = 413


class UploadNotFound(PhotoPipelineError):
    code = "upload_not_found"
    status = 404


class OffsetMismatch(PhotoPipelineError):
    code = "offset_mismatch"
    status = 409


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SweepReport:
    expired: int = 0
    orphans: int = 0
    scans_queued: int = 0


class Uploads:
    def __init__(
        self, lib: Library, settings: UploadSettings, clock: Callable[[], datetime] = _now
    ) -> None:
        self.lib = lib
        self.settings = settings
        self.clock = clock
        self._sessions = lib.sessions
        # The source holding the uploads, once looked up (a row that does not change).
        self._source_found: tuple[dict[str, object], Path] | None = None

    # ── creation ───────────────────────────────────────────────────────────────
    def create(
        self, length: int, filename: str | None, device: str | None, mtime_ns: int | None
    ) -> Upload:
        limit = self.settings.max_file_bytes
        if length > limit:
            raise UploadTooLarge(
                "upload_too_large",
                f"a file may have at most {limit} bytes; this one has {length} "
                "(PHOTO_PIPELINE_UPLOAD_MAX_FILE_BYTES)",
                limit=limit,
            )
        self._check_root()
        free = partials.free_bytes(self.settings)
        if free < length + self.settings.reserve_bytes:
            raise partials.DiskFull(
                "disk_full",
                f"the uploads' disk has {free} bytes free: not enough for {length} more",
            )
        now = self.clock()
        upload = Upload(
            id=secrets.token_hex(16),
            device=device_folder(device),
            filename=file_name(filename),
            length=length,
            mtime_ns=mtime_ns,
            created_at=now,
            expires_at=now + self.settings.expire_after,
            finished_at=None,
            placed=None,
        )
        ledger.create(self._sessions, upload, self.settings.max_day_bytes)
        try:
            partials.create(self.settings, upload.id)
        except BaseException:
            ledger.forget(self._sessions, [upload.id])
            raise
        if length == 0:
            return self._finish(upload)
        return upload

    def _check_root(self) -> None:
        """The uploads land inside the allowed roots, never in the library home."""
        allowed = [str(root) for root in self.lib.settings.allowed_roots]
        roots.real_path_inside(self.settings.root, allowed, "the uploads folder")

    # ── the core protocol ──────────────────────────────────────────────────────
    def get(self, upload_id: str) -> tuple[Upload, int]:
        """The upload and its offset; ``upload_not_found`` when unknown, expired or
        terminated."""
        upload = ledger.get(self._sessions, upload_id)
        if upload is None:
            raise UploadNotFound(
                "upload_not_found",
                "no such upload (finished long ago, expired or terminated): start it again",
            )
        if upload.finished_at is not None:
            return upload, upload.length
        offset = partials.size(self.settings, upload_id)
        if offset is None or upload.expires_at <= self.clock():
            raise UploadNotFound("upload_not_found", "this upload expired: start it again")
        if offset == upload.length:
            # Whole but not landed: the server stopped between the last fsync and the
            # landing. A client asking now takes it for done, so it lands now (unless
            # the request that wrote it is landing it: it holds the partial).
            with self._held(upload_id) as free:
                if free:
                    return self._finish(upload), upload.length
        return upload, offset

    @contextlib.contextmanager
    def writing(
        self, upload_id: str, offset: int, created: Upload | None = None
    ) -> Iterator[tuple[Upload, partials.Writer]]:
        """The upload's partial, held for appending at ``offset`` (``offset_mismatch``
        otherwise); made durable on leaving, whatever happened. ``created``: the
        upload as this request just created it (not read again)."""
        upload = created if created is not None else self.get(upload_id)[0]
        if upload.finished_at is not None:
            if offset != upload.length:
                raise OffsetMismatch(
                    "offset_mismatch", f"the upload is complete at {upload.length}"
                )
            raise AlreadyComplete(upload)
        try:
            writer = partials.Writer(self.settings, upload_id)
        except FileNotFoundError:
            raise UploadNotFound(
                "upload_not_found", "this upload expired: start it again"
            ) from None
        try:
            if writer.offset != offset:
                raise OffsetMismatch(
                    "offset_mismatch",
                    f"the upload is at offset {writer.offset}, not {offset}: ask (HEAD) and resume",
                    offset=writer.offset,
                )
            now = self.clock()
            if upload.expires_at - now < self.settings.expire_after / 2:  # else recent
                ledger.extend(self._sessions, upload_id, now + self.settings.expire_after)
            try:
                yield upload, writer
            finally:
                whole = writer.offset == upload.length
                writer.sync(upload.mtime_ns if whole else None)
                if whole:  # landed while the partial is still held: once
                    writer.landed = self._finish(upload)
        finally:
            writer.close()

    def _finish(self, upload: Upload) -> Upload:
        placed = partials.land(
            self.settings, upload.id, upload.device, upload.filename, upload.mtime_ns
        )
        now = self.clock()
        ledger.finish(self._sessions, upload.id, placed, now)
        partials.remove(self.settings, upload.id)
        log.info("upload %s landed as %s", upload.id, placed)
        try:
            self.queue_scan()
        except Exception:  # the sweep queues it again; the upload itself is done
            log.exception("could not queue the scan of the uploads; the sweep will")
        return Upload(**{**upload.__dict__, "finished_at": now, "placed": placed})

    def terminate(self, upload_id: str) -> None:
        """tus termination: an unfinished upload's bytes go; a finished one's file
        stays in the library (terminating it changes nothing)."""
        upload = ledger.get(self._sessions, upload_id)
        if upload is None:
            raise UploadNotFound("upload_not_found", "no such upload")
        if upload.finished_at is not None:
            return
        with self._held(upload_id) as free:
            if not free:
                raise partials.UploadBusy("upload_busy", "this upload is being sent; retry")
            partials.remove(self.settings, upload_id)
            ledger.forget(self._sessions, [upload_id])

    @contextlib.contextmanager
    def _held(self, upload_id: str) -> Iterator[bool]:
        """The partial's lock if no request holds it (True), else False; True as well
        when the partial is gone."""
        try:
            writer = partials.Writer(self.settings, upload_id)
        except FileNotFoundError:
            yield True
            return
        except partials.UploadBusy:
            yield False
            return
        try:
            yield True
        finally:
            writer.close()

    # ── the catalogue ──────────────────────────────────────────────────────────
    def known(self, sha256: str) -> bool:
        """Whether the library holds this content: an asset with this SHA-256 and a
        file of it that is still there."""
        with read_session(self._sessions) as session:
            query = select(
                exists().where(
                    assets.c.sha256 == sha256,
                    files.c.asset_id == assets.c.id,
                    files.c.state != MISSING,
                )
            )
            return bool(session.scalar(query))

    def _source(self) -> tuple[dict[str, object], Path]:
        """The source that holds the uploads (the uploads root, or a registered source
        around it), registered now if needed, and the root's path relative to it."""
        from photo_pipeline.pipeline.ingest.imports import folders_to_scan

        if self._source_found is not None:
            return self._source_found
        self.settings.root.mkdir(parents=True, exist_ok=True)
        folder = folders_to_scan(self.lib.catalog, [self.settings.root])[0]
        source = self.lib.catalog.add_source(folder)
        below = self.settings.root.resolve().relative_to(Path(str(source["path"])))
        self._source_found = (source, below)
        return self._source_found

    def queue_scan(self) -> bool:
        """Queue the import chain for the uploads source, or join its scan while it
        waits; False when a scan of it is running (it may have walked past the new
        files: the sweep queues one again once it ended)."""
        from photo_pipeline.pipeline.ingest import scan
        from photo_pipeline.pipeline.ingest.imports import start_import

        source, _ = self._source()
        lock = scan.lock_for(int(str(source["id"])))
        holders = self.lib.service.blockers(lock)
        if any(b["state"] != JobState.QUEUED for b in holders):
            return False
        if holders:
            return True  # a scan waits to start: it will list the new files too
        start_import(
            self.lib.service,
            self.lib.catalog,
            [Path(str(source["path"]))],
            self.lib.settings,
            roots=self.lib.settings.allowed_roots,
        )
        return True

    def _catalogued(self, awaiting: list[tuple[str, str]]) -> list[str]:
        """The uploads of ``awaiting`` whose landed file a scan has recorded."""
        source, below = self._source()
        stored = {paths.to_text(str(below / placed)): upload_id for upload_id, placed in awaiting}
        with read_session(self._sessions) as session:
            seen = set(
                session.scalars(
                    select(files.c.path).where(
                        files.c.source_id == source["id"], files.c.path.in_(list(stored))
                    )
                )
            )
        return [stored[path] for path in seen]

    # ── the sweep ──────────────────────────────────────────────────────────────
    def sweep(self) -> SweepReport:
        now = self.clock()
        expired = ledger.expired(self._sessions, now)
        gone = []
        for upload_id in expired:
            with self._held(upload_id) as free:
                if free:
                    partials.remove(self.settings, upload_id)
                    gone.append(upload_id)
        ledger.forget(self._sessions, gone)
        orphans = self._sweep_partials(now)
        scans = 0
        awaiting = ledger.awaiting_catalogue(self._sessions)
        if awaiting:
            done = self._catalogued(awaiting)
            ledger.mark_catalogued(self._sessions, done, now)
            if len(done) < len(awaiting) and self.queue_scan():
                scans = 1
        ledger.prune_before(self._sessions, ledger.day_start(now) - timedelta(days=1))
        report = SweepReport(len(gone), orphans, scans)
        if gone or orphans:
            log.info("uploads sweep: %d expired, %d orphaned partials removed", len(gone), orphans)
        return report

    def _sweep_partials(self, now: datetime) -> int:
        """Partials of finished uploads (landed before a crash removed them) and
        partials no row knows (a creation that crashed) once old enough."""
        found = partials.ids(self.settings)
        if not found:
            return 0
        known = ledger.known_ids(self._sessions, found)
        finished = ledger.finished_ids(self._sessions, found)
        removed = 0
        for upload_id in found:
            if upload_id in finished:
                partials.remove(self.settings, upload_id)
                removed += 1
            elif upload_id not in known:
                try:
                    mtime = os.stat(self.settings.partials / upload_id).st_mtime
                except FileNotFoundError:
                    continue
                if datetime.fromtimestamp(mtime, UTC) + self.settings.expire_after < now:
                    partials.remove(self.settings, upload_id)
                    removed += 1
        return removed


class AlreadyComplete(Exception):
    """A write to an upload that is complete already (a retried last request)."""

    def __init__(self, upload: Upload) -> None:
        self.upload = upload


class Sweeper:
    """``Uploads.sweep`` every ``sweep_seconds`` on a thread, until stopped."""

    def __init__(self, uploads: Uploads) -> None:
        self.uploads = uploads
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="uploads-sweep", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.uploads.settings.sweep_seconds):
            try:
                self.uploads.sweep()
            except Exception:
                log.exception(
                    "uploads sweep failed; it runs again in %gs",
                    self.uploads.settings.sweep_seconds,
                )
