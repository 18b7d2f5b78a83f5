"""The dedupe plan: which copy of each duplicate stays, which move to the quarantine.

Read from the catalogue, decided by :mod:`pipeline.library.keeper`, touching nothing: the dry
run, the API and the job itself call :func:`build_dedupe_plan`, so they agree.

- Exact groups (one content, several present files): the keeper stays, and so does
  every other copy the user's decision names; the rest move.
- Near groups (different bytes) only with ``near`` and only where the user recorded
  a decision: every file of an asset not kept moves, checked against a file of a kept
  asset.
- Sidecars (``.xmp``/``.aae``) move with their photo when every photo of their
  bundle (same folder, same stem) moves, so a bundle is never split.
- A Live Photo is one: its motion part (``assets.live_of``) is never a near duplicate
  of anything, it leaves with its still when a near decision lets the still go, and of
  exact copies of it the one beside the still's keeper stays (``beside_its_still``).
- A scope (``library.scope``) limits the plan to the files of some sources and the
  assets taken on some days: the copies outside it are neither moved nor kept, so a
  dedupe of one folder keeps one copy in it.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import (
    assets,
    duplicate_decisions,
    files,
    jobs,
    near_duplicates,
    sources,
)
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media import SUPPORTED_EXTENSIONS
from photo_pipeline.media.formats import SIDECAR_EXTENSIONS
from photo_pipeline.pipeline.files import paths, transfer
from photo_pipeline.pipeline.library import keeper
from photo_pipeline.pipeline.library.catalog import MISSING, PRESENT, QUARANTINED
from photo_pipeline.pipeline.library.scope import Scope

# Up to this many assets, Live Photo pairs are looked up by id rather than all read.
_FEW = 5_000
# Bundle ranges read per query (an OR of index ranges).
_RANGES_PER_QUERY = 200
ORGANIZE_JOB_TYPE = "organize"  # pipeline.organize.JOB_TYPE, without importing the handler


@dataclass(frozen=True)
class Member:
    """One catalogued file."""

    file_id: int
    source_id: int
    source_root: str  # absolute
    path: str  # stored form, relative to the source
    content_hash: str
    size: int
    mtime_ns: int
    asset_id: int | None

    @property
    def key(self) -> str:
        """The file's full path, as decisions and listings name it."""
        return f"{self.source_root}/{paths.display(self.path)}"

    @property
    def folder(self) -> tuple[int, str]:
        return self.source_id, os.path.dirname(paths.from_text(self.path))

    @property
    def stem(self) -> str:
        return bundle_stem(os.path.basename(paths.from_text(self.path)))


@dataclass(frozen=True)
class Move:
    """One file to move into the quarantine, and the keeper it is checked against."""

    seq: int
    group_key: str
    kind: str  # copy (an exact duplicate), near (a near duplicate not kept), sidecar
    reason: str  # why the keeper won (keeper.REASONS)
    member: Member
    quarantine_path: str  # stored form, relative to the job's quarantine folder
    keeper: Member


@dataclass
class GroupPlan:
    key: str  # exact:<asset id> or near:<group id>
    keeper: Member
    reason: str
    kept: list[Member]
    moves: list[Move] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.key,
            "kind": self.key.split(":", 1)[0],
            "keeper": self.keeper.key,
            "reason": self.reason,
            "why": keeper.explain(self.reason),
            "kept": [m.key for m in self.kept],
            "quarantine": [
                {"path": m.member.key, "size": m.member.size, "kind": m.kind} for m in self.moves
            ],
            "bytes": sum(m.member.size for m in self.moves),
        }


def bundle_stem(name: str) -> str:
    """``IMG_1.JPG.xmp`` -> ``img_1``; ``IMG_1.CR2`` -> ``img_1`` (a bundle's key: case
    and Unicode spelling ignored, as the scan matches a sidecar, ``paths.name_key``)."""
    stem, ext = os.path.splitext(name)
    if ext.lower() in SIDECAR_EXTENSIONS:
        inner_stem, inner_ext = os.path.splitext(stem)
        if inner_ext.lower() in SUPPORTED_EXTENSIONS:
            stem = inner_stem
    return paths.name_key(stem)


def is_sidecar(path: str) -> bool:
    return os.path.splitext(paths.from_text(path))[1].lower() in SIDECAR_EXTENSIONS


@dataclass
class _Library:
    photos: list[Member]  # present files with an asset (in the scope)
    sidecars: list[tuple[int, int, str, str, int]]  # file id, source id, root, path, mtime
    organized: list[str]  # destinations of organize jobs (read when several sources)
    decisions: dict[str, set[str]]
    near_groups: dict[int, list[int]]  # group id -> asset ids
    # Photos of the scope's sources taken on other days: neither moved nor kept, but
    # still in their bundles (a sidecar stays while any photo of its bundle stays).
    bystanders: list[Member] = field(default_factory=list)


def _read(
    session_factory: sessionmaker[Session],
    near: bool,
    only: Iterable[int] | None = None,
    scope: Scope | None = None,
) -> _Library:
    """The library as the plan needs it. With ``only`` (asset ids), just what the
    exact groups of those assets depend on: their files, the stills of those that are
    Live Photo motion parts, and every file in the folders holding them (bundles)."""
    columns = (
        files.c.id,
        files.c.source_id,
        files.c.path,
        files.c.mtime_ns,
        files.c.state,
        files.c.asset_id,
        sources.c.path.label("root"),
        assets.c.content_hash,
        assets.c.size,
        assets.c.taken_local,
    )
    base = (
        select(*columns)
        .join(sources, sources.c.id == files.c.source_id)
        .outerjoin(assets, assets.c.id == files.c.asset_id)
        .where(files.c.state.not_in([MISSING, QUARANTINED]))
    )
    if scope is not None and scope.source_ids:
        base = base.where(files.c.source_id.in_(sorted(scope.source_ids)))
    with read_session(session_factory) as session:
        if only is None:
            rows = session.execute(base.order_by(files.c.source_id, files.c.path)).all()
        else:
            rows = _rows_around(session, base, set(only))
        # Whether a copy lies inside an organized destination tells copies apart only
        # when they lie under different sources: under one, every copy is alike.
        several = len({r.source_id for r in rows}) > 1
        organized = organized_destinations(session) if several else []
        decided = select(duplicate_decisions)
        if only is not None and not near:
            # A page: only its exact groups' decisions, not every one ever recorded.
            keys = {f"exact:{r.asset_id}" for r in rows if r.asset_id is not None}
            decided = decided.where(duplicate_decisions.c.group_key.in_(sorted(keys)))
        decisions = {r.group_key: {str(k) for k in r.keep} for r in session.execute(decided)}
        near_groups: dict[int, list[int]] = {}
        if near:
            for group_id, asset_id in session.execute(
                select(near_duplicates.c.group_id, near_duplicates.c.asset_id).order_by(
                    near_duplicates.c.group_id, near_duplicates.c.asset_id
                )
            ):
                near_groups.setdefault(group_id, []).append(asset_id)
    photos: list[Member] = []
    bystanders: list[Member] = []
    sidecars = []
    for r in rows:
        if r.state == PRESENT and r.content_hash is not None:
            taken = scope is None or scope.takes(r.source_id, r.taken_local)
            (photos if taken else bystanders).append(
                Member(
                    r.id,
                    r.source_id,
                    r.root,
                    r.path,
                    r.content_hash,
                    r.size,
                    r.mtime_ns,
                    r.asset_id,
                )
            )
        elif is_sidecar(r.path):
            sidecars.append((r.id, r.source_id, r.root, r.path, r.mtime_ns))
    return _Library(photos, sidecars, organized, decisions, near_groups, bystanders)


def organized_destinations(session: Session) -> list[str]:
    """The distinct destinations of organize jobs. Picked out by the database: a job
    history holds thousands of organize jobs naming a handful of destinations, and
    reading every job's parameters made a page of groups cost as much as the history
    (the bench's million-asset library: 20,000 organize jobs, 160 ms a page)."""
    destination = jobs.c.params["destination"].as_string()
    query = select(destination).where(jobs.c.job_type == ORGANIZE_JOB_TYPE).distinct()
    return sorted(d for d in session.scalars(query) if d)


def _rows_around(session: Session, base: Any, asset_ids: set[int]) -> list[Any]:
    """The rows of ``asset_ids`` (and of their stills), and of the files bundled with
    them (same folder, same stem): a page's worth of the library, whatever its size
    and however big its folders."""
    stills = session.scalars(
        select(assets.c.live_of).where(assets.c.id.in_(asset_ids), assets.c.live_of.is_not(None))
    )
    wanted = asset_ids | set(stills)
    rows = {r.id: r for r in session.execute(base.where(files.c.asset_id.in_(wanted)))}
    # A bundle's files are named "<stem>.<anything>": each member's stem (as written,
    # lower and upper case, NFC and NFD) bounds a range the (source_id, path) index
    # serves, from "folder/stem." to "folder/stem/" ("." sorts just before "/", in byte
    # order and in PostgreSQL's linguistic collations alike, which also take in other
    # cases).
    starts: set[tuple[int, str]] = set()
    for row in rows.values():
        folder, slash, name = row.path.rpartition("/")
        stem = os.path.splitext(name)[0]
        for cased in (stem, stem.lower(), stem.upper()):
            for variant in {unicodedata.normalize(form, cased) for form in ("NFC", "NFD")}:
                starts.add((row.source_id, f"{folder}{slash}{variant}."))
    ordered = sorted(starts)
    for first in range(0, len(ordered), _RANGES_PER_QUERY):
        ranges = [
            and_(
                files.c.source_id == source_id,
                files.c.path >= start,
                files.c.path < start[:-1] + "/",
            )
            for source_id, start in ordered[first : first + _RANGES_PER_QUERY]
        ]
        for row in session.execute(base.where(or_(*ranges))):
            rows[row.id] = row
    return sorted(rows.values(), key=lambda r: (r.source_id, r.path))


def build_dedupe_plan(
    session_factory: sessionmaker[Session],
    *,
    near: bool = False,
    sidecars: bool = True,
    only: Iterable[int] | None = None,
    scope: Scope | None = None,
    undecided: list[str] | None = None,
) -> list[GroupPlan]:
    """Every group with something to move, in a stable order; the moves numbered.
    ``sidecars=False`` leaves out the sidecars that would travel (they are hashed
    here, reading files: not what a listing wants). ``only`` (asset ids): the exact
    groups of those assets are planned as the whole plan plans them, reading only
    what they depend on; other groups in the result may be partial. (A bundle member
    whose stem differs in case other than all-lower or all-upper is missed there on
    SQLite: a listing may then suggest another keeper; dedupe plans in full.)
    ``scope``: only its files (module docstring). ``undecided``, with ``near``: gets the
    keys of the near groups left alone because nobody chose what to keep in them."""
    lib = _read(session_factory, near, only, None if scope is None or scope.everything else scope)
    bundles: dict[tuple[int, str, str], list[Member]] = {}
    for photo in lib.photos + lib.bystanders:
        bundles.setdefault((*photo.folder, photo.stem), []).append(photo)
    sidecars_of: dict[tuple[int, str, str], list[tuple[int, int, str, str, int]]] = {}
    for sidecar in lib.sidecars:
        _, source_id, _, path, _ = sidecar
        relative = paths.from_text(path)
        folder = (source_id, os.path.dirname(relative))
        sidecars_of.setdefault((*folder, bundle_stem(os.path.basename(relative))), []).append(
            sidecar
        )

    def as_copy(member: Member, decided: set[str]) -> keeper.Copy:
        bundle_key = (*member.folder, member.stem)
        companions = [p for p in bundles.get(bundle_key, []) if p.file_id != member.file_id]
        beside = sidecars_of.get(bundle_key, [])
        oldest = min([member.mtime_ns] + [p.mtime_ns for p in companions] + [s[4] for s in beside])
        return keeper.Copy(
            key=member.key,
            path=paths.display(member.path),
            mtime_ns=oldest,
            organized=any(_inside(member.source_root, d) for d in lib.organized),
            bundle=len(companions) + len(beside),
            decided=member.key in decided,
        )

    def pick(members: list[Member], decided: set[str]) -> tuple[Member, str]:
        by_key = {m.key: m for m in members}
        chosen, reason = keeper.choose([as_copy(m, decided) for m in members])
        return by_key[chosen.key], reason

    by_asset: dict[int, list[Member]] = {}
    seen: set[tuple[int, int]] = set()  # files, by device and inode
    for photo in lib.photos:
        if photo.asset_id is None:
            continue
        info = _lstat(photo)  # None: gone (the job finds out and says so)
        # A symlink is no copy to reclaim (moving it frees nothing, and organize's
        # machinery does not read through links) nor one to keep: left out. So is a
        # file already met under another name (a hard link, or a folder catalogued
        # through two registered folders): moving that name would move the keeper.
        if info is not None:
            if stat.S_ISLNK(info.st_mode) or (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
        by_asset.setdefault(photo.asset_id, []).append(photo)
    # Live Photos whose still is present: motion part -> still, still -> motion part.
    still_of = {m: s for m, s in _live_pairs(session_factory, by_asset).items() if by_asset.get(s)}
    motion_of = {s: m for m, s in still_of.items()}
    # Near groups with a decision: (key, assets kept, assets present).
    near_decided = []
    leaving: set[int] = set()  # assets whose every file moves (near, not kept)
    for group_id, asset_ids in sorted(lib.near_groups.items()):
        key = f"near:{group_id}"
        present = [a for a in asset_ids if by_asset.get(a) and a not in still_of]
        kept_ids = [a for a in present if str(a) in lib.decisions.get(key, set())]
        if key not in lib.decisions and len(present) >= 2 and undecided is not None:
            undecided.append(key)
        if not kept_ids or len(present) < 2:
            continue  # no decision (or nothing it keeps is present): never by default
        near_decided.append((key, kept_ids, present))
        leaving.update(a for a in present if a not in kept_ids)
    leaving.update(motion_of[a] for a in list(leaving) if a in motion_of)
    exact: dict[int, GroupPlan] = {}
    # Stills before motion parts: a motion part's copy stays beside its still's keeper.
    for asset_id, members in sorted(by_asset.items(), key=lambda a: (a[0] in still_of, a[0])):
        if len(members) < 2 or asset_id in leaving:
            continue
        key = f"exact:{asset_id}"
        decided = {m.key for m in members} & lib.decisions.get(key, set())
        chosen, reason = pick(members, decided)
        if not decided and asset_id in still_of:
            still = still_of[asset_id]
            still_keeper = exact[still].keeper if still in exact else by_asset[still][0]
            beside = [m for m in members if m.folder == still_keeper.folder]
            if beside and chosen not in beside:
                chosen, reason = beside[0], keeper.BESIDE_ITS_STILL
            elif reason == keeper.KEEPS_PAIR and chosen in beside:
                # It won by its bundle, which is its still: no RAW+JPEG pair.
                reason = keeper.BESIDE_ITS_STILL
        kept = [m for m in members if m is chosen or m.key in decided]
        plan = GroupPlan(key, chosen, reason, kept)
        for member in members:
            if member not in kept:
                plan.moves.append(_move(plan, "copy", member))
        exact[asset_id] = plan
    plans: list[GroupPlan] = []
    for key, kept_ids, present in near_decided:
        # Checked against the file that stays of a kept asset (its exact keeper).
        staying = [exact[a].keeper if a in exact else by_asset[a][0] for a in kept_ids]
        chosen, _ = pick(staying, set())
        plan = GroupPlan(key, chosen, keeper.DECISION, staying)
        for asset_id in present:
            if asset_id not in kept_ids:
                for part in (asset_id, motion_of.get(asset_id)):
                    for member in by_asset.get(part, []) if part is not None else []:
                        plan.moves.append(_move(plan, "near", member))
        plans.append(plan)
    plans.extend(exact.values())
    moving = {m.member.file_id for p in plans for m in p.moves}
    for plan in plans:
        for move in list(plan.moves):
            bundle_key = (*move.member.folder, move.member.stem)
            if (
                not sidecars
                or move.kind == "sidecar"
                or any(p.file_id not in moving for p in bundles.get(bundle_key, []))
            ):
                continue  # a photo of the bundle stays: its sidecars stay with it
            for file_id, source_id, root, path, mtime in sidecars_of.pop(bundle_key, []):
                hashed = _hashed_sidecar(file_id, source_id, root, path, mtime)
                if hashed is not None:
                    plan.moves.append(_move(plan, "sidecar", hashed))
    _number(plans)
    return [p for p in plans if p.moves]


def _lstat(member: Member) -> os.stat_result | None:
    try:
        return os.lstat(os.path.join(member.source_root, paths.from_text(member.path)))
    except OSError:
        return None


def _live_pairs(session_factory: sessionmaker[Session], among: Iterable[int]) -> dict[int, int]:
    """The Live Photo motion parts ``among`` these assets -> their stills (asset ids)."""
    query = select(assets.c.id, assets.c.live_of).where(assets.c.live_of.is_not(None))
    wanted = set(among)
    with read_session(session_factory) as session:
        pairs = (
            session.execute(query).all()
            if len(wanted) > _FEW
            else session.execute(query.where(assets.c.id.in_(wanted))).all()
        )
    return {motion: still for motion, still in pairs if motion in wanted}


def _move(plan: GroupPlan, kind: str, member: Member) -> Move:
    return Move(0, plan.key, kind, plan.reason, member, "", plan.keeper)


def _hashed_sidecar(
    file_id: int, source_id: int, root: str, path: str, mtime: int
) -> Member | None:
    absolute = os.path.join(root, paths.from_text(path))
    try:
        digest = transfer.content_hash(absolute)
        size = os.path.getsize(absolute)
    except (ItemError, OSError):
        return None  # unreadable or gone: left where it is
    if digest is None:
        return None
    return Member(file_id, source_id, root, path, digest, size, mtime, None)


def _number(plans: list[GroupPlan]) -> None:
    """Sequence numbers and quarantine paths: ``<source-relative path>``, or
    ``source-<id>/<path>`` when two sources hold one relative path."""
    claimed: dict[str, int] = {}
    seq = 0
    numbered: dict[int, list[Move]] = {id(plan): [] for plan in plans}
    # Sidecars last: each moves after every photo of its bundle, whatever their groups.
    for sidecars in (False, True):
        for plan in plans:
            for move in plan.moves:
                if (move.kind == "sidecar") is not sidecars:
                    continue
                seq += 1
                relative = move.member.path
                owner = claimed.setdefault(relative.casefold(), move.member.source_id)
                if owner != move.member.source_id:
                    relative = f"source-{move.member.source_id}/{relative}"
                    claimed.setdefault(relative.casefold(), move.member.source_id)
                numbered[id(plan)].append(
                    Move(
                        seq,
                        move.group_key,
                        move.kind,
                        move.reason,
                        move.member,
                        relative,
                        move.keeper,
                    )
                )
    for plan in plans:
        plan.moves = numbered[id(plan)]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def summary(plans: Iterable[GroupPlan]) -> dict[str, Any]:
    plans = list(plans)
    reasons: dict[str, int] = {}
    for plan in plans:
        reasons[plan.reason] = reasons.get(plan.reason, 0) + 1
    return {
        "groups": len(plans),
        "files": sum(len(p.moves) for p in plans),
        "bytes": sum(m.member.size for p in plans for m in p.moves),
        "keeper_reasons": reasons,
    }


def exact_keepers(
    session_factory: sessionmaker[Session], asset_ids: Iterable[int] | None = None
) -> dict[int, tuple[str, str]]:
    """The keeper of each exact-duplicate group (asset id -> (full path, reason)), for
    the duplicates listings: the copy a dedupe would keep. With ``asset_ids`` (a
    page of groups), only theirs, read at the cost of a page."""
    wanted = None if asset_ids is None else set(asset_ids)
    found: dict[int, tuple[str, str]] = {}
    for plan in build_dedupe_plan(session_factory, sidecars=False, only=wanted):
        if plan.key.startswith("exact:"):
            asset_id = int(plan.key.split(":", 1)[1])
            if wanted is None or asset_id in wanted:
                found[asset_id] = (plan.keeper.key, plan.reason)
    return found


def annotate_exact_groups(
    session_factory: sessionmaker[Session], groups: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Mark each exact group's suggested keeper (``keeper``, ``keeper_reason``,
    ``why``; the keeper's file first, ``keep: true``), as ``Catalog.duplicates`` lists
    them."""
    keepers = exact_keepers(session_factory, [group["asset_id"] for group in groups])
    for group in groups:
        chosen = keepers.get(group["asset_id"])
        if chosen is None:
            continue
        path, reason = chosen
        group["keeper"], group["keeper_reason"] = path, reason
        group["why"] = keeper.explain(reason)
        for file in group["files"]:
            file["keep"] = f"{file['source']}/{file['path']}" == path
        group["files"].sort(key=lambda f: not f["keep"])
    return groups
