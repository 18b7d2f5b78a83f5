"""The people's exemplars, searchable: for each face, the nearest exemplar and its person.

Up to :data:`EXACT_UP_TO` exemplars every query is compared with every exemplar (blocked
matrix products, exact). Beyond that — a library of some thousands of people — the
exemplars go into a graph index (faiss's HNSW, from the ``faces`` extra), so that a
query costs about the logarithm of the exemplars, not their number: grouping a whole
library is then near-linear in its faces instead of quadratic. The graph is approximate:
a query may miss its nearest exemplar (faiss reports recall above 0.99 at these
settings); such a face then waits or makes a new person, it never joins a wrong one,
because the distance it is judged by is always the real distance to the exemplar found.
Without faiss installed the search stays exact, and quadratic.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from photo_pipeline.media.faces import EMBEDDING_SIZE

EXACT_UP_TO = 20_000
_BLOCK = 256
_GRAPH_NEIGHBOURS = 32  # HNSW's M: links per node
_BUILD_BREADTH = 80  # efConstruction
_SEARCH_BREADTH = 64  # efSearch

Matrix = np.ndarray[Any, np.dtype[np.float32]]


def nearest(queries: Matrix, exemplars: Matrix) -> tuple[np.ndarray[Any, Any], Matrix]:
    """For each query row, the index of its nearest exemplar row and the Euclidean
    distance to it (exemplars must not be empty). Queries go a block at a time, so the
    distance matrix in memory stays small (256 rows × the exemplars)."""
    norms = (exemplars * exemplars).sum(axis=1)[None, :]
    best = np.empty(len(queries), dtype=np.int64)
    distance = np.empty(len(queries), dtype=np.float32)
    for start in range(0, len(queries), _BLOCK):
        block = queries[start : start + _BLOCK]
        squared = (block * block).sum(axis=1)[:, None] - 2.0 * block @ exemplars.T + norms
        found = squared.argmin(axis=1)
        best[start : start + len(block)] = found
        distance[start : start + len(block)] = np.sqrt(
            np.maximum(squared[np.arange(len(block)), found], 0.0)
        )
    return best, distance


def _graph_available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


class ExemplarIndex:
    """Exemplar vectors and the person each belongs to; grows as people are made."""

    def __init__(self, vectors: Matrix, owners: list[int]) -> None:
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, EMBEDDING_SIZE)
        self._owners = np.asarray(owners, dtype=np.int64)
        self._graph: Any = None
        self._in_graph = 0
        self._graphs = _graph_available()

    def __len__(self) -> int:
        return len(self._owners)

    def add(self, vectors: Matrix, owners: list[int]) -> None:
        if not owners:
            return
        self._vectors = np.concatenate([self._vectors, vectors.astype(np.float32)])
        self._owners = np.concatenate([self._owners, np.asarray(owners, dtype=np.int64)])

    def nearest(self, queries: Matrix) -> tuple[np.ndarray[Any, Any], Matrix]:
        """For each query row, the person of the nearest exemplar found and the Euclidean
        distance to that exemplar (the index must not be empty)."""
        if not self._graphs or len(self) <= EXACT_UP_TO:
            found, distance = nearest(queries, self._vectors)
            return self._owners[found], distance
        graph = self._graph_of_all()
        _squared, found = graph.search(np.ascontiguousarray(queries, dtype=np.float32), 1)
        found = found[:, 0]
        missing = found < 0
        found[missing] = 0
        # The real distance to the exemplar found, not the graph's reckoning.
        difference = queries - self._vectors[found]
        distance = np.sqrt((difference * difference).sum(axis=1)).astype(np.float32)
        distance[missing] = np.inf
        return self._owners[found], distance

    def _graph_of_all(self) -> Any:
        import faiss

        if self._graph is None:
            self._graph = faiss.IndexHNSWFlat(EMBEDDING_SIZE, _GRAPH_NEIGHBOURS)
            self._graph.hnsw.efConstruction = _BUILD_BREADTH
            self._graph.hnsw.efSearch = _SEARCH_BREADTH
        if self._in_graph < len(self):
            self._graph.add(self._vectors[self._in_graph :])
            self._in_graph = len(self)
        return self._graph
