"""A render with nothing to do, at every size: every asset given its renditions (rows
only), then the stale-asset lookup and a whole render job run by a burst worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text

from bench._scale_turns import in_turns


def give_renditions(url: str, home: Path) -> str:
    """Every asset given both renditions with the library's settings (rows only, as
    the render job records them); returns the settings' fingerprint."""
    from photo_pipeline.config import Settings
    from photo_pipeline.pipeline.renditions import render
    from photo_pipeline.pipeline.renditions.rows import KINDS

    settings = render.render_settings(Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)}))
    fingerprint = settings.fingerprint()
    engine = create_engine(url)
    with engine.begin() as conn:
        for kind in KINDS:
            conn.execute(
                text(
                    "INSERT INTO renditions (asset_id, kind, path, format, width, height, "
                    f"bytes, fingerprint, created_at) SELECT id, '{kind}', 'renditions/' || "
                    f"content_hash || '-{kind}.webp', 'webp', 300, 200, 20000, "
                    ":fingerprint, created_at FROM assets"
                ),
                {"fingerprint": fingerprint},
            )
        conn.execute(
            text("UPDATE assets SET renditions_fingerprint = :fingerprint"),
            {"fingerprint": fingerprint},
        )
    if engine.dialect.name == "postgresql":
        # The one-statement UPDATE of every asset leaves a dead row version behind each
        # (the app sets the markers a batch at a time): vacuumed, as autovacuum would.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE assets"))
            conn.execute(text("VACUUM ANALYZE renditions"))
    engine.dispose()
    return fingerprint


def noop_render(urls: dict[int, str], homes: dict[int, Path], repeat: int):
    """With every asset rendered: the stale assets looked up (``Renditions.to_render``)
    and a whole render job run by a burst worker, finding nothing to do; the sizes in
    turns."""
    from photo_pipeline.config import Settings
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs import JobService
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry
    from photo_pipeline.pipeline.renditions import render
    from photo_pipeline.pipeline.renditions.rows import Renditions

    fingerprints = {size: give_renditions(url, homes[size]) for size, url in urls.items()}
    factories = {size: open_database(url) for size, url in urls.items()}
    for size, factory in factories.items():
        assert Renditions(factory).to_render(fingerprints[size]) == [], "stale assets found"

    def lookup(size: int) -> Callable[[], object]:
        return lambda: Renditions(factories[size]).to_render(fingerprints[size])

    def job(size: int) -> Callable[[], object]:
        home, factory = homes[size], factories[size]
        settings = render.render_settings(Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)}))
        service = JobService(factory)

        def run() -> object:
            queued = render.enqueue_render(service, home, settings).job
            config = WorkerConfig(job_types=(render.JOB_TYPE,), burst=True, executor="thread")
            Worker(service, WorkerRegistry(factory), registry, config).run()
            assert service.get(queued["id"])["state"] == "succeeded"
            assert service.progress(queued["id"])["total"] == 0, "the render found work"
            return queued

        return run

    looked_up = in_turns({size: lookup(size) for size in urls}, repeat)
    whole = in_turns({size: job(size) for size in urls}, repeat)
    for factory in factories.values():
        factory.kw["bind"].dispose()
    return {
        size: {
            "no-op render: stale assets looked up": looked_up[size],
            "no-op render: whole job": whole[size],
        }
        for size in urls
    }
