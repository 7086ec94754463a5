"""An approximate index for large namespaces: usearch's HNSW graph in process memory.

``SemanticCache(index="hnsw")``. :class:`~actioncache.semantic.index.NumpyIndex` reads every row
on every lookup (10k entries: about a millisecond; 100k: ten times that); a graph search reads a
few thousand rows whatever the size. Below ``exact_below`` entries the exact scan is as fast or
faster and never misses, so :class:`HnswIndex` keeps both: the exact rows answer searches until
the namespace reaches ``exact_below`` entries, the graph (kept up to date on every add and
remove, so there is no pause when it takes over) answers from there on.

The price of the graph is recall: the true nearest entry is occasionally not returned
(bench/results/semantic_latency.md reports recall@3 against the exact search). A missed
neighbour is a miss, never a wrong hit: every candidate still passes the threshold and the
contrast checks. Needs ``usearch`` (the ``[semantic]`` extra).
"""

from __future__ import annotations

import threading

import numpy as np

from .index import NumpyIndex

DEFAULT_EXACT_BELOW = 20_000
DEFAULT_EXPANSION_SEARCH = 512


class HnswIndex:
    """Cosine HNSW over unit vectors, exact below ``exact_below`` entries; thread-safe.

    ``connectivity``, ``expansion_add`` and ``expansion_search`` are usearch's graph parameters
    (M, ef_construction, ef): a larger ``expansion_search`` finds more of the true neighbours and
    reads more rows. Searches run on the calling thread. The exact rows are kept beside the
    graph, so the vectors take twice their size in memory (100k entries of 384 floats: 2 x 150 MB).
    """

    shared = False

    def __init__(self, dim: int, *, connectivity: int = 16, expansion_add: int = 128,
                 expansion_search: int = DEFAULT_EXPANSION_SEARCH, exact_below: int = DEFAULT_EXACT_BELOW) -> None:
        try:
            from usearch.index import Index
        except ImportError as exc:
            raise ImportError(f"index='hnsw' needs usearch ({exc}): pip install 'actioncache[semantic]'") from exc
        for name, value in (("connectivity", connectivity), ("expansion_add", expansion_add),
                            ("expansion_search", expansion_search)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(exact_below, bool) or not isinstance(exact_below, int) or exact_below < 0:
            raise ValueError(f"exact_below must be an integer >= 0 (0: always the graph), got {exact_below!r}")
        self.dim = dim
        self.exact_below = exact_below
        self._rows = NumpyIndex(dim)
        self._graph = Index(ndim=dim, metric="cos", dtype="f32", connectivity=connectivity,
                            expansion_add=expansion_add, expansion_search=expansion_search)
        self._label_of: dict[str, int] = {}
        self._key_of: dict[int, str] = {}
        self._next = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._rows)

    def keys(self) -> set[str]:
        return self._rows.keys()

    def add(self, key: str, vector: np.ndarray, prompt_hash: str) -> None:
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            self._rows.add(key, row, prompt_hash)  # checks the dimension
            self._unlink(key)
            label = self._next
            self._next += 1
            self._graph.add(label, row, threads=1)
            self._label_of[key] = label
            self._key_of[label] = key

    def add_many(self, keys: list[str], vectors: np.ndarray, prompt_hashes: list[str]) -> None:
        """Bulk load (one graph insertion call for all rows): for rebuilding a large namespace."""
        rows = np.asarray(vectors, dtype=np.float32)
        with self._lock:
            for key, row, digest in zip(keys, rows, prompt_hashes):
                self._rows.add(key, row, digest)
                self._unlink(key)
            labels = np.arange(self._next, self._next + len(keys), dtype=np.uint64)
            self._next += len(keys)
            # One thread: a graph built in parallel depends on how the threads interleave, so the same
            # rows gave another graph (and other neighbours: recall@3 0.983 to 0.993 on one test set) on
            # every rebuild; built in order it is the same graph each time, at twice the time on 2 cores.
            self._graph.add(labels, rows, threads=1)
            for key, label in zip(keys, labels.tolist()):
                self._label_of[key] = label
                self._key_of[label] = key

    def _unlink(self, key: str) -> None:
        label = self._label_of.pop(key, None)
        if label is not None:
            self._graph.remove(label)
            del self._key_of[label]

    def remove(self, key: str) -> None:
        with self._lock:
            self._rows.remove(key)
            self._unlink(key)

    def exact(self, prompt_hash: str) -> str | None:
        return self._rows.exact(prompt_hash)

    @property
    def expansion_search(self) -> int:
        """The graph search's breadth (ef); settable at any time."""
        return int(self._graph.expansion_search)

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"expansion_search must be a positive integer, got {value!r}")
        with self._lock:
            if value != self._graph.expansion_search:  # usearch resizes its search contexts on a change
                self._graph.expansion_search = value  # type: ignore[misc]  # usearch types it read-only; it is settable

    @property
    def uses_graph(self) -> bool:
        """True when searches go through the graph (the namespace has ``exact_below`` entries or more)."""
        return len(self._rows) >= self.exact_below

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        if not self.uses_graph:
            return self._rows.search(vector, k)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            if not self._label_of or k <= 0:
                return []
            matches = self._graph.search(query, min(k, len(self._label_of)), threads=1)
            return [(self._key_of[int(label)], 1.0 - float(distance))
                    for label, distance in zip(matches.keys, matches.distances) if int(label) in self._key_of]

    def search_above(self, vector: np.ndarray, k: int, floor: float) -> list[tuple[str, float]]:
        if not self.uses_graph:
            return self._rows.search_above(vector, k, floor)
        return [(key, similarity) for key, similarity in self.search(vector, k) if similarity >= floor]
