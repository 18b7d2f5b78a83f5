"""The organize plan: which catalogued file goes where, decided before anything moves.

``build_plan`` is a pure function of catalogue rows (``Candidate``), the template and
what the destination already holds (``Existing``): the dry run, the API and the job
itself all call it, so they agree. Photos travel in groups: a RAW and its same-stem
JPEG (companions), a Live Photo's still and its MOV (the MOV a companion, grouped with
its still even when their names differ) and ``.xmp``/``.aae`` sidecars keep the photo's
new name; a Google Takeout JSON goes with the photo it describes, named after it
(``media.takeout_names``), and stays with it when that photo is not placed.

One content is placed once: a later copy (whatever its name) is skipped as a
``duplicate`` naming the copy that was placed, and so is content the destination
already holds from an earlier run (its catalogue rows, ``resident`` candidates, and
whatever ``existing`` found there), unless ``keep_duplicates``. Among copies of one
content, an original-looking name is placed before a copy-looking one (``keeper``).

A file whose very content is already at its planned name is skipped (``exists``):
someone put it there, and a move must not take the source away from beside it. Unless
an earlier organize into this destination put it there for this very file and did not
finish (its journal entry failed or never ran: a move whose source turned read-only
after the copy was made): that entry is finished now (``unfinished``: a move retires
the source, a copy is catalogued), so that no copy stays behind uncatalogued while its
source stays too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, files, jobs, organize_entries, sources
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.media import SUPPORTED_EXTENSIONS, camera_names
from photo_pipeline.media.capture_time import confidence
from photo_pipeline.media.formats import RAW_FORMATS, SIDECAR_EXTENSIONS
from photo_pipeline.media.takeout_names import takeout_owners, takeout_renamed
from photo_pipeline.pipeline.files import paths, transfer
from photo_pipeline.pipeline.library import keeper
from photo_pipeline.pipeline.library.catalog import MISSING, PRESENT
from photo_pipeline.pipeline.library.scope import Scope
from photo_pipeline.pipeline.organize.states import UNFINISHED
from photo_pipeline.pipeline.organize.template import TAKEN_SOURCE, Template, extension, is_undated
from photo_pipeline.pipeline.organize.template import sibling as sibling_name

MAX_COUNTER = 10_000
# A RAW and its JPEG carry one capture time; a photo of the same folder and stem taken
# further apart is another shot (cameras and phones number from 0001 again).
SAME_SHOT_SECONDS = 2.0


@dataclass(frozen=True)
class Candidate:
    """One catalogued file that may be organized (a photo, or a sidecar file)."""

    file_id: int | None
    source_id: int
    source_root: str  # absolute
    path: str  # stored form, relative to the source
    content_hash: str
    size: int
    photo: bool
    file_format: str | None = None
    values: dict[str, Any] = field(default_factory=dict)  # template field values
    # Already in the destination (a catalogued file of it): never planned, but its
    # content counts as placed there.
    resident: bool = False
    # A Live Photo's motion part: the group key (source, folder, stem) of its still,
    # whatever its own name (pipeline.library.live_photos).
    bundle: tuple[int, str, str] | None = None
    # A Google Takeout JSON: the path (stored form) of the photo it describes.
    takeout_of: str | None = None
    # Destination paths (stored form) where an ended organize into this destination
    # planned this very file, with this content, and did not finish it: what is found
    # there with this content is that organize's copy (see the module's docstring).
    left_at: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return os.path.basename(paths.from_text(self.path))

    def in_scope(self, scope: Scope) -> bool:
        """Whether the scope takes this photo (by its source and local capture date)."""
        return scope.takes(self.source_id, self.values.get("taken"))


@dataclass(frozen=True)
class PlanEntry:
    seq: int
    kind: str  # photo, companion, sidecar
    action: str  # copy, move, skip
    # skip: exists, duplicate, photo_skipped, too_many_collisions; else renamed,
    # unfinished (an earlier organize's copy is there: finished now) or None
    reason: str | None
    candidate: Candidate
    dest_path: str  # stored form, relative to the destination
    # A skipped duplicate: the destination path (stored form) that holds its content.
    duplicate_of: str | None = None
    # Where the capture time that named the entry came from (its group's photo's:
    # media.capture_time.SOURCES), and whether that is no date at all (an mtime).
    date_source: str | None = None
    undated: bool = False

    def as_dict(self, destination: str) -> dict[str, Any]:
        c = self.candidate
        duplicate_of = (
            os.path.join(destination, paths.display(self.duplicate_of))
            if self.duplicate_of is not None
            else None
        )
        return {
            "seq": self.seq,
            "kind": self.kind,
            "action": self.action,
            "reason": self.reason,
            "source": os.path.join(c.source_root, paths.display(c.path)),
            "destination": os.path.join(destination, paths.display(self.dest_path)),
            "size": c.size,
            "content_hash": c.content_hash,
            "duplicate_of": duplicate_of,
            "date_source": self.date_source,
            "date_confidence": confidence(self.date_source) if self.date_source else None,
            "undated": self.undated,
        }


Existing = Callable[[str], str | None]


def build_plan(
    candidates: Iterable[Candidate],
    template: Template,
    *,
    move: bool,
    existing: Existing,
    keep_duplicates: bool = False,
    scope: Scope | None = None,
) -> list[PlanEntry]:
    """The plan: every photo with its companions and sidecars, in a stable order;
    with ``scope``, only the groups whose photo it takes (a sidecar goes with its photo).

    ``existing(relative)`` says what the destination holds at a path: None (free),
    a content hash, or any other string (a folder, say). A name held by different
    content is never reused: the group moves on to the next ``{counter}``. A photo
    whose content is already placed (planned, resident or found there) is skipped as
    a ``duplicate`` of that path, unless ``keep_duplicates``. A name that holds the
    file's very content is skipped (``exists``), unless it is in the candidate's
    ``left_at``: then it is moved or copied there all the same (``unfinished``), which
    finds the content in place and completes.
    """
    action = "move" if move else "copy"
    claimed: dict[str, str] = {}
    candidates = list(candidates)
    placed = _Placed(None if keep_duplicates else {})
    if scope is not None and scope.everything:
        scope = None
    for resident in candidates:
        if resident.resident and resident.photo:
            placed.add(resident.content_hash, paths.from_text(resident.path))
    plan: list[PlanEntry] = []
    for group in _groups(c for c in candidates if not c.resident):
        if scope is not None and not group.primary.in_scope(scope):
            continue
        members = _place_group(group, template, claimed, existing, placed)
        date_source = group.primary.values.get(TAKEN_SOURCE)
        undated = is_undated(group.primary.values)
        for kind, candidate, dest, status in members:
            reason = status if status != "free" else None
            if status in ("renamed", UNFINISHED_COPY):
                status = "free"
            plan.append(
                PlanEntry(
                    seq=len(plan) + 1,
                    kind=kind,
                    action=action if status == "free" else "skip",
                    reason=reason,
                    candidate=candidate,
                    dest_path=paths.to_text(dest),
                    duplicate_of=paths.to_text(dest) if status == "duplicate" else None,
                    date_source=date_source,
                    undated=undated,
                )
            )
    return plan


class _Placed:
    """Content already placed in the destination -> the path that holds it (None:
    ``keep_duplicates``, nothing is tracked)."""

    def __init__(self, by_content: dict[str, str] | None) -> None:
        self._by_content = by_content

    def add(self, content_hash: str, relative: str) -> None:
        if self._by_content is not None:
            self._by_content.setdefault(content_hash, relative)

    def get(self, content_hash: str) -> str | None:
        return None if self._by_content is None else self._by_content.get(content_hash)


@dataclass
class _Group:
    primary: Candidate
    companions: list[Candidate] = field(default_factory=list)
    sidecars: list[tuple[Candidate, str]] = field(default_factory=list)  # with name suffix


def _same_shot(primary: Candidate, other: Candidate) -> bool:
    """Whether a photo of the primary's folder and stem is its companion (the JPEG of a
    RAW, a phone's export of a HEIC): taken within ``SAME_SHOT_SECONDS`` of it, or
    either without a capture time to tell."""
    first, second = _taken(primary), _taken(other)
    if first is None or second is None:
        return True
    return abs((first - second).total_seconds()) <= SAME_SHOT_SECONDS


def _taken(candidate: Candidate) -> datetime | None:
    value = candidate.values.get("taken")
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    return value.replace(tzinfo=None) if isinstance(value, datetime) else None


def _split_name(name: str) -> tuple[str, str]:
    """``IMG_1.JPG.xmp`` -> (``IMG_1``, ``.JPG.xmp``); ``IMG_1.CR2`` -> (``IMG_1``, ``.CR2``)."""
    stem, ext = os.path.splitext(name)
    if ext.lower() in SIDECAR_EXTENSIONS:
        inner_stem, inner_ext = os.path.splitext(stem)
        if inner_ext.lower() in SUPPORTED_EXTENSIONS:
            return inner_stem, inner_ext + ext
    return stem, ext


def group_key(candidate: Candidate) -> tuple[int, str, str]:
    """(source, folder, stem as ``paths.name_key`` reads it): the files that travel
    together."""
    folder, name = os.path.split(paths.from_text(candidate.path))
    return candidate.source_id, folder, paths.name_key(_split_name(name)[0])


def _groups(candidates: Iterable[Candidate]) -> list[_Group]:
    """Photos grouped with same-folder, same-stem companions (RAW+JPEG) and sidecars;
    RAW first, so that it names the group. Sidecars without a photo stay where they are."""
    by_key: dict[tuple[int, str, str], list[Candidate]] = {}
    for candidate in candidates:
        by_key.setdefault(candidate.bundle or group_key(candidate), []).append(candidate)
    groups: list[_Group] = []
    for members in by_key.values():
        photos = sorted(
            (c for c in members if c.photo),
            # a Live Photo's motion part never names the group: its still does
            key=lambda c: (c.bundle is not None, c.file_format not in RAW_FORMATS, c.name, c.path),
        )
        if not photos:
            continue
        group = _Group(photos[0])
        seen_ext = {extension(photos[0].name, photos[0].file_format)}
        for photo in photos[1:]:
            ext = extension(photo.name, photo.file_format)
            if ext in seen_ext or not _same_shot(group.primary, photo):
                # IMG.jpg and IMG.JPG, or a merged card dump's IMG_0001.JPG of 2019
                # beside a phone's IMG_0001.HEIC of 2023: two photos, two names
                groups.append(_Group(photo))
            else:
                seen_ext.add(ext)
                group.companions.append(photo)
        for sidecar in sorted((c for c in members if not c.photo), key=lambda c: c.path):
            group.sidecars.append((sidecar, _split_name(sidecar.name)[1]))
        groups.append(group)
    # A lone copy of content that is another group's companion (a Live Photo's MOV
    # exported under another name) comes after every group: the pair, placed first,
    # keeps its part beside it, and the lone copy is the duplicate.
    companions = {c.content_hash for g in groups for c in g.companions}
    groups.sort(
        key=lambda g: (
            not g.companions and g.primary.content_hash in companions,
            str(g.primary.values.get("taken") or ""),
            # Of copies of one photo, a real file before a symlink (which organize
            # does not follow), then the original-looking name, then the one with its
            # RAW+JPEG partner and sidecars (the user's edits travel with it), is
            # placed first: as dedupe's keeper (pipeline.library.keeper).
            paths.is_symlink(g.primary.source_root, g.primary.path),
            keeper.looks_like_copy(g.primary.name),
            -(len(g.companions) + len(g.sidecars)),
            g.primary.source_root,
            g.primary.path,
        )
    )
    return groups


def _place_group(
    group: _Group,
    template: Template,
    claimed: dict[str, str],
    existing: Existing,
    placed: _Placed,
) -> list[tuple[str, Candidate, str, str]]:
    """Find the first counter at which no member's name is held by other content.
    ``claimed`` maps case-folded names to content (two names that differ only in
    case are one file on many filesystems: SD cards, macOS, SMB shares). A photo
    whose content ``placed`` knows is a ``duplicate`` of the path that holds it."""
    for counter in range(1, MAX_COUNTER + 1):
        named = _member_names(group, template.render(group.primary.values, counter))
        taken = dict(claimed)
        statuses = []
        members = []
        for kind, candidate, dest in named:
            status = _status(dest, candidate, taken, existing, placed)
            elsewhere = placed.get(candidate.content_hash)
            if status == "free" and kind != "sidecar" and elsewhere is not None:
                status, dest = "duplicate", elsewhere
            else:
                taken.setdefault(dest.casefold(), candidate.content_hash)
            statuses.append(status)
            members.append((kind, candidate, dest))
        if "conflict" in statuses:
            continue
        statuses = _sidecars_stay(members, statuses)
        claimed.update(taken)
        for (kind, candidate, dest), status in zip(members, statuses, strict=True):
            if kind != "sidecar" and status in ("free", "exists", UNFINISHED_COPY):
                placed.add(candidate.content_hash, dest)
        return [
            (kind, candidate, dest, "renamed" if status == "free" and counter > 1 else status)
            for (kind, candidate, dest), status in zip(members, statuses, strict=True)
        ]
    everyone = [("photo", group.primary)] + [("companion", c) for c in group.companions]
    everyone += [("sidecar", c) for c, _ in group.sidecars]
    return [(kind, c, paths.from_text(c.path), "too_many_collisions") for kind, c in everyone]


def _sidecars_stay(members: list[tuple[str, Candidate, str]], statuses: list[str]) -> list[str]:
    """A photo that stays where it is (its content is already placed) keeps its
    sidecars: a move must not take them away from it. A sidecar stays with the
    group's photo, and a Takeout JSON also with the photo it describes."""
    status_of = {
        c.path: s for (k, c, _), s in zip(members, statuses, strict=True) if k != "sidecar"
    }
    kept = []
    for (kind, candidate, _), status in zip(members, statuses, strict=True):
        if kind == "sidecar" and status in _GOING:
            owner = status_of.get(candidate.takeout_of or "", "free")
            if statuses[0] not in _GOING or owner not in _GOING:
                status = "photo_skipped"
        kept.append(status)
    return kept


def _member_names(group: _Group, primary: str) -> list[tuple[str, Candidate, str]]:
    """Names of a group's members next to its photo's: ``X.cr2``, ``X.jpg``, and
    sidecars ``X.xmp``, or ``X.jpg.xmp`` for one that names its photo's extension, and
    a Takeout JSON after the new name of the photo it describes (``X.jpg.json``)."""
    members = [("photo", group.primary, primary)]
    by_ext = {os.path.splitext(group.primary.name)[1].lower(): primary}
    by_path = {group.primary.path: primary}
    for companion in group.companions:
        name = sibling_name(primary, "." + extension(companion.name, companion.file_format))
        members.append(("companion", companion, name))
        by_ext[os.path.splitext(companion.name)[1].lower()] = name
        by_path[companion.path] = name
    for sidecar, written in group.sidecars:
        # A sidecar's extension is spelled as its photo's: lower case (IMG_1.AAE and
        # IMG_1.JPG become 20230714_IMG_1.aae beside 20230714_IMG_1.jpg).
        suffix = written.lower()
        inner, own = os.path.splitext(suffix)
        described = sidecar.takeout_of or ""
        if described in by_path:
            folder, _, new = by_path[described].rpartition("/")
            old = os.path.basename(paths.from_text(described))
            renamed = takeout_renamed(sidecar.name, old, new)
            name = f"{folder}/{renamed}" if folder else renamed
        elif inner and inner.lower() in by_ext:
            name = sibling_name(by_ext[inner.lower()] + ".x", own)  # X.jpg + .xmp
        else:
            name = sibling_name(primary, suffix)
        members.append(("sidecar", sidecar, name))
    return members


def _status(
    dest: str, candidate: Candidate, claimed: dict[str, str], existing: Existing, placed: _Placed
) -> str:
    content_hash = candidate.content_hash
    key = dest.casefold()
    if key in claimed:
        return "duplicate" if claimed[key] == content_hash else "conflict"
    there = existing(dest)
    if there is None:
        return "free"
    if _HASH.fullmatch(there):
        placed.add(there, dest)  # what the destination holds counts as placed
    if there != content_hash:
        return "conflict"
    return UNFINISHED_COPY if paths.to_text(dest) in candidate.left_at else "exists"


_HASH = re.compile(r"[0-9a-f]{64}")
# The reason of an entry that finishes what an earlier organize left (module docstring).
UNFINISHED_COPY = "unfinished"
# The statuses of a member that goes to the destination (not skipped).
_GOING = ("free", UNFINISHED_COPY)


class DestinationState:
    """``Existing`` for a real folder: hashes a file only when a plan asks about it."""

    def __init__(self, destination: str) -> None:
        self._root = destination
        self._cache: dict[str, str | None] = {}

    def __call__(self, relative: str) -> str | None:
        if relative not in self._cache:
            path = os.path.join(self._root, relative)
            try:
                info = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                self._cache[relative] = None
            else:
                try:
                    found = transfer.content_hash(path) if os.path.isfile(path) else None
                except ItemError:
                    found = None  # unreadable: treated as taken by something else
                self._cache[relative] = found or f"not-a-readable-file:{info.st_ino}"
        return self._cache[relative]


def _photo(row: Any, values: dict[str, Any] | None = None, *, resident: bool = False) -> Candidate:
    """The candidate of a catalogued photo's row (of ``catalogue_candidates``'s query)."""
    return Candidate(
        row.id,
        row.source_id,
        row.root,
        row.path,
        row.content_hash,
        row.asset_size,
        True,
        row.format,
        values or {},
        resident=resident,
    )


def catalogue_candidates(
    session_factory: sessionmaker[Session], destination: str
) -> list[Candidate]:
    """Every present photo outside ``destination`` and every sidecar file next to one
    (sidecars are hashed here: the catalogue does not hash files it cannot read), and
    the photos catalogued inside ``destination`` as ``resident``; each with where an
    ended organize into ``destination`` left it unfinished (``left_at``)."""
    place_columns = [assets.c[name] for name in ("country", "city") if name in assets.c]
    stills: dict[int, list[Candidate]] = {}  # asset id -> its present files
    query = (
        select(
            files.c.id,
            files.c.source_id,
            files.c.path,
            files.c.state,
            files.c.size,
            sources.c.path.label("root"),
            assets.c.content_hash,
            assets.c.size.label("asset_size"),
            assets.c.format,
            assets.c.taken_local,
            assets.c.taken_source,
            assets.c.make,
            assets.c.model,
            assets.c.id.label("asset_id"),
            assets.c.live_of,
            *place_columns,
        )
        .join(sources, sources.c.id == files.c.source_id)
        .outerjoin(assets, assets.c.id == files.c.asset_id)
        .where(files.c.state != MISSING)
        .order_by(files.c.source_id, files.c.path)
    )
    with read_session(session_factory) as session:
        rows = session.execute(query).all()
    candidates = []
    motion_parts: dict[int, int] = {}  # candidate index -> its still's asset id
    jsons: dict[tuple[int, str], dict[str, Any]] = {}  # (source, folder) -> name -> row
    for row in rows:
        name = os.path.basename(paths.from_text(row.path))
        if row.root == destination:
            if row.state == PRESENT and row.content_hash is not None:
                candidates.append(_photo(row, resident=True))
            continue
        if row.state == PRESENT and row.content_hash is not None:
            if row.live_of is not None:
                motion_parts[len(candidates)] = row.live_of
            values = {
                "taken": row.taken_local,
                TAKEN_SOURCE: row.taken_source,
                "folder": os.path.dirname(paths.from_text(row.path)),
                # Names as the library shows them (media.camera_names): "Nikon", not
                # "NIKON CORPORATION"; a model without its make repeated or NUL padding.
                "make": camera_names.display_make(row.make, row.model),
                "model": camera_names.display_model(row.make, row.model),
                "ext": extension(name, row.format),
                "hash8": row.content_hash[:8],
                "original_name": os.path.splitext(name)[0],
                "country": getattr(row, "country", None),
                "city": getattr(row, "city", None),
            }
            candidates.append(_photo(row, values))
            stills.setdefault(row.asset_id, []).append(candidates[-1])
        elif os.path.splitext(name)[1].lower() in SIDECAR_EXTENSIONS:
            sidecar = _sidecar(row)
            if sidecar is not None:
                candidates.append(sidecar)
        elif name.endswith(".json"):
            folder = os.path.dirname(paths.from_text(row.path))
            jsons.setdefault((row.source_id, folder), {})[name] = row
    # A motion part travels with its still: the still's file in the motion part's own
    # folder if there is one, else its first.
    for index, still_id in motion_parts.items():
        motion = candidates[index]
        beside = stills.get(still_id, [])
        folder = os.path.dirname(paths.from_text(motion.path))
        same_folder = [
            c
            for c in beside
            if c.source_id == motion.source_id
            and os.path.dirname(paths.from_text(c.path)) == folder
        ]
        if same_folder or beside:
            candidates[index] = replace(motion, bundle=group_key((same_folder or beside)[0]))
    return _with_unfinished(
        session_factory, destination, candidates + _takeout_jsons(candidates, jsons)
    )


def _with_unfinished(
    session_factory: sessionmaker[Session], destination: str, candidates: list[Candidate]
) -> list[Candidate]:
    """The candidates with ``left_at``: the destination paths where organize jobs
    into ``destination`` that have ended planned to place that very file (its row and
    content) and left the entry unfinished (planned or failed)."""
    query = (
        select(
            organize_entries.c.file_id,
            organize_entries.c.content_hash,
            organize_entries.c.dest_path,
            jobs.c.params,
        )
        .join(jobs, jobs.c.id == organize_entries.c.job_id)
        .where(
            organize_entries.c.state.in_(UNFINISHED),
            organize_entries.c.action != "skip",
            organize_entries.c.file_id.is_not(None),
            jobs.c.state.in_(list(FINISHED_STATES)),
        )
    )
    left: dict[tuple[int, str], set[str]] = {}
    with read_session(session_factory) as session:
        for row in session.execute(query):
            if row.params.get("destination") == destination:
                left.setdefault((row.file_id, row.content_hash), set()).add(row.dest_path)
    if not left:
        return candidates
    return [
        replace(c, left_at=frozenset(found))
        if c.file_id is not None and (found := left.get((c.file_id, c.content_hash)))
        else c
        for c in candidates
    ]


def _sidecar(row: Any, **fields: Any) -> Candidate | None:
    """The candidate of a sidecar file's row, hashed now; None when it cannot be read
    (it is left where it is)."""
    absolute = os.path.join(row.root, paths.from_text(row.path))
    try:
        digest = transfer.content_hash(absolute)
        size = os.path.getsize(absolute)
    except (ItemError, OSError):
        return None
    if digest is None:
        return None
    return Candidate(row.id, row.source_id, row.root, row.path, digest, size, False, **fields)


def _takeout_jsons(
    candidates: list[Candidate], jsons: dict[tuple[int, str], dict[str, Any]]
) -> list[Candidate]:
    """The Takeout JSONs among ``jsons``, each in the group of the photo it describes."""
    photos: dict[tuple[int, str], dict[str, Candidate]] = {}
    for c in candidates:
        if c.photo and not c.resident:
            folder = os.path.dirname(paths.from_text(c.path))
            photos.setdefault((c.source_id, folder), {})[c.name] = c
    found = []
    for key, rows in jsons.items():
        beside = photos.get(key, {})
        for json_name, photo_name in takeout_owners(beside, rows).items():
            photo = beside[photo_name]
            bundle = photo.bundle or group_key(photo)
            sidecar = _sidecar(rows[json_name], bundle=bundle, takeout_of=photo.path)
            if sidecar is not None:
                found.append(sidecar)
    return found
