"""The exemplar index: the graph search (past EXACT_UP_TO exemplars) finds the same
person as the exact search for nearly every face, and judges by the real distance."""

from __future__ import annotations

import numpy as np
import pytest

from photo_pipeline.pipeline.faces.exemplar_index import EXACT_UP_TO, ExemplarIndex, nearest

pytest.importorskip("faiss")


def test_the_graph_finds_the_exact_nearest_person_for_nearly_every_face():
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
