"""The stored chunks of the near-duplicate search (table ``near_chunks``).

Every paired hash is stored cut into the chunks of a layout (pipeline.near.groups):
one row per chunk, keyed by ``(chunk, value, asset id)``. A few new hashes then find
their candidates the way the in-memory search does, by looking up their probes (their
chunk values with up to ``flips`` bits flipped), but as B-tree lookups: k new hashes
cost ``k * chunks * probes`` lookups of ``log n`` each, and nothing else of the
library is read. The layout is kept until a full regroup (pipeline.near.regroup)
writes every row again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from sqlalchemy import ARRAY, Integer, any_, bindparam, delete, insert, select, text
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import near_chunks
from photo_pipeline.pipeline.near.groups import Layout, expand

# Values per lookup statement: well under SQLite's parameter limit, and few enough
# for PostgreSQL to plan index lookups, not a scan of the table.
_LOOKUP_BATCH = 1000
# Rows per executemany call or COPY write.
_WRITE_BATCH = 100_000
_COLUMNS = "chunk, value, asset_id, phash"
_ASSET_INDEX = next(i for i in near_chunks.indexes if i.name == "ix_near_chunks_asset_id")
# One chunk's rows as they are built (native integers) and as COPY's binary format
# sends them: a field count, then each field's length and big-endian value.
_ROW = np.dtype([("chunk", "i8"), ("value", "i8"), ("asset_id", "i8"), ("phash", "i8")])
_COPY_ROW = np.dtype(
    [
        ("fields", ">i2"),
        ("chunk_size", ">i4"),
        ("chunk", ">i2"),
        ("value_size", ">i4"),
        ("value", ">i4"),
        ("asset_size", ">i4"),
        ("asset_id", ">i8"),
        ("phash_size", ">i4"),
        ("phash", ">i8"),
    ]
)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8  # signature, flags, no extension
_COPY_TRAILER = b"\xff\xff"


def as_stored(values: np.ndarray) -> np.ndarray:
    """Hashes as the signed 64-bit integers of ``near_chunks.phash``."""
    return np.ascontiguousarray(values, dtype=np.uint64).view(np.int64)


def as_hashes(stored: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(stored, dtype=np.int64).view(np.uint64)


def rebuild(session: Session, ids: np.ndarray, values: np.ndarray, layout: Layout) -> None:
    """Replace every stored chunk by the chunks of ``values`` (of assets ``ids``, in
    ascending order) cut by ``layout``. The rows go in key order, in bulk (COPY on
    PostgreSQL); the asset index is built after them (kept up to date row by row, it
    made a million hashes' rows several times slower to write)."""
    connection = session.connection()
    _ASSET_INDEX.drop(connection)
    postgresql = is_postgresql(connection)
    session.execute(text("TRUNCATE near_chunks") if postgresql else delete(near_chunks))
    stored = as_stored(values)
    for chunk in range(len(layout.widths)):
        keys = layout.keys(values, chunk)
        # Stable: ids stay ascending within a chunk value, so the rows are in key order.
        order = np.argsort(keys, kind="stable")
        rows = np.empty(len(order), dtype=_ROW)
        rows["chunk"], rows["value"] = chunk, keys[order]
        rows["asset_id"], rows["phash"] = ids[order], stored[order]
        if postgresql:
            _copy(session, rows)
        else:
            # Tuples straight from the array to the driver: SQLAlchemy's parameter
            # dicts cost 5 s a million rows.
            statement = f"INSERT INTO near_chunks ({_COLUMNS}) VALUES (?, ?, ?, ?)"
            for start in range(0, len(rows), _WRITE_BATCH):
                connection.exec_driver_sql(statement, rows[start : start + _WRITE_BATCH].tolist())
    _ASSET_INDEX.create(connection)
    if postgresql:
        # Statistics now, not when autovacuum comes by: without them the planner
        # may scan the table for a lookup.
        session.execute(text("ANALYZE near_chunks"))


def _copy(session: Session, rows: np.ndarray) -> None:
    sent = np.empty(len(rows), dtype=_COPY_ROW)
    sent["fields"] = 4
    sent["chunk_size"], sent["value_size"], sent["asset_size"], sent["phash_size"] = 2, 4, 8, 8
    for field in ("chunk", "value", "asset_id", "phash"):
        sent[field] = rows[field]
    cursor = session.connection().connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY near_chunks ({_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_COPY_HEADER)
        for start in range(0, len(sent), _WRITE_BATCH):
            copy.write(sent[start : start + _WRITE_BATCH].tobytes())
        copy.write(_COPY_TRAILER)


def add(session: Session, ids: Sequence[int], values: np.ndarray, layout: Layout) -> None:
    """Store the chunks of a few hashes (assets ``ids``)."""
    stored = as_stored(values).tolist()
    rows = [
        {"chunk": chunk, "value": int(value), "asset_id": asset_id, "phash": phash}
        for chunk in range(len(layout.widths))
        for asset_id, value, phash in zip(
            ids, layout.keys(values, chunk).tolist(), stored, strict=True
        )
    ]
    for start in range(0, len(rows), _LOOKUP_BATCH):
        session.execute(insert(near_chunks), rows[start : start + _LOOKUP_BATCH])


def remove(session: Session, stored: dict[int, int], layout: Layout) -> None:
    """Forget the chunks stored for assets (``stored``: asset id to stored hash) by
    their keys (``layout`` cuts them as it cut the hash)."""
    if not stored:
        return
    ids = list(stored)
    values = np.array([stored[i] for i in ids], dtype=np.uint64)
    keys = [
        {"c": chunk, "v": value, "a": asset_id}
        for chunk in range(len(layout.widths))
        for asset_id, value in zip(ids, layout.keys(values, chunk).tolist(), strict=True)
    ]
    session.execute(
        delete(near_chunks).where(
            near_chunks.c.chunk == bindparam("c"),
            near_chunks.c.value == bindparam("v"),
            near_chunks.c.asset_id == bindparam("a"),
        ),
        keys,
    )


def stored_hashes(session: Session, ids: Sequence[int]) -> dict[int, int]:
    """The hash stored for each of assets ``ids`` that has chunks stored (read by
    the partial index of first chunks)."""
    found: dict[int, int] = {}
    for part in _batches(list(ids)):
        for asset_id, stored in session.execute(
            select(near_chunks.c.asset_id, near_chunks.c.phash).where(
                near_chunks.c.chunk == 0, near_chunks.c.asset_id.in_(part)
            )
        ):
            found[asset_id] = stored & 0xFFFF_FFFF_FFFF_FFFF
    return found


def candidates(
    session: Session, values: np.ndarray, layout: Layout
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every stored hash that shares a probe with one of ``values`` on some chunk:
    ``(asking, asset_id, hash)`` with ``asking`` the index into ``values`` (a
    candidate close on several chunks comes once per chunk)."""
    asking_parts, id_parts, hash_parts = [], [], []
    postgresql = is_postgresql(session)
    for chunk in range(len(layout.widths)):
        probes = layout.probes(values, chunk)
        wanted = np.unique(probes).tolist()
        found_values, found_ids, found_hashes = [], [], []
        # PostgreSQL takes a batch as one array: an IN list of a thousand parameters
        # cost more to send and parse than to look up.
        for part in _batches(wanted):
            matching = (
                near_chunks.c.value == any_(bindparam("values", part, type_=ARRAY(Integer)))
                if postgresql
                else near_chunks.c.value.in_(part)
            )
            for value, asset_id, stored in session.execute(
                select(near_chunks.c.value, near_chunks.c.asset_id, near_chunks.c.phash).where(
                    near_chunks.c.chunk == chunk, matching
                )
            ):
                found_values.append(value)
                found_ids.append(asset_id)
                found_hashes.append(stored)
        if not found_values:
            continue
        # Each row goes to every asking hash that probed its value.
        row_values = np.array(found_values, dtype=np.int64)
        by_value = np.argsort(row_values, kind="stable")
        row_values = row_values[by_value]
        flat = probes.ravel()
        first = np.searchsorted(row_values, flat, side="left")
        hits = np.searchsorted(row_values, flat, side="right") - first
        asker = np.repeat(np.repeat(np.arange(len(values)), probes.shape[1]), hits)
        rows = by_value[expand(first, hits)]
        asking_parts.append(asker)
        id_parts.append(np.array(found_ids, dtype=np.int64)[rows])
        hash_parts.append(as_hashes(np.array(found_hashes, dtype=np.int64))[rows])
    if not asking_parts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=np.uint64)
    return np.concatenate(asking_parts), np.concatenate(id_parts), np.concatenate(hash_parts)


def _batches(values: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), _LOOKUP_BATCH):
        yield values[start : start + _LOOKUP_BATCH]
