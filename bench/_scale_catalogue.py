"""The synthetic library bench.scale measures: bulk-loaded catalogue rows (assets, files,
jobs, a tag and an album) and 64-bit pHashes with planted near-duplicate clusters, in a
fresh database per size (``bench._databases.fresh_database``); never real files."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, text

from photo_pipeline.pipeline.library.map_grid import map_cell

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
SHAPES = ("uniform", "skewed")

# ── a real library's shape (``shape="skewed"``) ────────────────────────────────
# Cameras by era (a year is a tenth of the rows, oldest first): each year's cameras
# with their shares. A new phone appears in the last year only (two "iPhone 15" models:
# one substring, several stored values), and one camera is 1% of one year.
ERAS: list[list[tuple[tuple[str, str], float]]] = (
    [[(("Canon", "EOS 5D Mark III"), 0.4), (("Apple", "iPhone 6"), 0.6)]] * 3
    + [[(("Canon", "EOS R"), 0.3), (("Apple", "iPhone 8"), 0.5), (("samsung", "SM-G960F"), 0.2)]]
    + [
        [
            (("Canon", "EOS R"), 0.29),
            (("Apple", "iPhone 8"), 0.5),
            (("samsung", "SM-G960F"), 0.2),
            (("RICOH IMAGING COMPANY, LTD.", "RICOH GR III"), 0.01),
        ]
    ]
    + [[(("Sony", "ILCE-7M3"), 0.3), (("Apple", "iPhone 12"), 0.55), (("Google", "Pixel 6"), 0.15)]]
    * 4
    + [
        [
            (("Apple", "iPhone 15 Pro"), 0.35),
            (("Apple", "iPhone 15"), 0.25),
            (("Sony", "ILCE-7M3"), 0.25),
            (("Google", "Pixel 8"), 0.15),
        ]
    ]
)
# Places with their shares: most photos at home, Paris often, a few made-up towns, and
# one trip to Iceland (0.3% of the library, all in one week of the sixth year).
HOME = ("DE", "Germany", "Berlin", "Berlin", 52.52, 13.40)
SKEWED_PLACES = [
    (HOME, 0.55),
    (("FR", "France", "Île-de-France", "Paris", 48.85, 2.35), 0.2),
    *(
        (
            (
                f"Q{chr(65 + n)}",
                f"Country {n}",
                f"Region {n}",
                f"City {n}",
                -40 + n * 7,
                -120 + n * 19,
            ),
            0.025,
        )
        for n in range(10)
    ),
]
ICELAND = ("IS", "Iceland", "Capital Region", "Reykjavík", 64.15, -21.94)
ICELAND_SHARE = 0.003
LIVE_SHARE = 0.015  # of the Apple photos: a still and its MOV (the next row)
MOTION_PHOTO_SHARE = 0.01  # of the Google and Samsung photos (a JPEG with its clip)
SKEWED_EXACT_SHARE = 0.005  # a second present file


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


def place_centre(index: int) -> tuple[float, float]:
    """Where the photos of PLACES[index] cluster: Paris where it is, the made-up places
    spread over the map."""
    if PLACES[index][0] == "FR":
        return 48.85, 2.35
    return -50 + (index * 37) % 110, -170 + (index * 53) % 340


def pick(choices, roll: float):
    for value, share in choices:
        roll -= share
        if roll < 0:
            return value
    return choices[-1][0]


def asset_rows(
    size: int, hashes, original, cluster, first_id: int = 1, seed: int = 0, age=1, shape="uniform"
):
    """The assets' rows (ASSET_COLUMNS). ``uniform``: 20 cameras and 27 places drawn
    evenly, every asset a photo; ``skewed``: cameras by era, places by share with one
    rare trip, a few Live Photos (a still and its MOV) and Motion Photos."""
    if shape == "skewed":
        yield from skewed_rows(size, hashes, original, cluster, first_id, seed, age)
        return
    rng = random.Random(seed + 1)
    spots = random.Random(seed + 3)  # apart from rng: the other columns stay as they were
    # Catalogued a day ago (`similar` re-pairs assets updated shortly before its last run).
    now = micros(datetime.now(UTC) - timedelta(days=age))
    for n in range(size):
        asset_id = first_id + n
        when = START + SPAN * (n / size) + timedelta(minutes=rng.randint(0, 600))
        offset = rng.choice((0, 60, 120, -300, 540))
        utc = when - timedelta(minutes=offset)
        make, model = CAMERAS[rng.randrange(len(CAMERAS))]
        place = rng.randrange(len(PLACES))
        code, country, region, city = PLACES[place]
        gps = rng.random() < 0.7
        # Around its place's centre (about 30 km): clusters at every zoom.
        lat, lon = place_centre(place)
        lat, lon = lat + spots.gauss(0, 0.3), lon + spots.gauss(0, 0.3)
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
            lat if gps else None,
            lon if gps else None,
            code,
            country,
            region,
            city,
            micros(utc),
            f"{hashes[n]:016x}",
            now,
            now,
            map_cell(lat, lon) if gps else None,
            "photo",
            None,
            False,
        )


def skewed_rows(size: int, hashes, original, cluster, first_id: int, seed: int, age: int):
    rng = random.Random(seed + 1)
    now = micros(datetime.now(UTC) - timedelta(days=age))
    trip = int(size * 0.55)  # Iceland: the rows from here on, ICELAND_SHARE of them
    motion_of: int | None = None  # the still the next row is the MOV of
    for n in range(size):
        asset_id = first_id + n
        when = START + SPAN * (n / size) + timedelta(minutes=rng.randint(0, 600))
        offset = rng.choice((0, 60, 120, -300, 540))
        utc = when - timedelta(minutes=offset)
        year = min(9, n * 10 // size)
        make, model = pick(ERAS[year], rng.random())
        place = (
            ICELAND
            if trip <= n < trip + size * ICELAND_SHARE
            else pick(SKEWED_PLACES, rng.random())
        )
        code, country, region, city, lat, lon = place
        gps = rng.random() < 0.7
        lat, lon = lat + rng.gauss(0, 0.3), lon + rng.gauss(0, 0.3)
        width, height = (
            (6000, 4000) if original[n] else (2000, 1500) if cluster[n] >= 0 else (4000, 3000)
        )
        kind, fmt, mime, live_of, motion_photo = "photo", "jpeg", "image/jpeg", None, False
        if motion_of is not None:
            kind, fmt, mime, live_of, make, model = (
                "video",
                "mov",
                "video/quicktime",
                motion_of,
                "Apple",
                "iPhone",
            )
            motion_of = None
        elif make == "Apple" and rng.random() < LIVE_SHARE and n + 1 < size:
            fmt, mime, motion_of = "heic", "image/heic", asset_id
        elif make in ("Google", "samsung") and rng.random() < MOTION_PHOTO_SHARE:
            motion_photo = True
        yield (
            asset_id, f"{asset_id:064x}", 2_000_000 + n % 1000, fmt, mime, width, height, 1,
            when.replace(tzinfo=None).isoformat(), offset, micros(utc), "exif_original",
            make, model, lat if gps else None, lon if gps else None, code, country, region,
            city, micros(utc), f"{hashes[n]:016x}", now, now,
            map_cell(lat, lon) if gps else None, kind, live_of, motion_photo,
        )  # fmt: skip


ASSET_COLUMNS = (
    "id, content_hash, size, format, mime, width, height, orientation, taken_local, "
    "taken_offset_minutes, taken_utc, taken_source, make, model, gps_latitude, "
    "gps_longitude, country_code, country, region, city, taken_order, phash, created_at, "
    "updated_at, map_cell, kind, live_of, is_motion_photo"
)
FILE_COLUMNS = "id, source_id, path, size, mtime_ns, inode, state, asset_id, created_at, updated_at"
JOB_COLUMNS = (
    "seq, id, job_type, state, priority, params, request_hash, waiting_for, attempts, "
    "max_attempts, interruptions, run_after, fencing_token, version, created_at, updated_at, "
    "finished_at"
)


def file_rows(
    size: int, first_id: int = 1, first_file: int = 1, seed: int = 0, exact_share: float = 0.03
):
    """One present file an asset, a second present one for ``exact_share`` of them and
    a missing one for 1%."""
    rng = random.Random(seed + 2)
    now = micros(datetime.now(UTC))
    file_id = first_file
    for n in range(size):
        asset_id = first_id + n
        copies = ["present"]
        roll = rng.random()
        if roll < exact_share:
            copies.append("present")
        elif roll < exact_share + 0.01:
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


def bulk_load(url: str, table: str, columns: str, rows, *, triggers: bool = True) -> None:
    """``rows`` written into ``table``: COPY on PostgreSQL, batched INSERTs on SQLite.
    ``triggers=False`` writes them with the table's triggers off (PostgreSQL: the
    session's replication role; SQLite: the table's triggers dropped and made again in
    the same transaction), so that the summaries they keep must be rebuilt after
    (``rebuild_summaries``): a million rows through row triggers took over an hour."""
    engine = create_engine(url)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        if engine.dialect.name == "postgresql":
            if not triggers:
                cursor.execute("SET session_replication_role = replica")
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            saved = []
            if not triggers:
                cursor.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                    (table,),
                )
                saved = cursor.fetchall()
                for name, _ in saved:
                    cursor.execute(f'DROP TRIGGER "{name}"')
            marks = ", ".join("?" * len(columns.split(",")))
            batch = []
            for row in rows:
                batch.append(row)
                if len(batch) == 50_000:
                    cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
                    batch.clear()
            if batch:
                cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
            for _, sql in saved:
                cursor.execute(sql)
        raw.commit()
    finally:
        raw.close()
        engine.dispose()


def rebuild_summaries(url: str) -> None:
    """What the triggers on assets would have kept, counted afresh by the app's own
    rebuilds (one per summary), and every search document written."""
    from photo_pipeline.db import open_database
    from photo_pipeline.pipeline import search_index
    from photo_pipeline.pipeline.library.map import rebuild_map_cells
    from photo_pipeline.pipeline.library.places import rebuild_place_counts
    from photo_pipeline.pipeline.library.timeline import (
        rebuild_timeline_days,
        rebuild_timeline_facets,
    )

    factory = open_database(url)
    try:
        with factory.begin() as session:
            rebuild_map_cells(session)
            rebuild_timeline_days(session)
            rebuild_timeline_facets(session)
            rebuild_place_counts(session)
            search_index.rebuild(session)
    finally:
        factory.kw["bind"].dispose()


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


def build(
    url: str, size: int, seed: int, jobs: bool = True, shape: str = "uniform"
) -> tuple[list[int], list[int]]:
    from photo_pipeline.db import open_database

    open_database(url).kw["bind"].dispose()
    hashes, cluster, original = planted_hashes(size, seed)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sources (id, path, added_at) VALUES (1, '/bench', 0)"))
    engine.dispose()
    rows = asset_rows(size, hashes, original, cluster, seed=seed, shape=shape)
    bulk_load(url, "assets", ASSET_COLUMNS, rows, triggers=False)
    exact = SKEWED_EXACT_SHARE if shape == "skewed" else 0.03
    bulk_load(url, "files", FILE_COLUMNS, file_rows(size, seed=seed, exact_share=exact))
    if jobs:
        bulk_load(url, "jobs", JOB_COLUMNS, job_rows(max(size // 10, 100)))
    curate(url, size)
    rebuild_summaries(url)
    fix_sequences(url)
    return hashes, cluster


# Curation the search finds by name: a tag on every TAG_EVERY-th asset, an album of
# every ALBUM_EVERY-th (about 1% and 0.5% of the library: many matches at 1M).
TAG, TAG_EVERY = "Trips|Holiday", 100
ALBUM, ALBUM_EVERY = "Summer walks", 200


def curate(url: str, size: int) -> None:
    now = micros(datetime.now(UTC))
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO tags (id, path, key, created_at) VALUES (1, :path, :key, :now)"),
            {"path": TAG, "key": TAG.casefold(), "now": now},
        )
        conn.execute(
            text(
                "INSERT INTO albums (id, name, key, created_at, updated_at)"
                " VALUES (1, :name, :key, :now, :now)"
            ),
            {"name": ALBUM, "key": ALBUM.casefold(), "now": now},
        )
    engine.dispose()
    tagged = ((a, 1, now) for a in range(TAG_EVERY, size + 1, TAG_EVERY))
    bulk_load(url, "asset_tags", "asset_id, tag_id, tagged_at", tagged)
    members = ((1, a, now) for a in range(ALBUM_EVERY // 2, size + 1, ALBUM_EVERY))
    bulk_load(url, "album_assets", "album_id, asset_id, added_at", members)


def search_rows(url: str, after: int = 0, chunk: int = 10_000):
    """The search words of every asset after ``after``, as the catalogue's writes give
    them (``pipeline.search_index.document``), read back from the loaded rows."""
    from photo_pipeline.pipeline.search_index import document

    engine = create_engine(url)
    columns = "id, make, model, lens, city, district, region, country, country_code"
    with engine.connect() as conn:
        while True:
            rows = conn.execute(
                text(f"SELECT {columns} FROM assets WHERE id > :after ORDER BY id LIMIT {chunk}"),
                {"after": after},
            ).all()
            if not rows:
                break
            names: dict[int, list[str]] = {}
            for asset_id, path in conn.execute(
                text(
                    "SELECT asset_id, path FROM files WHERE asset_id BETWEEN :low AND :high "
                    "AND state = 'present'"
                ),
                {"low": rows[0].id, "high": rows[-1].id},
            ):
                names.setdefault(asset_id, []).append(path.rpartition("/")[2])
            labels: dict[int, list[str]] = {}
            for asset_id, label in conn.execute(
                text(
                    "SELECT l.asset_id, t.path FROM asset_tags AS l JOIN tags AS t"
                    " ON t.id = l.tag_id WHERE l.asset_id BETWEEN :low AND :high UNION ALL"
                    " SELECT m.asset_id, a.name FROM album_assets AS m JOIN albums AS a"
                    " ON a.id = m.album_id WHERE m.asset_id BETWEEN :low AND :high"
                ),
                {"low": rows[0].id, "high": rows[-1].id},
            ):
                labels.setdefault(asset_id, []).append(label)
            for row in rows:
                found = sorted(labels.get(row.id, ()))
                yield (row.id, document(row, names.get(row.id, ()), found))
            after = rows[-1].id
    engine.dispose()


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
    bulk_load(url, "asset_search", "asset_id, document", search_rows(url, after=size))
    fix_sequences(url)
