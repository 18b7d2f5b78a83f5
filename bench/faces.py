"""Benchmark faces: the ``faces`` job end to end against a bare dlib loop over the same
previews, and the grouping's cost at 10,000 and 100,000 synthetic embeddings.

Run with ``.venv/bin/python -m bench.faces [--quick]`` after ``make face-images``. It
prints, in one run:

1. faces per second on one core (one item thread), wall and CPU: the ``faces`` job
   (claim, item rows, preview read, detection, landmarks, sharpness, embedding, the
   rows written in the items' transactions, then the grouping) against a bare loop of
   the same dlib calls (HOG detector, 5-point landmarks, ResNet embedding) over the same
   1440 px previews — the test photos and their mirror images. Target: >= 0.9x;
2. the grouping (``pipeline.faces.grouping.group_faces``) of a whole library of N
   synthetic faces (a tenth of them strangers, the others people of 10 faces), then of
   100 new faces, at N = 10,000 and 100,000 (SQLite): seconds, the 100k / 10k ratio
   (linear would be 10x), and the precision and recall of same-person pairs against the
   planted people (speed is not to be bought with wrong merges). ``--grouping-only``
   runs this section alone (no face images needed).

Timings on this small shared machine are noisy: read the ratios of one run (rounds
alternate the two loops).
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

import numpy as np

from bench import _harness as h
from bench._scale_catalogue import ASSET_COLUMNS, asset_rows, bulk_load

ROOT = Path(os.environ.get("PP_BENCH_FACES_ROOT") or Path(tempfile.gettempdir()) / "pp_bench_faces")
IMAGES = Path(
    os.environ.get("PHOTO_PIPELINE_FACE_IMAGES") or "~/.cache/photo-pipeline/face-images"
).expanduser()


def make_library() -> tuple[Any, Path]:
    """A SQLite library of the test photos and their mirror images, rendered (1440 px
    previews), no faces found yet."""
    from PIL import Image, ImageOps

    import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
    from photo_pipeline.config import Settings
    from photo_pipeline.jobs import JobService
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry
    from photo_pipeline.pipeline.ingest.imports import import_folders
    from photo_pipeline.pipeline.library.catalog import Catalog

    shutil.rmtree(ROOT, ignore_errors=True)
    photos = ROOT / "photos"
    photos.mkdir(parents=True)
    for path in sorted(IMAGES.glob("*.*")):
        with Image.open(path) as image:
            image.convert("RGB").save(photos / f"{path.stem}.jpg", quality=92)
            ImageOps.mirror(image.convert("RGB")).save(photos / f"{path.stem}_m.jpg", quality=92)
    from photo_pipeline.db import open_database

    url = f"sqlite:///{ROOT / 'library.sqlite3'}"
    factory = open_database(url)
    settings = Settings(home=ROOT / "home", database_url=url, faces="off")
    service = JobService(factory)
    import_folders(service, Catalog(factory), [photos], follow_up=settings)
    config = WorkerConfig(burst=True, concurrency=2, poll_seconds=0.05)
    assert Worker(service, WorkerRegistry(factory), registry, config).run() == 0
    return factory, settings.home


def previews(factory: Any, home: Path) -> list[Path]:
    from sqlalchemy import select

    from photo_pipeline.db import read_session
    from photo_pipeline.db.schema import renditions

    with read_session(factory) as session:
        rows = session.scalars(select(renditions.c.path).where(renditions.c.kind == "preview"))
        return [home / path for path in rows]


def bare_loop(paths: list[Path]) -> dict[str, float]:
    """The same dlib calls, nothing else."""
    import dlib
    from PIL import Image

    from photo_pipeline.media.faces import (
        EMBEDDING_MODEL,
        LANDMARKS_MODEL,
        UPSAMPLE_UP_TO,
        model_folder,
    )

    folder = model_folder()
    assert folder is not None
    started, cpu = time.perf_counter(), time.process_time()
    detector = dlib.get_frontal_face_detector()
    landmarks = dlib.shape_predictor(str(folder / LANDMARKS_MODEL))
    embedder = dlib.face_recognition_model_v1(str(folder / EMBEDDING_MODEL))
    found = 0
    for path in paths:
        with Image.open(path) as image:
            rgb = np.asarray(image.convert("RGB"))
        upsample = 1 if max(rgb.shape[:2]) <= UPSAMPLE_UP_TO else 0
        for box in detector(rgb, upsample):
            embedder.compute_face_descriptor(rgb, landmarks(rgb, box))
            found += 1
    return {"faces": found, "wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}


def faces_job(factory: Any, home: Path) -> dict[str, float]:
    """The faces job from nothing found, one item thread, in an in-process worker."""
    from sqlalchemy import delete, func, select

    from photo_pipeline.db import read_session, write_session
    from photo_pipeline.db.schema import face_scans, faces, people
    from photo_pipeline.jobs import JobService
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry
    from photo_pipeline.media import faces as media_faces
    from photo_pipeline.pipeline.faces.job import enqueue_faces

    with write_session(factory) as session:
        for table in (faces, face_scans, people):
            session.execute(delete(table))
    media_faces._per_thread.__dict__.clear()  # the job loads its models, as a worker does
    service = JobService(factory)
    enqueue_faces(service, home)
    config = WorkerConfig(job_types=("faces",), burst=True, concurrency=1, poll_seconds=0.05)
    started, cpu = time.perf_counter(), time.process_time()
    assert Worker(service, WorkerRegistry(factory), registry, config).run() == 0
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    with read_session(factory) as session:
        found = session.scalar(select(func.count()).select_from(faces)) or 0
    return {"faces": found, "wall": wall, "cpu": cpu}


def throughput_section(rounds: int) -> None:
    h.heading("1. faces per second, one core: the faces job against a bare dlib loop")
    factory, home = make_library()
    paths = previews(factory, home)
    h.note(f"{len(paths)} previews (the test photos and their mirror images, 1440 px)")
    runs = h.alternate(
        {"faces job": lambda: faces_job(factory, home), "bare dlib loop": lambda: bare_loop(paths)},
        rounds,
        order="mirror",
    )
    rows = []
    for name, results in runs.items():
        best = min(results, key=lambda r: r["wall"])
        rows.append([name, best["faces"], f"{best['faces'] / best['wall']:.2f}",
                     f"{best['faces'] / best['cpu']:.2f}", f"{best['wall']:.2f}"])  # fmt: skip
    h.table(["loop", "faces", "faces/s (wall)", "faces per CPU-s", "best wall s"], rows)
    job, bare = runs["faces job"], runs["bare dlib loop"]
    wall = h.median_ratio(
        ((j["faces"] / j["wall"], b["faces"] / b["wall"]) for j, b in zip(job, bare, strict=True)),
        name="job / bare, faces/s (wall)",
    )
    cpu = h.median_ratio(
        ((j["faces"] / j["cpu"], b["faces"] / b["cpu"]) for j, b in zip(job, bare, strict=True)),
        name="job / bare, faces per CPU-s",
    )
    photos = h.median_ratio(
        ((b["cpu"], j["cpu"]) for j, b in zip(job, bare, strict=True)),
        name="job / bare, photos per CPU-s",
    )
    h.table(["ratio (median of rounds; target >= 0.9)", "value"],
            [["job / bare, faces/s (wall)", f"{wall:.2f}x"],
             ["job / bare, faces per CPU-s", f"{cpu:.2f}x"],
             ["job / bare, photos per CPU-s (the same previews)", f"{photos:.2f}x"]])  # fmt: skip
    h.note("the bare loop finds faces the job skips (graphics, low scores, blurred); the "
           "job's count is what it keeps, so its rate is per face kept")  # fmt: skip


def synthetic_library(size: int, seed: int = 7) -> Any:
    """A SQLite database of ``size`` assets with one synthetic face each: people of 10
    faces (distances within about 0.25, between about 1.3) and a tenth strangers."""
    from datetime import UTC, datetime

    from photo_pipeline.db import open_database

    path = ROOT / f"grouping-{size}.sqlite3"
    path.unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    factory = open_database(url)
    hashes = [random.Random(seed + n).getrandbits(63) for n in range(size)]
    bulk_load(url, "assets", ASSET_COLUMNS,
              asset_rows(size, hashes, [True] * size, [-1] * size))  # fmt: skip
    rng = np.random.default_rng(seed)
    strangers = size // 10
    people_count = (size - strangers) // 10
    centres = rng.normal(0, 0.08, (people_count + strangers, 128)).astype(np.float32)
    owner = np.concatenate([np.repeat(np.arange(people_count), 10),
                            people_count + np.arange(size - people_count * 10)])  # fmt: skip
    rng.shuffle(owner)
    vectors = centres[owner] + rng.normal(0, 0.015, (size, 128)).astype(np.float32)
    now = int((datetime.now(UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1e6)
    bulk_load(
        url,
        "faces",
        "id, asset_id, ordinal, box_left, box_top, box_width, box_height, landmarks, "
        "embedding, score, sharpness, not_face, created_at",
        ((n + 1, n + 1, 0, 0.4, 0.3, 0.2, 0.2, "[]", vectors[n].tobytes(), 1.0, 0.5, 0, now)
         for n in range(size)),
    )  # fmt: skip
    return factory, url, vectors, owner


def pair_scores(factory: Any, owner: np.ndarray[Any, Any]) -> tuple[float, float]:
    """Precision and recall of same-person pairs against the planted identities: of the
    pairs of faces the grouping put in one person, how many are one planted person; of
    the planted pairs, how many the grouping put together (a face left waiting misses
    all of its pairs)."""
    from sqlalchemy import select

    from photo_pipeline.db import read_session
    from photo_pipeline.db.schema import faces

    with read_session(factory) as session:
        rows = session.execute(
            select(faces.c.id, faces.c.person_id).where(faces.c.id <= len(owner))
        ).all()
    ids = np.array([row.id - 1 for row in rows if row.person_id is not None], dtype=np.int64)
    persons = np.array([row.person_id for row in rows if row.person_id is not None])

    def pairs(labels: np.ndarray[Any, Any]) -> int:
        counts = np.unique(labels, return_counts=True)[1].astype(np.int64)
        return int((counts * (counts - 1) // 2).sum())

    planted = pairs(owner)
    if len(ids) == 0:
        return 1.0, 0.0
    together = pairs(persons)
    both = pairs(owner[ids].astype(np.int64) * (int(persons.max()) + 1) + persons)
    return (both / together if together else 1.0), (both / planted if planted else 1.0)


def grouping_section(sizes: list[int]) -> None:
    from sqlalchemy import func, select

    from photo_pipeline.db import read_session
    from photo_pipeline.db.schema import faces, people
    from photo_pipeline.pipeline.faces.grouping import group_faces

    h.heading("2. grouping a whole library, then 100 new faces (SQLite)")
    rows, seconds = [], {}
    for size in sizes:
        factory, url, vectors, owner = synthetic_library(size)
        started = time.perf_counter()
        done = group_faces(factory)
        whole = time.perf_counter() - started
        # 100 new faces of people already there: the everyday run after an import.
        from bench._scale_catalogue import bulk_load as load

        now = 0
        hashes = [random.Random(size + n).getrandbits(63) for n in range(100)]
        load(url, "assets", ASSET_COLUMNS, asset_rows(100, hashes, [True] * 100, [-1] * 100,
                                                      first_id=size + 1))  # fmt: skip
        rng = np.random.default_rng(1)
        picks = rng.integers(0, size, 100)
        load(url, "faces",
             "id, asset_id, ordinal, box_left, box_top, box_width, box_height, landmarks, "
             "embedding, score, sharpness, not_face, created_at",
             ((size + n + 1, size + n + 1, 0, 0.4, 0.3, 0.2, 0.2, "[]",
               (vectors[picks[n]] + rng.normal(0, 0.015, 128).astype(np.float32)).tobytes(),
               1.0, 0.5, 0, now) for n in range(100)))  # fmt: skip
        precision, recall = pair_scores(factory, owner)
        started = time.perf_counter()
        again = group_faces(factory)
        incremental = time.perf_counter() - started
        with read_session(factory) as session:
            made = session.scalar(select(func.count()).select_from(people))
            placed = session.scalar(
                select(func.count()).select_from(faces).where(faces.c.person_id.is_not(None))
            )
        seconds[size] = whole
        rows.append([f"{size:,}", f"{whole:.1f}", f"{1000 * whole / size:.2f}", made,
                     f"{placed:,}", done.waiting, f"{precision:.4f}", f"{recall:.4f}",
                     f"{incremental:.2f}", again.placed])  # fmt: skip
    h.table(["faces", "whole s", "ms / face", "people made", "faces placed", "waiting",
             "pair precision", "pair recall", "+100 new s", "new placed"], rows)  # fmt: skip
    if len(sizes) == 2:
        small, large = sizes
        growth = h.ratio(seconds[large], seconds[small], name="grouping large / small")
        h.table(["ratio", "value"],
                [[f"whole {large:,} / {small:,} (linear: {large // small}x)", growth]])  # fmt: skip
    h.note("planted: people of 10 faces and strangers; the grouping should make one person "
           "per planted person and leave the strangers waiting")  # fmt: skip


def body(args: Namespace) -> int:
    if args.grouping_only:
        grouping_section([2_000, 20_000] if args.quick else [10_000, 100_000])
        return 0
    from photo_pipeline.media.faces import missing_models

    reason = missing_models()
    if reason is not None or not (IMAGES / "t1.jpg").is_file():
        print(reason or f"no face images in {IMAGES}: run `make face-images`", file=sys.stderr)
        return 2
    throughput_section(1 if args.quick else 3)
    grouping_section([2_000, 20_000] if args.quick else [10_000, 100_000])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="one round; 2k and 20k faces")
    parser.add_argument("--grouping-only", action="store_true", help="only the grouping section")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
