"""Benchmark the library at 10k, 100k and 1M assets: listings, duplicates, jobs and
`similar`, on synthetic catalogue rows (never real files).

Run with ``.venv/bin/python -m bench.scale [--sizes 10000,100000,1000000]
[--databases sqlite,postgresql] [--repeat 5] [--similar-only] [--baseline SRC]``.
Per database it:

1. builds, for each size, a fresh library database (the app's migrations) and
   bulk-loads synthetic rows: ``N`` assets (20 cameras, 30 places, 70% with GPS,
   captures spread over ten years), one present file each plus a second for 3%
   (exact duplicates) and a missing one for 1%, ``N/10`` finished jobs of five
   types, and 64-bit pHashes: uniform random, except 5% of the assets planted in
   clusters of 2-5 around an original (each copy 0-12 bits from it, smaller than the
   original);
2. runs `similar`'s full regroup in a child process (wall and CPU time, peak RSS of
   that process), then again with nothing new (incremental), then after adding 100
   assets (10 planted copies of existing originals and 90 random). ``--baseline SRC``
   runs every one of these with the code under ``SRC`` too (an older checkout's
   ``src``, e.g. from ``git worktree add``), on the same catalogue: full regroups
   baseline, current, baseline, current (each one's best is shown); then the
   baseline's nothing-new and +100, then the current code's (after a full run of
   its own: the baseline does not keep the current code's chunks). The first full
   regroup of each size runs before step 3 lists its groups, the rest after it;
3. with every size built, times every API listing through the app (FastAPI
   TestClient, the real routes), then gives every asset its renditions (rows) and
   times a render with nothing to do (the stale assets looked up, and a whole render
   job run by a burst worker): the median of ``--repeat`` calls after one warm-up, the
   sizes called in turns, so that a load drifting over the minutes of the run does
   not drift their ratios;
4. scores the near-duplicate groups against the planted clusters: precision and
   recall over pairs of assets (a pair found is right when both lie in one planted
   cluster). At 10k and 100k it scores the old grouping too (connected components
   within 12 bits, chains included) on the same hashes.

``--similar-only`` runs steps 1, 2 and 4 (no jobs, no API calls): a million-asset
catalogue builds in about a minute per database.

It prints one table per database: each call's median per size and the ratio of the
largest size to the smallest (the target for paged calls: at most 1.5). PostgreSQL
tables are ANALYZEd after the load and after the first full regroup (autovacuum would
do it soon after); SQLite's are not (the app never runs ANALYZE). Reads share 2 cores
with the database server and other work: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get(
    "PHOTO_PIPELINE_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
TOKEN = "bench-token-" + "x" * 40
CAMERAS = [(f"Make{n % 7}", f"Model {n}") for n in range(19)] + [("Canon", "EOS R5")]
PLACES = [(f"Q{chr(65 + n)}", f"Country {n}", f"Region {n}", f"City {n}") for n in range(26)] + [
    ("FR", "France", "Île-de-France", "Paris")
]
JOB_TYPES = ["scan", "render", "similar", "organize", "verify"]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
START = datetime(2015, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=3650)
PLANTED_SHARE = 0.05
MAX_PLANTED_BITS = 12


def micros(when: datetime) -> int:
    return (when - EPOCH) // timedelta(microseconds=1)


# ── synthetic rows ─────────────────────────────────────────────────────────────
def flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted_hashes(size: int, seed: int) -> tuple[list[int], list[int], list[bool]]:
    """Hashes for assets 1..size (index 0 is asset 1), the planted cluster of each
    (-1: none) and whether it is a cluster's original."""
    rng = random.Random(seed)
    hashes = [rng.getrandbits(64) for _ in range(size)]
    cluster = [-1] * size
    original = [False] * size
    slots = list(range(size))
    rng.shuffle(slots)
    planted, taken, number = int(size * PLANTED_SHARE), 0, 0
    while taken + 2 <= planted:
        members = slots[taken : taken + min(rng.randint(2, 5), planted - taken)]
        taken += len(members)
        center = hashes[members[0]]
        original[members[0]] = True
        for member in members:
            cluster[member] = number
        for member in members[1:]:
            hashes[member] = flip(center, rng.randint(0, MAX_PLANTED_BITS), rng)
        number += 1
    return hashes, cluster, original


def asset_rows(size: int, hashes, original, cluster, first_id: int = 1, seed: int = 0, age=1):
    rng = random.Random(seed + 1)
    # Catalogued a day ago (`similar` re-pairs assets updated shortly before its last run).
    now = micros(datetime.now(UTC) - timedelta(days=age))
    for n in range(size):
        asset_id = first_id + n
        when = START + SPAN * (n / size) + timedelta(minutes=rng.randint(0, 600))
        offset = rng.choice((0, 60, 120, -300, 540))
        utc = when - timedelta(minutes=offset)
        make, model = CAMERAS[rng.randrange(len(CAMERAS))]
        code, country, region, city = PLACES[rng.randrange(len(PLACES))]
        gps = rng.random() < 0.7
        width, height = (
            (6000, 4000) if original[n] else (2000, 1500) if cluster[n] >= 0 else (4000, 3000)
        )
        yield (
            asset_id,
            f"{asset_id:064x}",
            2_000_000 + n % 1000,
            "jpeg",
            "image/jpeg",
            width,
            height,
            1,
            when.replace(tzinfo=None).isoformat(),
            offset,
            micros(utc),
            "exif_original",
            make,
            model,
            48.85 if gps else None,
            2.35 if gps else None,
            code,
            country,
            region,
            city,
            micros(utc),
            f"{hashes[n]:016x}",
            now,
            now,
        )


ASSET_COLUMNS = (
    "id, content_hash, size, format, mime, width, height, orientation, taken_local, "
    "taken_offset_minutes, taken_utc, taken_source, make, model, gps_latitude, "
    "gps_longitude, country_code, country, region, city, taken_order, phash, created_at, "
    "updated_at"
)
FILE_COLUMNS = "id, source_id, path, size, mtime_ns, inode, state, asset_id, created_at, updated_at"
JOB_COLUMNS = (
    "seq, id, job_type, state, priority, params, request_hash, waiting_for, attempts, "
    "max_attempts, interruptions, run_after, fencing_token, version, created_at, updated_at, "
    "finished_at"
)


def file_rows(size: int, first_id: int = 1, first_file: int = 1, seed: int = 0):
    rng = random.Random(seed + 2)
    now = micros(datetime.now(UTC))
    file_id = first_file
    for n in range(size):
        asset_id = first_id + n
        copies = ["present"]
        roll = rng.random()
        if roll < 0.03:
            copies.append("present")
        elif roll < 0.04:
            copies.append("missing")
        for copy, state in enumerate(copies):
            yield (file_id, 1, f"p/{asset_id:08d}-{copy}.jpg", 2_000_000, now, file_id, state,
                   asset_id, now, now)  # fmt: skip
            file_id += 1


def job_rows(count: int):
    now = micros(datetime.now(UTC))
    for seq in range(1, count + 1):
        state = "failed" if seq % 50 == 0 else "succeeded"
        yield (seq, str(uuid.UUID(int=seq)), JOB_TYPES[seq % len(JOB_TYPES)], state, 0, "{}",
               "x", 0, 1, 3, 0, now, 1, 1, now, now, now)  # fmt: skip


def bulk_load(url: str, table: str, columns: str, rows) -> None:
    engine = create_engine(url)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if engine.dialect.name == "postgresql":
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join("?" * len(columns.split(",")))
            batch = []
            for row in rows:
                batch.append(row)
                if len(batch) == 50_000:
                    cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
                    batch.clear()
            if batch:
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
        raw.commit()
    finally:
        raw.close()
        engine.dispose()


def fix_sequences(url: str) -> None:
    engine = create_engine(url)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            for table, column in (("assets", "id"), ("files", "id"), ("jobs", "seq")):
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                        f"(SELECT max({column}) FROM {table}))"
                    )
                )
            conn.execute(text("ANALYZE"))
    engine.dispose()


def analyze(url: str) -> None:
    """PostgreSQL's statistics gathered (SQLite's are not: the app never asks)."""
    engine = create_engine(url)
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text("ANALYZE"))
    engine.dispose()


def build(url: str, size: int, seed: int, jobs: bool = True) -> tuple[list[int], list[int]]:
    from photo_pipeline.db import open_database

    open_database(url).kw["bind"].dispose()
    hashes, cluster, original = planted_hashes(size, seed)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sources (id, path, added_at) VALUES (1, '/bench', 0)"))
    engine.dispose()
    bulk_load(url, "assets", ASSET_COLUMNS, asset_rows(size, hashes, original, cluster, seed=seed))
    bulk_load(url, "files", FILE_COLUMNS, file_rows(size, seed=seed))
    if jobs:
        bulk_load(url, "jobs", JOB_COLUMNS, job_rows(max(size // 10, 100)))
    fix_sequences(url)
    return hashes, cluster


def add_assets(url: str, size: int, count: int, hashes: list[int], seed: int) -> None:
    """``count`` new assets after the ``size`` there are: a tenth planted copies of
    the catalogue's first hashes, the rest random."""
    rng = random.Random(seed + 3)
    new = [
        flip(hashes[rng.randrange(len(hashes))], rng.randint(0, 4), rng) if n < count // 10
        else rng.getrandbits(64)
        for n in range(count)
    ]  # fmt: skip
    engine = create_engine(url)
    with engine.connect() as conn:
        last_file = conn.execute(text("SELECT max(id) FROM files")).scalar()
    engine.dispose()
    flags = [False] * count
    rows = asset_rows(count, new, flags, [-1] * count, first_id=size + 1, seed=seed + 9, age=0)
    bulk_load(url, "assets", ASSET_COLUMNS, rows)
    files = file_rows(count, first_id=size + 1, first_file=last_file + 1, seed=seed)
    bulk_load(url, "files", FILE_COLUMNS, files)
    fix_sequences(url)


# ── similar, in a child process (its own peak RSS) ────────────────────────────
def similar_child(url: str, full: bool) -> None:
    from sqlalchemy.orm import sessionmaker

    import photo_pipeline
    from photo_pipeline.db import create_database_engine
    from photo_pipeline.pipeline.similar import regroup

    # No migration: the catalogue is at the current code's head, which a baseline's
    # migrations do not know.
    factory = sessionmaker(create_database_engine(url), expire_on_commit=False)
    started, cpu = time.perf_counter(), time.process_time()
    done = regroup(factory, 12, full=full)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    code = str(Path(photo_pipeline.__file__).parent)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak, "code": code,
                      **done.__dict__}))  # fmt: skip


def run_similar(url: str, full: bool, code: str | None = None) -> dict:
    """One regroup in a child process, with the code under ``code`` (a ``src``
    folder) if given, else the current code."""
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run(
        [sys.executable, __file__, "--similar-child", url, "--full" if full else "--incremental"],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    done = json.loads(out.stdout.strip().splitlines()[-1])
    if code:
        assert done["code"].startswith(str(Path(code).resolve())), (done["code"], code)
    return done


def similar_section(
    url: str, size: int, hashes: list[int], cluster: list[int], baseline: str | None
) -> dict[str, object]:
    """`similar` in full, with nothing new and with 100 new assets; precision and
    recall of the full regroup's groups. With a baseline, the same for it, its full
    regroups interleaved with the current code's."""
    result: dict[str, object] = {}
    runs = [("", None)] if baseline is None else [("baseline ", baseline), ("", None)]
    fulls: dict[str, list[dict]] = {label: [] for label, _ in runs}
    for _ in range(2 if baseline else 1):
        for label, code in runs:
            full = run_similar(url, full=True, code=code)
            full["scores"] = pair_scores(stored_groups(url), cluster)
            fulls[label].append(full)
    for label, _code in runs:
        done = fulls[label]
        result[f"{label}similar full s"] = min(f["seconds"] for f in done)
        if len(done) > 1:
            result[f"{label}similar full s, each run"] = " / ".join(
                f"{f['seconds']:.1f}" for f in done
            )
        result[f"{label}similar full CPU s"] = min(f["cpu"] for f in done)
        result[f"{label}similar full peak MB"] = max(f["peak_mb"] for f in done)
        result[f"{label}similar radius"] = done[-1]["radius"]
        result[f"{label}similar full candidates"] = done[-1]["examined"]
        result[f"{label}precision"], result[f"{label}recall"] = done[-1]["scores"]
    if size <= 100_000:
        old_precision, old_recall = pair_scores(chained_groups(hashes), cluster)
        result["old precision (chains, 12)"] = old_precision
        result["old recall (chains, 12)"] = old_recall
    added_so_far = 0
    for label, code in runs:
        if baseline and not label:
            run_similar(url, full=True)  # the baseline's runs dropped this code's chunks
        unchanged = run_similar(url, full=False, code=code)
        result[f"{label}similar nothing new s"] = unchanged["seconds"]
        result[f"{label}similar nothing new mode"] = unchanged["mode"]
        add_assets(url, size + added_so_far, 100, hashes, seed=size + added_so_far)
        added_so_far += 100
        added = run_similar(url, full=False, code=code)
        result[f"{label}similar +100 s"] = added["seconds"]
        result[f"{label}similar +100 mode"] = added["mode"]
        result[f"{label}similar +100 candidates"] = added["examined"]
        result[f"{label}similar +100 peak MB"] = added["peak_mb"]
    return result


# ── precision and recall on planted clusters ──────────────────────────────────
def pair_scores(groups: dict[int, list[int]], cluster: list[int]) -> tuple[float, float]:
    """Precision and recall over pairs of assets (ids are 1-based)."""
    truth_sizes: dict[int, int] = {}
    for c in cluster:
        if c >= 0:
            truth_sizes[c] = truth_sizes.get(c, 0) + 1
    truth = sum(s * (s - 1) // 2 for s in truth_sizes.values())
    found = right = 0
    for members in groups.values():
        found += len(members) * (len(members) - 1) // 2
        by_cluster: dict[int, int] = {}
        for asset_id in members:
            c = cluster[asset_id - 1] if asset_id - 1 < len(cluster) else -1
            if c >= 0:
                by_cluster[c] = by_cluster.get(c, 0) + 1
        right += sum(s * (s - 1) // 2 for s in by_cluster.values())
    return (right / found if found else 1.0), (right / truth if truth else 1.0)


def stored_groups(url: str) -> dict[int, list[int]]:
    engine = create_engine(url)
    groups: dict[int, list[int]] = {}
    with engine.connect() as conn:
        for asset_id, group_id in conn.execute(
            text("SELECT asset_id, group_id FROM near_duplicates")
        ):
            groups.setdefault(group_id, []).append(asset_id)
    engine.dispose()
    return groups


def chained_groups(hashes: list[int], radius: int = 12) -> dict[int, list[int]]:
    """The old grouping: connected components of pairs within ``radius`` bits."""
    from photo_pipeline.pipeline.near_groups import PairFinder

    left, right, _ = PairFinder(np.array(hashes, dtype=np.uint64), radius).all_pairs()
    parent = list(range(len(hashes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(left.tolist(), right.tolist(), strict=True):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in set(left.tolist()) | set(right.tolist()):
        groups.setdefault(root(i), []).append(i + 1)
    return groups


# ── API calls and a render with nothing to do, timed in turns across the sizes ──
def in_turns(
    timed: dict[int, Callable[[], object]], repeat: int, budget_ms: float = 5000
) -> dict[int, float]:
    """The median ms of each size's call, called in turns (one size after the other,
    ``repeat`` rounds, after one warm-up each): each round compares the sizes at one
    moment, so a load that drifts over minutes does not drift their ratio. A call of
    several seconds is timed fewer times: its median would take minutes."""
    for call in timed.values():
        call()
    times: dict[int, list[float]] = {size: [] for size in timed}
    while min(len(t) for t in times.values()) < repeat and all(
        sum(t) < budget_ms for t in times.values()
    ):
        for size, call in timed.items():
            started = time.perf_counter()
            call()
            times[size].append((time.perf_counter() - started) * 1000)
    return {size: statistics.median(t) for size, t in times.items()}


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
        "/api/assets/{id}": ("/api/assets/1", {}),
        "/api/duplicates?kind=near": ("/api/duplicates", {"kind": "near", "limit": 50}),
        "/api/duplicates near page 3": (
            "/api/duplicates",
            {"cursor": near_cursor, "limit": 50} if near_cursor else {"kind": "near"},
        ),
        "/api/duplicates?kind=exact": ("/api/duplicates", {"kind": "exact", "limit": 50}),
        "/api/duplicates (exact+near)": ("/api/duplicates", {"limit": 50}),
        "/api/jobs": ("/api/jobs", {}),
        "/api/jobs?type=verify": ("/api/jobs", {"type": "verify"}),
        "/api/jobs?state=failed": ("/api/jobs", {"state": "failed"}),
    }


def api_calls(urls: dict[int, str], homes: dict[int, Path], repeat: int):
    """Each listing's median per size, the sizes called in turns."""
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
        timed = {
            size: call(opened[size][0], *requests[size][name]) for size in urls
        }  # fmt: skip
        for size, ms in in_turns(timed, repeat).items():
            medians[size][name] = ms
    for client, lib in opened.values():
        client.close()
        lib.close()
    return medians


def give_renditions(url: str, home: Path) -> str:
    """Every asset given both renditions with the library's settings (rows only, as
    the render job records them); returns the settings' fingerprint."""
    from photo_pipeline.config import Settings
    from photo_pipeline.pipeline import render
    from photo_pipeline.pipeline.renditions import KINDS

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
    from photo_pipeline.pipeline import render
    from photo_pipeline.pipeline.renditions import Renditions

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


# ── a rescan that finds nothing changed ────────────────────────────────────────
def rescan(kind: str, count: int, workdir: Path) -> dict[str, float]:
    """``count`` small files on disk, catalogued as they are (synthetic rows with
    their size, mtime and inode), then a real scan job run by a worker: files/s."""
    from photo_pipeline.jobs import JobService
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry
    from photo_pipeline.pipeline import scan
    from photo_pipeline.pipeline.catalog import Catalog

    url, drop = database_url(kind, workdir, count)
    try:
        from photo_pipeline.db import open_database

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
    finally:
        if drop is not None:
            drop()


# ── one database, one size ─────────────────────────────────────────────────────
def database_url(kind: str, workdir: Path, size: int) -> tuple[str, Callable[[], None] | None]:
    if kind == "sqlite":
        return f"sqlite:///{workdir / f'library-{size}.sqlite3'}", None
    schema = f"bench_scale_{size}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return url.render_as_string(hide_password=False), drop


def one_database(
    kind: str,
    sizes: list[int],
    repeat: int,
    workdir: Path,
    *,
    similar_only: bool = False,
    baseline: str | None = None,
) -> dict[int, dict[str, object]]:
    """Every size built (and grouped by `similar`) first; then the API calls and the
    no-op render, the sizes in turns; then `similar`'s section, size by size."""
    results: dict[int, dict[str, object]] = {size: {} for size in sizes}
    urls: dict[int, str] = {}
    drops: list[Callable[[], None]] = []
    planted: dict[int, tuple[list[int], list[int]]] = {}
    try:
        for size in sizes:
            url, drop = database_url(kind, workdir, size)
            urls[size] = url
            if drop is not None:
                drops.append(drop)
            started = time.perf_counter()
            planted[size] = build(url, size, seed=size, jobs=not similar_only)
            results[size]["build s"] = time.perf_counter() - started
            if not similar_only:
                # Listed with the full regroup's groups, before anything is added, and
                # their statistics (autovacuum gathers them within a minute or so; until
                # then PostgreSQL hashes every group for a page of near groups).
                run_similar(url, full=True)
                analyze(url)
            print(f"{kind} {size}: built, load {os.getloadavg()[0]:.2f}", flush=True)
        if not similar_only:
            homes = {size: workdir / f"home-{kind}-{size}" for size in sizes}
            for size, times in api_calls(urls, homes, repeat).items():
                results[size].update(times)
            for size, times in noop_render(urls, homes, repeat).items():
                results[size].update(times)
            print(f"{kind}: calls timed, load {os.getloadavg()[0]:.2f}", flush=True)
        for size in sizes:
            hashes, cluster = planted.pop(size)
            results[size].update(similar_section(urls[size], size, hashes, cluster, baseline))
            print(f"{kind} {size}: done, load {os.getloadavg()[0]:.2f}", flush=True)
        return results
    finally:
        for drop in drops:
            drop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rescan", type=int, default=0, help="files for a no-change rescan")
    parser.add_argument("--similar-only", action="store_true", help="no jobs, no API calls")
    parser.add_argument("--baseline", metavar="SRC", help="run `similar` with this code too")
    parser.add_argument("--similar-child", metavar="URL")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--incremental", action="store_true")
    args = parser.parse_args()
    if args.similar_child:
        similar_child(args.similar_child, args.full)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for kind in args.databases.split(","):
            if args.rescan:
                found = rescan(kind, args.rescan, Path(tmp))
                print(f"{kind}: no-change rescan of {args.rescan:,} files: "
                      f"{found['rescan s']:.2f} s, {found['rescan files/s']:,.0f} files/s, "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
            if not sizes:
                continue
            results = one_database(
                kind,
                sizes,
                args.repeat,
                Path(tmp),
                similar_only=args.similar_only,
                baseline=args.baseline,
            )
            print_table(kind, sizes, results)
    print(f"load average at end: {os.getloadavg()}", flush=True)


def print_table(kind: str, sizes: list[int], results: dict[int, dict[str, object]]) -> None:
    names = list(results[sizes[0]])
    small, large = sizes[0], sizes[-1]
    print(f"\n{kind}: medians in ms unless named otherwise")
    print("| call | " + " | ".join(f"{s:,}" for s in sizes) + f" | {large:,}/{small:,} |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for name in names:
        values = [results[s].get(name) for s in sizes]
        cells = [
            "" if v is None else f"{v:.3f}" if isinstance(v, float) and v < 10 else f"{v:,.0f}"
            if isinstance(v, float) else str(v)
            for v in values
        ]  # fmt: skip
        first, last = values[0], values[-1]
        ratio = (
            f"{last / first:.2f}"
            if isinstance(first, float) and isinstance(last, float) and first > 0
            and name.startswith(("/api", "no-op render")) else ""
        )  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
