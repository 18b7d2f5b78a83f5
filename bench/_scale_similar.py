"""`similar` at scale: each regroup in a child process (its own wall and CPU time and
peak RSS), with the current code or a baseline's, and its groups scored against the
planted clusters (precision and recall over pairs of assets)."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text

from bench import _harness as h
from bench._scale_catalogue import add_assets


def similar_child(url: str, full: bool) -> dict[str, Any]:
    from sqlalchemy.orm import sessionmaker

    import photo_pipeline
    from photo_pipeline.db import create_database_engine
    from photo_pipeline.pipeline.near.similar import regroup

    # No migration: the catalogue is at the current code's head, which a baseline's
    # migrations do not know.
    factory = sessionmaker(create_database_engine(url), expire_on_commit=False)
    started, cpu = time.perf_counter(), time.process_time()
    done = regroup(factory, 12, full=full)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    # ru_maxrss: after the exec it started from the bench process's own peak, so it is
    # at least that (VmHWM would be this process's alone).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    code = str(Path(photo_pipeline.__file__).parent)
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak, "code": code, **done.__dict__}


def run_similar(url: str, full: bool, code: str | None = None) -> dict:
    """One regroup in a child process, with the code under ``code`` (a ``src``
    folder) if given, else the current code."""
    # Run from the checkout's root (for ``bench``), which holds no ``photo_pipeline``:
    # the baseline's code on ``PYTHONPATH`` is the one imported.
    env = {**os.environ, "PYTHONPATH": code} if code else h.child_env()
    mode = "full" if full else "incremental"
    done = h.run_json(["-m", "bench.scale", "--child", url, mode], f"similar ({mode})", env=env)
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
    from photo_pipeline.pipeline.near.groups import PairFinder

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
