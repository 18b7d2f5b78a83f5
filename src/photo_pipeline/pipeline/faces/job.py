"""The ``faces`` job: one item per asset that has a preview and was never looked at
for faces. An item reads the preview (the original is never decoded again), finds its
faces (``media.faces``) and hands back their rows; each batch of them is written in the
fenced transaction that reports the items done, so a worker killed mid-job leaves no
face without its item done, and none twice. Then the new faces are grouped
(``pipeline.faces.grouping``).

Where the models are not installed, the job type is not served by a worker left to
choose its types (``registry.defer(missing=...)``), and an import queues no faces job
unless ``PHOTO_PIPELINE_FACES=on`` says that a worker elsewhere has them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sqlalchemy import and_, insert, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import face_scans, faces, renditions
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.media.faces import missing_models, shared_finder
from photo_pipeline.pipeline.faces.grouping import group_faces

JOB_TYPE = "faces"
MODELS_MISSING = "face_models_missing"
_ADD_CHUNK = 1000
log = logging.getLogger("photo_pipeline.faces")


def enqueue_faces(
    service: JobService,
    home: Path,
    *,
    prerequisites: list[str] | tuple[str, ...] = (),
    idempotency_key: str | None = None,
    join_equivalent: bool = False,
) -> Enqueued:
    """Queue a faces job for the library at ``home`` (after ``prerequisites``)."""
    return service.submit(
        JOB_TYPE,
        params={"home": str(home)},
        prerequisites=prerequisites,
        idempotency_key=idempotency_key,
        join_equivalent=join_equivalent,
    )


def queued_on_import(setting: str) -> bool:
    """Whether an import queues a faces job: ``PHOTO_PIPELINE_FACES`` is ``on`` (a
    worker somewhere has the models), ``off``, or ``auto`` (when this machine has
    them; otherwise one warning says why there are no faces)."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    reason = missing_models()
    if reason is not None:
        log.warning("no faces job queued: %s", reason)
        return False
    return True


@registry.handler(JOB_TYPE)
def find_faces(ctx: JobContext) -> None:
    reason = missing_models()
    if reason is not None:
        raise ItemError(MODELS_MISSING, reason)
    factory = ctx.session_factory
    keys = [f"{asset_id}:{path}" for asset_id, path in _unscanned(factory)]
    for start in range(0, len(keys), _ADD_CHUNK):
        ctx.add_items(keys[start : start + _ADD_CHUNK])

    found: list[dict[str, Any]] = []
    counts = {"faces": 0, "too_small": 0, "blurred": 0}

    def keep(_key: str, result: tuple[int, dict[str, Any] | None, Any]) -> None:
        _asset_id, scan, error = result
        if error:
            raise ItemError(*error)
        assert scan is not None  # a preview that was read has its scan
        found.append(scan)
        counts["faces"] += len(scan["faces"])
        counts["too_small"] += scan["too_small"]
        counts["blurred"] += scan["blurred"]

    def record() -> RowWriter | None:
        if not found:
            return None
        batch = list(found)
        found.clear()
        return lambda session: _store_scans(session, batch)

    ctx.before_flush(record)
    ctx.map(find_in_preview, on_result=keep)
    if ctx.should_stop:
        return
    ctx.flush()
    if ctx.should_stop:
        return
    ctx.log.info(
        "faces found: %d kept, %d skipped as too small, %d as too blurred",
        counts["faces"],
        counts["too_small"],
        counts["blurred"],
    )
    # Names another program put in the sidecars (read at the scan, before any face
    # was found) go to the new faces first: the grouping then builds on them.
    from photo_pipeline.pipeline.xmp.regions import name_new_faces

    named = name_new_faces(factory)
    if named:
        ctx.log.info("faces named from XMP regions: %d", named)
    done = group_faces(factory)
    ctx.log.info(
        "faces grouped: %d placed with people, %d new people, %d waiting (%d examined)",
        done.placed,
        done.new_people,
        done.waiting,
        done.examined,
    )


def find_in_preview(params: dict[str, Any], key: str) -> tuple[int, dict[str, Any] | None, Any]:
    """One asset's faces, from its stored preview (runs in the worker's item pool)."""
    asset_id, relative = key.split(":", 1)
    path = Path(params["home"]) / relative
    try:
        result = shared_finder().find_in_file(path)
    except OSError as exc:  # the stored preview is gone or unreadable
        return int(asset_id), None, ("unreadable_rendition", f"{path}: {exc}".strip()[:500])
    return (
        int(asset_id),
        {
            "asset_id": int(asset_id),
            "too_small": result.too_small,
            "blurred": result.blurred,
            "faces": [
                {
                    "box": list(face.box),
                    "landmarks": [list(point) for point in face.landmarks],
                    "embedding": face.embedding.tobytes(),
                    "score": face.score,
                    "sharpness": face.sharpness,
                }
                for face in result.faces
            ],
        },
        None,
    )


def _unscanned(factory: sessionmaker[Session]) -> list[tuple[int, str]]:
    query = (
        select(renditions.c.asset_id, renditions.c.path)
        .outerjoin(face_scans, face_scans.c.asset_id == renditions.c.asset_id)
        .where(and_(renditions.c.kind == "preview", face_scans.c.asset_id.is_(None)))
        .order_by(renditions.c.asset_id)
    )
    with read_session(factory) as session:
        return [(row.asset_id, row.path) for row in session.execute(query)]


def _store_scans(session: Session, scans: list[dict[str, Any]]) -> None:
    """The faces and scan rows of a batch, inside the items' fenced transaction. An
    asset scanned meanwhile (by another faces job) keeps what it has."""
    ids = [scan["asset_id"] for scan in scans]
    already = set(
        session.scalars(select(face_scans.c.asset_id).where(face_scans.c.asset_id.in_(ids)))
    )
    now = utc_now()
    scan_rows, face_rows = [], []
    for scan in scans:
        if scan["asset_id"] in already:
            continue
        already.add(scan["asset_id"])
        scan_rows.append(
            {
                "asset_id": scan["asset_id"],
                "faces": len(scan["faces"]),
                "too_small": scan["too_small"],
                "blurred": scan["blurred"],
                "scanned_at": now,
            }
        )
        for ordinal, face in enumerate(scan["faces"]):
            left, top, width, height = face["box"]
            face_rows.append(
                {
                    "asset_id": scan["asset_id"],
                    "ordinal": ordinal,
                    "box_left": left,
                    "box_top": top,
                    "box_width": width,
                    "box_height": height,
                    "landmarks": face["landmarks"],
                    "embedding": face["embedding"],
                    "score": face["score"],
                    "sharpness": face["sharpness"],
                    "created_at": now,
                }
            )
    if scan_rows:
        session.execute(insert(face_scans), scan_rows)
    if face_rows:
        session.execute(insert(faces), face_rows)
