"""The grouping's searches: the exemplar graph (past EXACT_UP_TO exemplars) finds the
same person as the exact search for nearly every face, and judges by the real distance;
the pool's edges found by matrix products cluster as dlib's own pairwise loop."""

from __future__ import annotations

import numpy as np
import pytest

from photo_pipeline.pipeline.faces.exemplar_index import EXACT_UP_TO, ExemplarIndex, nearest


def test_the_graph_finds_the_exact_nearest_person_for_nearly_every_face():
    pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    people = EXACT_UP_TO // 8 + 500  # eight exemplars each: past the exact search
    centres = rng.normal(0, 0.08, (people, 128)).astype(np.float32)
    owners = np.repeat(np.arange(people), 8)
    vectors = centres[owners] + rng.normal(0, 0.015, (len(owners), 128)).astype(np.float32)
    index = ExemplarIndex(vectors[: len(vectors) // 2], owners[: len(owners) // 2].tolist())
    index.add(vectors[len(vectors) // 2 :], owners[len(owners) // 2 :].tolist())
    assert len(index) > EXACT_UP_TO
    picks = rng.integers(0, people, 2000)
    queries = centres[picks] + rng.normal(0, 0.015, (2000, 128)).astype(np.float32)

    found, distance = index.nearest(queries)
    exact, exact_distance = nearest(queries, vectors)

    assert (found == owners[exact]).mean() >= 0.99
    assert (found == picks).mean() >= 0.99
    # A face is judged by its real distance to the exemplar found: never nearer than
    # the exact nearest.
    assert np.all(distance >= exact_distance - 1e-4)
    assert np.median(distance - exact_distance) < 1e-3


def test_the_pool_clusters_as_dlibs_own_chinese_whispers_clustering():
    dlib = pytest.importorskip("dlib")
    from photo_pipeline.pipeline.faces.grouping import JOIN_DISTANCE, cluster

    rng = np.random.default_rng(1)
    centres = rng.normal(0, 0.08, (150, 128)).astype(np.float32)
    vectors = centres[rng.integers(0, 150, 1200)]
    vectors = vectors + rng.normal(0, 0.015, vectors.shape).astype(np.float32)
    vectors[:100] += rng.normal(0, 0.03, (100, 128)).astype(np.float32)  # nearer the edge

    def groups(labels):
        members: dict[int, list[int]] = {}
        for row, label in enumerate(labels):
            members.setdefault(label, []).append(row)
        return sorted(map(tuple, members.values()))

    theirs = dlib.chinese_whispers_clustering(
        [dlib.vector(row.astype(float).tolist()) for row in vectors], JOIN_DISTANCE
    )
    assert groups(cluster(vectors)) == groups(theirs)
