"""Tables of the library database, declared once; migrations must match them exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.types import TypeDecorator

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL wants BIGINT.
BigId = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime stored as integer microseconds since the Unix epoch.

    One representation on every backend: comparisons (lease expiry, ``run_after``) are
    integer comparisons, identical on SQLite and PostgreSQL, with no time-zone or
    text-format surprises.
    """

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> int | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: times must be timezone-aware")
        return (value - EPOCH) // _MICROSECOND

    def process_result_value(self, value: int | None, dialect: Dialect) -> datetime | None:
        return None if value is None else EPOCH + value * _MICROSECOND


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


# Kept in step with jobs.states by a unit test (db must not import jobs).
ACTIVE_JOB_STATES = ("queued", "running", "cancelling", "retry_queued")
CLAIMABLE_JOB_STATES = ("queued", "retry_queued")
LEASED_JOB_STATES = ("running", "cancelling")

jobs = Table(
    "jobs",
    metadata,
    # seq gives a strict enqueue order (FIFO tie-break); id is the public identifier.
    Column("seq", BigId, primary_key=True, autoincrement=True),
    Column("id", String(36), nullable=False, unique=True),
    Column("job_type", String(100), nullable=False),
    Column("state", String(16), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("params", JSON, nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("lock_key", String(200)),
    Column("idempotency_key", String(200), unique=True),
    # Number of prerequisites that have not succeeded yet; claimable only at 0.
    Column("waiting_for", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    # Infrastructure failures (worker died, lease expired, database gone) since the
    # last manual retry: they refund the attempt and spend this budget instead.
    Column("interruptions", Integer, nullable=False, server_default=text("0")),
    Column("run_after", UTCDateTime, nullable=False),
    Column("lease_owner", String(200)),
    Column("lease_expires_at", UTCDateTime),
    Column("heartbeat_at", UTCDateTime),
    Column("fencing_token", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("error_code", String(100)),
    Column("error_message", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime),
    Column("finished_at", UTCDateTime),
)

# The one-mutating-job lock, enforced by the database: one active job per lock key.
_active = text(_in("state", ACTIVE_JOB_STATES) + " AND lock_key IS NOT NULL")
Index(
    "uq_jobs_active_lock",
    jobs.c.lock_key,
    unique=True,
    sqlite_where=_active,
    postgresql_where=_active,
)
# Claim walks this index in order, per job type, and stops at the first row it can
# take: other types' backlogs are never read.
_claimable = text(_in("state", CLAIMABLE_JOB_STATES) + " AND waiting_for = 0")
Index(
    "ix_jobs_claim_order",
    jobs.c.job_type,
    jobs.c.priority.desc(),
    jobs.c.run_after,
    jobs.c.seq,
    sqlite_where=_claimable,
    postgresql_where=_claimable,
)
_leased = text(_in("state", LEASED_JOB_STATES))
Index(
    "ix_jobs_lease_expiry",
    jobs.c.lease_expires_at,
    sqlite_where=_leased,
    postgresql_where=_leased,
)
Index("ix_jobs_finished_at", jobs.c.finished_at)
# Listings by type or state, newest first (GET /api/jobs?type=, ?state=): a walk down
# one of these stops after a page, however many finished jobs there are.
Index("ix_jobs_job_type_seq", jobs.c.job_type, jobs.c.seq)
Index("ix_jobs_state_seq", jobs.c.state, jobs.c.seq)

job_items = Table(
    "job_items",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("item_key", String(2048), nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempt_count", Integer, nullable=False),
    Column("error_code", String(100)),
    Column("error_message", Text),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("job_id", "item_key"),
    Index("ix_job_items_job_id_state_id", "job_id", "state", "id"),
)

job_events = Table(
    "job_events",
    metadata,
    # The resumable cursor: allocated under the job's row lock, so per job it is
    # gap-free in commit order on both backends.
    Column("seq", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("event_type", String(50), nullable=False),
    Column("message", Text),
    Column("data", JSON),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_job_events_job_id_seq", "job_id", "seq"),
    # SQLite must never reuse a number after the newest events are pruned.
    sqlite_autoincrement=True,
)

job_prerequisites = Table(
    "job_prerequisites",
    metadata,
    Column("job_id", String(36), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column(
        "prerequisite_id",
        String(36),
        ForeignKey("jobs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    PrimaryKeyConstraint("job_id", "prerequisite_id"),
    Index("ix_job_prerequisites_prerequisite_id", "prerequisite_id"),
)

workers = Table(
    "workers",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("job_types", JSON, nullable=False),
    # running, stopped (exited cleanly) or dead (found gone by another worker)
    Column("state", String(16), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("stopped_at", UTCDateTime),
    Index("ix_workers_host_state", "host", "state"),
)

# Periodic jobs (jobs.schedules): a cron expression in a time zone, or an interval.
# next_due is when the next tick falls due (the workers' cheap due-check compares it
# with the database's clock); pending_tick a tick decided on whose job is not yet
# recorded (a worker that died between the two is followed by the next one).
schedules = Table(
    "schedules",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_type", String(100), nullable=False),
    Column("params", JSON, nullable=False),
    Column("cron", String(200)),
    Column("every_seconds", BigInteger),
    Column("time_zone", String(64), nullable=False),
    Column("paused", Boolean, nullable=False, server_default=false()),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("next_due", UTCDateTime, nullable=False),
    Column("last_tick", UTCDateTime),
    Column("pending_tick", UTCDateTime),
    Column("last_job_id", String(36)),  # no foreign key: the job may be pruned
    Column("skipped_ticks", Integer, nullable=False, server_default=text("0")),
    Column("last_skipped_at", UTCDateTime),
    Column("last_skip_reason", Text),
    # A client's Idempotency-Key: a retried create returns the schedule it made.
    Column("idempotency_key", String(200), unique=True),
    Index("ix_schedules_next_due", "next_due"),
)

# ── the photo library ──────────────────────────────────────────────────────────

# One row: the library's id. A marker file in the library home carries it too, so a
# worker on another machine can tell that it sees this library's home (pipeline.library.home).
library_identity = Table(
    "library_identity",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
    # Whether the default schedules were given to it (pipeline.scheduled): once, when
    # the library is new; one the user removed is not put back.
    Column("schedules_seeded", Boolean, nullable=False, server_default=false()),
)

sources = Table(
    "sources",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("path", Text, nullable=False, unique=True),  # absolute, resolved
    Column("added_at", UTCDateTime, nullable=False),
    Column("scanned_at", UTCDateTime),
    # Watched: a watcher (serve, watch) catalogues what arrives in it (pipeline.watch).
    Column("watch", Boolean, nullable=False, server_default=false()),
)

# One row per watched source while a watcher holds it: exactly one watcher per source
# across processes and hosts. A lease on the database's clock, renewed by heartbeat;
# an expired row (or one whose process is gone, on its own host) is taken over.
source_watchers = Table(
    "source_watchers",
    metadata,
    Column(
        "source_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("sources.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("holder", String(200), nullable=False),  # host:pid:random
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("mode", String(16), nullable=False),  # inotify or poll
    Column("reason", Text),  # why poll, when it is
    Column("acquired_at", UTCDateTime, nullable=False),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    # The oldest change seen and not yet handed to a scan (NULL: caught up).
    Column("pending_since", UTCDateTime),
    Column("pending", Integer, nullable=False, server_default=text("0")),
)

assets = Table(
    "assets",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("content_hash", String(64), nullable=False, unique=True),  # BLAKE3, hex
    Column("size", BigInteger, nullable=False),
    Column("format", String(16), nullable=False),
    Column("mime", String(64), nullable=False),
    Column("width", Integer, nullable=False),  # after orientation
    Column("height", Integer, nullable=False),
    Column("orientation", Integer, nullable=False),
    # Wall-clock time as the camera recorded it, ISO 8601 without offset (sorts as text).
    Column("taken_local", String(32), nullable=False),
    Column("taken_offset_minutes", Integer),
    Column("taken_utc", UTCDateTime),
    Column("taken_source", String(20), nullable=False),
    Column("make", String(200)),
    Column("model", String(200)),
    Column("lens", String(200)),
    Column("focal_length_mm", Float),
    Column("f_number", Float),
    Column("exposure_seconds", Float),
    Column("iso", Integer),
    Column("gps_latitude", Float),
    Column("gps_longitude", Float),
    Column("gps_altitude", Float),
    # Time zone and place of the capture (pipeline.ingest.places): tz_source is exif_offset,
    # gps_timezone, utc or floating; NULL until resolved (rows older than 0006).
    Column("tz_name", String(64)),  # IANA name, or UTC±HH:MM for a bare EXIF offset
    Column("tz_source", String(16)),
    Column("country_code", String(2)),  # ISO 3166 alpha-2
    Column("country", String(100)),  # English short name
    Column("region", String(200)),
    Column("city", String(200)),  # the place a person would name (Tokyo, Berlin)
    Column("district", String(200)),  # the nearest place, when part of the city (Mitte)
    # The listing order: taken_utc when known, else taken_local read as UTC.
    Column("taken_order", UTCDateTime),
    Column("phash", String(16)),  # perceptual hash, filled by the near-duplicate job
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # photo or video (media.formats.kind_of); the video facts are NULL for photos
    Column("kind", String(8), nullable=False, server_default=text("'photo'")),
    Column("duration_seconds", Float),
    Column("video_codec", String(32)),  # FFmpeg's name: h264, hevc, vp9…
    Column("frame_rate", Float),
    # Apple's Live Photo id, the same in the still and its MOV (pipeline.library.live_photos)
    Column("content_identifier", String(100)),
    # On a Live Photo's motion part (its MOV): the still's asset. The pair is one asset
    # to show; listings leave the motion part out. No foreign key: SQLite cannot add
    # one to an existing table, and pairing re-checks the still anyway.
    Column("live_of", BigInteger),
    # A Google/Samsung Motion Photo: a JPEG with its clip appended (shown as live)
    Column("is_motion_photo", Boolean, nullable=False, server_default=false()),
    # The settings fingerprint every kind of the asset's renditions was made with
    # (pipeline.renditions.rows keeps it with their rows); NULL while one is missing or they
    # differ. A render with nothing to do finds no stale asset in its index.
    Column("renditions_fingerprint", String(16)),
    # The listing by local wall clock (``assets --sort taken``): its keyset is (taken_local, id).
    Index("ix_assets_taken_local_id", "taken_local", "id"),
    # SHA-256 of the content, hex, read with content_hash (media.hash_file_digests): what a
    # browser asks by before uploading (HEAD /api/assets?sha256=). NULL for assets
    # catalogued before 0021 until a scan reads one of their files again.
    Column("sha256", String(64)),
    Index("ix_assets_sha256", "sha256"),
    # The position's cell on the map's grid (pipeline.library.map_grid), NULL without one:
    # a cell of any level is a range of this index. Motion halves are not on the map
    # (pipeline.library.map: a test that ix_assets_live_of cannot take over).
    Column("map_cell", BigInteger),
    Index("ix_assets_map_cell_id", "map_cell", "id"),
    # The places beside the map (countries, regions, cities with counts and bounds):
    # every column they read, so that a count walks the index alone.
    Index(
        "ix_assets_places",
        "country_code",
        "country",
        "region",
        "city",
        "live_of",
        "gps_latitude",
        "gps_longitude",
    ),
    Index("ix_assets_make_model", "make", "model"),
    # A camera filter's access path (pipeline.library.filter_paths): the distinct makes
    # and models found by a loose scan, then a page of each walked in the listing's
    # orders (migration 0031).
    Index("ix_assets_make_taken_order_id", "make", "taken_order", "id"),
    Index("ix_assets_make_taken_local_id", "make", "taken_local", "id"),
    Index("ix_assets_model_taken_order_id", "model", "taken_order", "id"),
    Index("ix_assets_model_taken_local_id", "model", "taken_local", "id"),
    # The place filter's, the same way (its columns' distinct values, then pages).
    Index("ix_assets_country_code_taken_order_id", "country_code", "taken_order", "id"),
    Index("ix_assets_country_code_taken_local_id", "country_code", "taken_local", "id"),
    Index("ix_assets_country_taken_order_id", "country", "taken_order", "id"),
    Index("ix_assets_country_taken_local_id", "country", "taken_local", "id"),
    Index("ix_assets_region_taken_order_id", "region", "taken_order", "id"),
    Index("ix_assets_region_taken_local_id", "region", "taken_local", "id"),
    Index("ix_assets_city_taken_order_id", "city", "taken_order", "id"),
    Index("ix_assets_city_taken_local_id", "city", "taken_local", "id"),
    Index("ix_assets_district_taken_order_id", "district", "taken_order", "id"),
    Index("ix_assets_district_taken_local_id", "district", "taken_local", "id"),
    # Motion Photos in the listing's orders (the type=live filter's first branch).
    Index(
        "ix_assets_motion_photo_taken_order_id",
        "taken_order",
        "id",
        sqlite_where=text("is_motion_photo IS 1"),
        postgresql_where=text("is_motion_photo IS true"),
    ),
    Index(
        "ix_assets_motion_photo_taken_local_id",
        "taken_local",
        "id",
        sqlite_where=text("is_motion_photo IS 1"),
        postgresql_where=text("is_motion_photo IS true"),
    ),
    Index("ix_assets_content_identifier", "content_identifier"),
    Index("ix_assets_live_of", "live_of"),
    # The listing's keyset (taken_order, id): a page is a range of this index.
    Index("ix_assets_taken_order_id", "taken_order", "id"),
    # `similar` re-pairs only the hashes changed since its last run, and hashes the
    # thumbnails of the few assets still without one.
    Index("ix_assets_updated_at", "updated_at"),
    Index("ix_assets_renditions_fingerprint", "renditions_fingerprint"),
    Index(
        "ix_assets_unhashed",
        "id",
        sqlite_where=text("phash IS NULL"),
        postgresql_where=text("phash IS NULL"),
    ),
)

# The search index's words of each asset (pipeline.search_index keeps them). The
# index itself is the database's own, made by migration 0024: on SQLite an FTS5 table
# (asset_search_fts) with this as its external content, on PostgreSQL a GIN index on
# to_tsvector('simple', document).
asset_search = Table(
    "asset_search",
    metadata,
    Column(
        "asset_id",
        BigId,
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("document", Text, nullable=False),
    Index(
        "ix_asset_search_document",
        text("to_tsvector('simple', document)"),
        postgresql_using="gin",
    ).ddl_if(dialect="postgresql"),
)

files = Table(
    "files",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "source_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("sources.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("path", Text, nullable=False),  # relative to the source (pipeline.files.paths encoding)
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("inode", BigInteger, nullable=False),
    # present (catalogued), failed (unreadable as a photo), missing (gone from disk)
    Column("state", String(16), nullable=False),
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="SET NULL"),
    ),
    Column("error_code", String(100)),
    Column("error_message", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # The sidecars it was last read with ("name:size:mtime_ns;…", pipeline.ingest.sidecars)
    Column("sidecars", Text),
    # When verify last found its bytes unchanged (NULL: never): a rolling verify checks
    # the least recently verified first (pipeline.verify_window).
    Column("verified_at", UTCDateTime),
    UniqueConstraint("source_id", "path"),
    # "Has a present file", "how many present files": answered from the index alone.
    Index("ix_files_asset_id_state", "asset_id", "state"),
)

# The journal of organize jobs: one row per planned file transfer, written before any
# file is touched and updated as each is done, so a crash resumes and undo reverses.
organize_entries = Table(
    "organize_entries",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),  # order in the plan
    Column("kind", String(16), nullable=False),  # photo, companion (RAW+JPEG), sidecar
    Column("action", String(16), nullable=False),  # copy, move, skip
    Column("reason", String(32)),  # why skipped / collision resolved
    Column("file_id", BigInteger),  # the catalogue's file row (no FK: it may be re-keyed)
    Column("source_id", BigInteger, nullable=False),
    Column("source_path", Text, nullable=False),  # relative to the source (pipeline.files.paths)
    Column("dest_path", Text, nullable=False),  # relative to the destination
    Column("content_hash", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    # planned, done, failed, skipped, undone
    Column("state", String(16), nullable=False),
    Column("dest_inode", BigInteger),
    Column("dest_mtime_ns", BigInteger),
    Column("error_code", String(100)),
    Column("error_message", Text),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("job_id", "seq"),
)

# Capture-time corrections (pipeline.timeshift): one row per asset a timeshift job
# changed, with the values before and after, so its undo restores them exactly. No
# foreign key to jobs: the journal must outlive pruned job rows.
timeshift_entries = Table(
    "timeshift_entries",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), nullable=False),
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("old_taken_local", String(32), nullable=False),
    Column("old_taken_offset_minutes", Integer),
    Column("old_taken_utc", UTCDateTime),
    Column("old_taken_order", UTCDateTime),
    Column("old_tz_name", String(64)),
    Column("new_taken_local", String(32), nullable=False),
    Column("new_taken_offset_minutes", Integer),
    Column("new_taken_utc", UTCDateTime),
    Column("new_taken_order", UTCDateTime),
    Column("new_tz_name", String(64)),
    # A date the user set (``timeshift --set``) is theirs: source "user". NULL: unchanged.
    Column("old_taken_source", String(20)),
    Column("new_taken_source", String(20)),
    Column("shifted_at", UTCDateTime, nullable=False),
    Column("undo_job_id", String(36)),  # set when undone
    Column("undone_at", UTCDateTime),
    UniqueConstraint("job_id", "asset_id"),
    Index("ix_timeshift_entries_asset_id", "asset_id"),
)

# The journal of dedupe jobs (pipeline.dedupe): one row per copy moved into the
# quarantine (<home>/quarantine/<job id>/<quarantine_path>), with the keeper it was
# checked against, so that a crash resumes, an undo puts it back and a purge deletes
# it for good. No foreign key to jobs: the quarantine outlives pruned job rows.
dedupe_entries = Table(
    "dedupe_entries",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), nullable=False),
    Column("seq", Integer, nullable=False),  # order in the plan
    Column("group_key", String(64), nullable=False),  # exact:<asset id>, near:<group id>
    Column("kind", String(16), nullable=False),  # copy, near, sidecar
    Column("reason", String(32), nullable=False),  # why the keeper won (pipeline.library.keeper)
    Column("file_id", BigInteger),  # the catalogue's file row
    Column("source_id", BigInteger, nullable=False),
    Column("source_path", Text, nullable=False),  # relative to the source (pipeline.files.paths)
    Column("quarantine_path", Text, nullable=False),  # relative to the job's quarantine
    Column("content_hash", String(64), nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("keeper_source_id", BigInteger, nullable=False),
    Column("keeper_path", Text, nullable=False),
    Column("keeper_hash", String(64), nullable=False),
    # planned, quarantined, skipped, restored, purged
    Column("state", String(16), nullable=False),
    Column("error_code", String(100)),
    Column("error_message", Text),
    Column("quarantined_at", UTCDateTime),
    Column("undo_job_id", String(36)),
    Column("purge_job_id", String(36)),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("job_id", "seq"),
    Index("ix_dedupe_entries_state", "state"),
)

# ── renditions and near duplicates (render, similar) ───────────────────────────

renditions = Table(
    "renditions",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("kind", String(16), nullable=False),  # thumbnail, preview
    Column("path", Text, nullable=False),  # relative to the library home
    Column("format", String(8), nullable=False),  # webp, jpeg
    Column("width", Integer, nullable=False),
    Column("height", Integer, nullable=False),
    Column("bytes", Integer, nullable=False),
    # RenderSettings.fingerprint(): a rendition made with other settings is stale
    Column("fingerprint", String(16), nullable=False),
    Column("warning", Text),  # e.g. broken_icc_profile: rendered, but not as intended
    Column("created_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("asset_id", "kind"),
)

# Groups of near duplicates as the last `similar` job found them.
near_duplicates = Table(
    "near_duplicates",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("group_id", BigInteger, nullable=False),  # the keeper's asset id
    Column("distance", Integer, nullable=False),  # Hamming distance to the keeper's phash
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_near_duplicates_group_id", "group_id"),
)

# Pairs of assets whose hashes lie within the near-duplicate radius, each pair once
# (asset_id < other_id): what `similar` keeps between runs, so that new assets are
# paired with the library without pairing the library again (pipeline.near.groups).
near_pairs = Table(
    "near_pairs",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "other_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("distance", Integer, nullable=False),
    PrimaryKeyConstraint("asset_id", "other_id"),
    Index("ix_near_pairs_other_id", "other_id"),
)

# One row: the radius and the hashes the pairs were found with.
near_index = Table(
    "near_index",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # always 1
    Column("max_distance", Integer, nullable=False),  # the job's ceiling
    Column("radius", Integer, nullable=False),  # the radius used (adaptive, <= ceiling)
    Column("hashes", BigInteger, nullable=False),  # hashed assets when last paired
    # Assets updated at or after this instant (less a margin) are paired again.
    Column("paired_until", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # The chunk widths of near_chunks ("22,21,21"); NULL: no chunks stored yet.
    Column("chunk_bits", String(40)),
)

# Each paired hash cut into the chunks of near_index.chunk_bits, one row per chunk
# (pipeline.near.chunks): new assets find their candidates by looking up a few chunk
# values here instead of reading every hash. ``phash`` is the hash as a signed 64-bit
# integer, so a candidate is checked without another read. No foreign key: a full
# regroup writes millions of rows at once (a key check per row would double the
# time), and candidates are checked against present files anyway.
near_chunks = Table(
    "near_chunks",
    metadata,
    Column("chunk", SmallInteger, nullable=False),
    Column("value", Integer, nullable=False),
    Column("asset_id", BigInteger().with_variant(Integer(), "sqlite"), nullable=False),
    Column("phash", BigInteger, nullable=False),
    PrimaryKeyConstraint("chunk", "value", "asset_id"),
    # An asset's stored hash, by its first chunk's row (its other rows follow from it).
    Index(
        "ix_near_chunks_asset_id",
        "asset_id",
        sqlite_where=text("chunk = 0"),
        postgresql_where=text("chunk = 0"),
    ),
    sqlite_with_rowid=False,  # the lookups read the table's own B-tree: no rowid hop
)

# Keepers chosen for a duplicate group (web UI review); nothing is deleted. group_key
# is "exact:<asset id>" (keep: file paths) or "near:<group id>" (keep: asset ids).
duplicate_decisions = Table(
    "duplicate_decisions",
    metadata,
    Column("group_key", String(64), primary_key=True),
    Column("keep", JSON, nullable=False),
    Column("decided_at", UTCDateTime, nullable=False),
)

# Uploads over tus (pipeline.uploads): one row per upload, from its creation on. Its
# bytes are the partial file named by id under the uploads root's hidden folder
# (pipeline.uploads.partials), whose size is the offset; a finished upload has its
# name in the uploads source (placed) and keeps its row until the file is catalogued
# (catalogued_at), for the day's quota. Expired partials are removed with their row.
uploads = Table(
    "uploads",
    metadata,
    Column("id", String(32), primary_key=True),  # random hex: the upload's URL
    Column("device", String(64), nullable=False),  # sanitised folder name
    Column("filename", Text, nullable=False),  # sanitised, as asked for
    Column("length", BigInteger, nullable=False),  # Upload-Length
    Column("mtime_ns", BigInteger),  # from the client's lastModified
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("placed", Text),  # the landed file, relative to the uploads root
    Column("catalogued_at", UTCDateTime),
    Index("ix_uploads_created_at", "created_at"),  # the day's quota
    Index("ix_uploads_expires_at", "expires_at"),  # the sweep of expired partials
)

# Curation (pipeline.curation): what a person decided about an asset. One row per asset
# ever curated; an asset without one is unrated, not a favourite, not rejected, untagged.
# ``version`` counts the asset's curation changes (marks, tags, albums) and only moves
# when something really changed, so an XMP writer can tell whether what it wrote is
# still current.
asset_curation = Table(
    "asset_curation",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("rating", SmallInteger, nullable=False, server_default=text("0")),  # 0: unrated
    Column("favorite", Boolean, nullable=False, server_default=false()),
    Column("rejected", Boolean, nullable=False, server_default=false()),
    Column("version", BigInteger, nullable=False),
    Column("curated_at", UTCDateTime, nullable=False),
)

# The assets whose curation changed since a writer (the XMP sidecar writer) last wrote
# them, with the version it must write: an outbox. A writer deletes a row only up to the
# version it wrote (``pipeline.curation.changes``), so a change made meanwhile stays.
curation_pending = Table(
    "curation_pending",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("version", BigInteger, nullable=False),
    Column("changed_at", UTCDateTime, nullable=False),
    Index("ix_curation_pending_changed_at", "changed_at"),
)

# Keywords. ``path`` is the tag as first spelled, hierarchical levels joined by "|"
# (``Places|France|Paris``, Lightroom's lr:hierarchicalSubject); ``key`` is its casefolded
# spelling, unique, so that "paris" and "Paris" are one tag and a parent's children are
# the key range after "<parent>|" (pipeline.curation.tags).
tags = Table(
    "tags",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("path", String(500), nullable=False),
    Column("key", String(500), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("key"),
)

asset_tags = Table(
    "asset_tags",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "tag_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("tags.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("tagged_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("asset_id", "tag_id"),
    Index("ix_asset_tags_tag_id_asset_id", "tag_id", "asset_id"),
)

# Albums: an asset may be in many. The date range is derived from the members when read;
# the cover is the chosen asset, or the first member added when none is chosen.
albums = Table(
    "albums",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("key", String(200), nullable=False),  # casefolded name: unique
    Column(
        "cover_asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="SET NULL"),
    ),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("key"),
)

album_assets = Table(
    "album_assets",
    metadata,
    Column(
        "album_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("albums.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("added_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("album_id", "asset_id"),
    Index("ix_album_assets_asset_id", "asset_id"),
)

# When each curation field of an asset last changed in the catalogue (rating, favorite,
# rejected, tags, albums): the XMP read-back (pipeline.xmp.readback) compares it with
# the time a sidecar was changed by another program, field by field, newer wins.
curation_field_changes = Table(
    "curation_field_changes",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("field", String(16), nullable=False),
    Column("changed_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("asset_id", "field"),
)

# Each asset's XMP sidecar as the catalogue last saw it (pipeline.xmp): where it is, the
# curation fields it held when last written or read (``fields``, JSON), its stamp
# ("size:mtime_ns") then, and how that went: written, read (taken from it), embedded
# (no sidecar: the photo's own rating and keywords were read), none (read, and it
# said nothing), read_only (its folder cannot be written: the curation is kept in the
# catalogue only), failed.
xmp_sidecars = Table(
    "xmp_sidecars",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("path", Text),  # absolute (pipeline.files.paths encoding); NULL: none yet
    Column("fields", JSON),
    Column("stamp", String(64)),
    Column("state", String(16), nullable=False),
    Column("message", Text),
    Column("synced_at", UTCDateTime, nullable=False),
)

# The journal of xmp_write jobs: per asset, the sidecar's bytes before the job wrote it
# (``existed`` false: there was none), written and committed before the rename, and the
# SHA-256 of what it wrote, so that an undo restores exactly and refuses a sidecar
# changed since. No foreign keys: the journal outlives pruned job rows.
xmp_entries = Table(
    "xmp_entries",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("job_id", String(36), nullable=False),
    Column("asset_id", BigInteger, nullable=False),
    Column("path", Text, nullable=False),
    Column("existed", Boolean, nullable=False),
    Column("old_bytes", LargeBinary),
    Column("new_sha256", String(64)),
    Column("state", String(16), nullable=False),  # planned, written, undone
    Column("written_at", UTCDateTime, nullable=False),
    Column("undo_job_id", String(36)),
    Column("undone_at", UTCDateTime),
    UniqueConstraint("job_id", "asset_id"),
)

# The map's summary: per populated cell of levels 0..16 of the map's grid
# (pipeline.library.map_grid), its assets' count, position sums (the mean is the
# cluster's centre) and bounds (they only grow; see migration 0025). Kept by triggers on
# assets that migration 0025 creates, so that every writer of assets keeps it.
map_cells = Table(
    "map_cells",
    metadata,
    Column("level", SmallInteger, nullable=False),
    Column("cell", BigInteger, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("lat_sum", Float, nullable=False),
    Column("lon_sum", Float, nullable=False),
    Column("south", Float, nullable=False),
    Column("north", Float, nullable=False),
    Column("west", Float, nullable=False),
    Column("east", Float, nullable=False),
    Column("sample_id", BigInteger),  # one of them, for a thumbnail (see migration 0025)
    PrimaryKeyConstraint("level", "cell"),
)

# ── faces and people (pipeline.faces) ──────────────────────────────────────────

# A person: faces grouped by the faces job, named (or not yet) by the user. ``key`` is
# the casefolded name, unique among named people (NULLs are many on both databases).
people = Table(
    "people",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("name", String(200)),
    Column("key", String(200)),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("key"),
)

# A face found in an asset's preview: box and landmarks in fractions of the image (any
# rendition), the 128-float embedding (float32 bytes), the detector's score and the
# chip's sharpness. ``assigned``: how it came to its person — "auto" (the grouping,
# which may place it), "user" (a decision the grouping never undoes), NULL with no
# person. ``not_face``: the user said it is none (kept, so a later scan does not bring
# it back).
faces = Table(
    "faces",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("ordinal", SmallInteger, nullable=False),  # its place in the asset, from 0
    Column("box_left", Float, nullable=False),
    Column("box_top", Float, nullable=False),
    Column("box_width", Float, nullable=False),
    Column("box_height", Float, nullable=False),
    Column("landmarks", JSON, nullable=False),  # [[x, y] * 5]
    Column("embedding", LargeBinary, nullable=False),
    Column("score", Float, nullable=False),
    Column("sharpness", Float, nullable=False),
    Column(
        "person_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("people.id", ondelete="SET NULL"),
    ),
    Column("assigned", String(8)),
    Column("not_face", Boolean, nullable=False, server_default=false()),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("asset_id", "ordinal"),
    Index("ix_faces_person_id", "person_id"),
)

# Which assets the faces job looked at, and what it skipped there: an asset with a row
# is not scanned again (its faces, and what the user decided about them, stay).
face_scans = Table(
    "face_scans",
    metadata,
    Column(
        "asset_id",
        BigInteger().with_variant(Integer(), "sqlite"),
        ForeignKey("assets.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("faces", Integer, nullable=False),
    Column("too_small", Integer, nullable=False),
    Column("blurred", Integer, nullable=False),
    Column("scanned_at", UTCDateTime, nullable=False),
)

# The timeline's summary: per capture day (local calendar, taken_local's first ten
# characters) how many assets the library shows on it (motion halves of Live Photos
# left out). Kept by triggers on assets that migration 0029 creates
# (pipeline.library.timeline).
timeline_days = Table(
    "timeline_days",
    metadata,
    Column("day", String(10), nullable=False),
    Column("count", BigInteger, nullable=False),
    PrimaryKeyConstraint("day"),
)

# The timeline filtered by camera or place: per camera (make, model) and per stored
# place (country code, country, region, city, district), '' where not known, the assets
# of each capture day as timeline_days counts them; an asset with no camera (or no place)
# is not in that summary. Kept by triggers on assets that migration 0032 creates
# (pipeline.library.timeline).
timeline_cameras = Table(
    "timeline_cameras",
    metadata,
    Column("make", String, nullable=False),
    Column("model", String, nullable=False),
    Column("day", String(10), nullable=False),
    Column("count", BigInteger, nullable=False),
    PrimaryKeyConstraint("make", "model", "day"),
    Index("ix_timeline_cameras_model_day", "model", "day"),
)
timeline_places = Table(
    "timeline_places",
    metadata,
    Column("country_code", String, nullable=False),
    Column("country", String, nullable=False),
    Column("region", String, nullable=False),
    Column("city", String, nullable=False),
    Column("district", String, nullable=False),
    Column("day", String(10), nullable=False),
    Column("count", BigInteger, nullable=False),
    PrimaryKeyConstraint("country_code", "country", "region", "city", "district", "day"),
    # Each place column leads an index (country_code the primary key): the matching
    # values' rows are ranges of them (pipeline.library.text_filters.matching_values).
    *(
        Index(f"ix_timeline_places_{c}_day", c, "day")
        for c in ("country", "region", "city", "district")
    ),
)

# The places beside the map: per stored place of the assets (country code, country,
# region, city; '' where a level is not known) how many assets the map shows there
# (motion halves of Live Photos left out), how many have a position and those
# positions' bounds (they only grow until the last positioned one leaves). Kept by
# triggers on assets that migration 0030 creates (pipeline.library.places).
place_counts = Table(
    "place_counts",
    metadata,
    Column("country_code", String, nullable=False),
    Column("country", String, nullable=False),
    Column("region", String, nullable=False),
    Column("city", String, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("located", BigInteger, nullable=False),
    Column("south", Float),
    Column("north", Float),
    Column("west", Float),
    Column("east", Float),
    PrimaryKeyConstraint("country_code", "country", "region", "city"),
)
