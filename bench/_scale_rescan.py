"""A rescan that finds nothing changed: small real files, catalogued as they are by
synthetic rows, then a real scan job run by a worker (files per second)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from bench._databases import fresh_database
from bench._scale_catalogue import FILE_COLUMNS, bulk_load, fix_sequences, micros


def rescan(kind: str, count: int, workdir: Path) -> dict[str, float]:
    """``count`` small files on disk, catalogued as they are (synthetic rows with
    their size, mtime and inode), then a real scan job run by a worker: files/s."""
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs import JobService
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry
    from photo_pipeline.pipeline.ingest import scan
    from photo_pipeline.pipeline.library.catalog import Catalog

    with fresh_database(kind, f"bench_scale_{count}") as url:
        factory = open_database(url)
        root = workdir / f"rescan-{kind}"
        now = micros(datetime.now(UTC))
        rows = []
        for n in range(count):
            folder = root / f"{n // 1000:03d}"
            if n % 1000 == 0:
                folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"IMG_{n:06d}.jpg"
            path.write_bytes(b"x")
            info = path.stat()
            rows.append((n + 1, 1, f"{n // 1000:03d}/IMG_{n:06d}.jpg", info.st_size,
                         info.st_mtime_ns, info.st_ino, "present", None, now, now))  # fmt: skip
        source = Catalog(factory).add_source(root)
        assert source["id"] == 1
        bulk_load(url, "files", FILE_COLUMNS, rows)
        fix_sequences(url)
        service = JobService(factory)
        started = time.perf_counter()
        job = service.enqueue(
            scan.JOB_TYPE,
            lock=scan.lock_for(1),
            params={"sources": [{"id": 1, "path": source["path"]}]},
        )
        config = WorkerConfig(job_types=(scan.JOB_TYPE,), burst=True, executor="thread")
        Worker(service, WorkerRegistry(factory), registry, config).run()
        seconds = time.perf_counter() - started
        done = service.get(job["id"])
        assert done["state"] == "succeeded", done
        factory.kw["bind"].dispose()
        return {"rescan files": count, "rescan s": seconds, "rescan files/s": count / seconds}
