"""The calls bench.scale times at every size, the sizes called in turns (so that a load
drifting over the minutes of a run does not drift the ratio of the largest size to the
smallest): the API listings through the app (FastAPI TestClient, the real routes, deep
cursors walked to), and a render with nothing to do (every asset given its renditions'
rows; the stale-asset lookup and a whole render job run by a burst worker)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from sqlalchemy import create_engine, text

from bench import _harness as h


def in_turns(
    timed: dict[int, Callable[[], object]], repeat: int, budget_ms: float = 5000
) -> dict[int, float]:
    """The median ms of each size's call, called in turns (one size after the other,
    ``repeat`` rounds, after one warm-up each): each round compares the sizes at one
    moment, so a load that drifts over minutes does not drift their ratio. A call of
    several seconds is timed fewer times: its median would take minutes."""

    def ms(call: Callable[[], object]) -> float:
        started = time.perf_counter()
        call()
        return (time.perf_counter() - started) * 1000

    done = h.alternate(
        {size: lambda c=call: ms(c) for size, call in timed.items()},
        repeat,
        warmup=1,
        enough=lambda found: any(sum(t) >= budget_ms for t in found.values()),
    )
    return {size: statistics.median(t) for size, t in done.items()}


# ── API listings ───────────────────────────────────────────────────────────────
TOKEN = "bench-token-" + "x" * 40


def api_client(url: str, home: Path):
    from fastapi.testclient import TestClient

    from photo_pipeline.api import create_app
    from photo_pipeline.config import Settings
    from photo_pipeline.pipeline.library import open_library

    settings = replace(
        Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)}), database_url=url, api_token=TOKEN
    )
    lib = open_library(settings)
    client = TestClient(create_app(lib))
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client, lib


def api_requests(client) -> dict[str, tuple[str, dict]]:
    """The calls to time in one library (its deep cursors walked to)."""

    def get(path: str, **params) -> dict:
        answer = client.get(path, params=params)
        assert answer.status_code == 200, (path, params, answer.text[:300])
        return answer.json()

    cursor = None
    for _ in range(50):
        cursor = get("/api/assets", **({"cursor": cursor} if cursor else {}))["next_cursor"]
    # Page 51 of each other order (library.ordering): a keyset walk of its own index.
    sorted_cursors = {}
    for sort in ("taken", "added"):
        at = None
        for _ in range(50):
            at = get("/api/assets", sort=sort, **({"cursor": at} if at else {}))["next_cursor"]
        sorted_cursors[sort] = at
    # Pages of 50 groups: the smallest library holds a few pages of them.
    near_cursor = None
    for _ in range(2):
        page = get(
            "/api/duplicates",
            kind="near",
            limit=50,
            **({"cursor": near_cursor} if near_cursor else {}),
        )
        near_cursor = page["near_next_cursor"] or near_cursor
    return {
        "/api/assets first page": ("/api/assets", {}),
        "/api/assets page 51": ("/api/assets", {"cursor": cursor}),
        "/api/assets sort=taken page 51": (
            "/api/assets",
            {"sort": "taken", "cursor": sorted_cursors["taken"]},
        ),
        "/api/assets sort=added page 51": (
            "/api/assets",
            {"sort": "added", "cursor": sorted_cursors["added"]},
        ),
        "/api/assets sort=taken one month": (
            "/api/assets",
            {"sort": "taken", "taken_from": "2020-06-01", "taken_to": "2020-06-30"},
        ),
        "/api/assets camera=canon": ("/api/assets", {"camera": "canon"}),
        "/api/assets place=paris": ("/api/assets", {"place": "paris"}),
        "/api/assets one month": (
            "/api/assets",
            {"taken_from": "2020-06-01", "taken_to": "2020-06-30"},
        ),
        "/api/assets has_gps=true": ("/api/assets", {"has_gps": "true"}),
        "/api/assets has_gps=false": ("/api/assets", {"has_gps": "false"}),
        "/api/assets duplicates=exact": ("/api/assets", {"duplicates": "exact"}),
        "/api/assets duplicates=near": ("/api/assets", {"duplicates": "near"}),
        # Search (pipeline.library.search): words from the index, dates and the listing's
        # order; a common word, a prefix, a word of one asset's file name, no match.
        "/api/search paris 2019": ("/api/search", {"q": "paris 2019"}),
        "/api/search canon": ("/api/search", {"q": "canon"}),
        "/api/search pari (prefix)": ("/api/search", {"q": "pari"}),
        "/api/search make3 model": ("/api/search", {"q": "make3 model"}),
        "/api/search one file name": ("/api/search", {"q": "00004242"}),
        "/api/search june 2020 paris photo": ("/api/search", {"q": "june 2020 paris photo"}),
        "/api/search no match": ("/api/search", {"q": "zanzibar"}),
        # A tag's level and an album's name (bench._scale_catalogue.curate), alone and
        # with a place.
        "/api/search holiday (tag)": ("/api/search", {"q": "holiday"}),
        "/api/search summer walks (album)": ("/api/search", {"q": "summer walks"}),
        "/api/search holiday paris": ("/api/search", {"q": "holiday paris"}),
        "/api/assets/{id}": ("/api/assets/1", {}),
        "/api/duplicates?kind=near": ("/api/duplicates", {"kind": "near", "limit": 50}),
        "/api/duplicates near page 3": (
            "/api/duplicates",
            {"cursor": near_cursor, "limit": 50} if near_cursor else {"kind": "near"},
        ),
        "/api/duplicates?kind=exact": ("/api/duplicates", {"kind": "exact", "limit": 50}),
        "/api/duplicates (exact+near)": ("/api/duplicates", {"limit": 50}),
        # The map at three zooms (pipeline.library.map): the world and a region from
        # the map_cells summary, a street's view counted from ix_assets_map_cell_id.
        "/api/map world zoom 2": ("/api/map", {"bbox": "-180,-85,180,85", "zoom": 2}),
        "/api/map paris zoom 8": ("/api/map", {"bbox": "0.9,48.0,3.8,49.7", "zoom": 8}),
        "/api/map paris zoom 14": (
            "/api/map",
            {"bbox": "2.31,48.835,2.39,48.865", "zoom": 14},
        ),
        # The timeline (pipeline.library.timeline): every day from the timeline_days
        # summary, a camera's or a place's from timeline_cameras / timeline_places, one
        # month's from timeline_days; other filters counted from the matches.
        "/api/timeline": ("/api/timeline", {}),
        "/api/timeline order=oldest": ("/api/timeline", {"order": "oldest"}),
        "/api/timeline camera=canon": ("/api/timeline", {"camera": "canon"}),
        "/api/timeline place=paris": ("/api/timeline", {"place": "paris"}),
        "/api/timeline one month": (
            "/api/timeline",
            {"taken_from": "2020-06-01", "taken_to": "2020-06-30"},
        ),
        "/api/timeline camera+place (counted)": (
            "/api/timeline",
            {"camera": "canon", "place": "paris"},
        ),
        "/api/assets sort=taken-desc one month": (
            "/api/assets",
            {"sort": "taken-desc", "taken_from": "2020-06-01", "taken_to": "2020-06-30"},
        ),
        **filter_requests(),
        "/api/places": ("/api/places", {}),
        "/api/jobs": ("/api/jobs", {}),
        "/api/jobs?type=verify": ("/api/jobs", {"type": "verify"}),
        "/api/jobs?state=failed": ("/api/jobs", {"state": "failed"}),
    }


# The filters of a real library's shape (``--shape skewed``: bench._scale_catalogue.ERAS
# and on), first pages in each order the web UI asks for: the default (taken-utc), and
# the timeline's taken / taken-desc.
FILTERS = {
    "type=live": {"type": "live"},
    "camera=iphone 15": {"camera": "iphone 15"},
    "camera=ricoh (1% of a year)": {"camera": "ricoh"},
    "place=iceland": {"place": "iceland"},
    "duplicates=exact": {"duplicates": "exact"},
    "duplicates=near": {"duplicates": "near"},
}


def filter_requests() -> dict[str, tuple[str, dict]]:
    found = {}
    for name, params in FILTERS.items():
        for sort in ("taken-utc", "taken", "taken-desc"):
            found[f"/api/assets filter {name} sort={sort}"] = (
                "/api/assets",
                {**params, "sort": sort},
            )
    return found


def api_calls(
    urls: dict[int, str], homes: dict[int, Path], repeat: int, only: tuple[str, ...] = ()
):
    """Each listing's median per size, the sizes called in turns (``only``: the calls
    whose names start so, when given)."""
    opened = {size: api_client(url, homes[size]) for size, url in urls.items()}
    requests = {size: api_requests(client) for size, (client, _) in opened.items()}

    def call(client, path: str, params: dict) -> Callable[[], object]:
        def get() -> object:
            answer = client.get(path, params=params)
            assert answer.status_code == 200, (path, params, answer.text[:300])
            return answer

        return get

    medians: dict[int, dict[str, float]] = {size: {} for size in urls}
    first = next(iter(urls))
    for name in requests[first]:
        if only and not name.startswith(only):
            continue
        timed = {
            size: call(opened[size][0], *requests[size][name]) for size in urls
        }  # fmt: skip
        for size, ms in in_turns(timed, repeat).items():
            medians[size][name] = ms
    for client, lib in opened.values():
        client.close()
        lib.close()
    return medians


# ── a render with nothing to do ────────────────────────────────────────────────
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
