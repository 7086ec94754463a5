"""An approximate index for large namespaces: usearch's HNSW graph in process memory.

``SemanticCache(index="hnsw")``. :class:`~actioncache.semantic.index.NumpyIndex` reads every row
on every lookup (10k entries: under a millisecond; 100k: several); a graph search reads a few
hundred rows whatever the size. The price is recall: the true nearest entry is occasionally not
returned (bench/results/semantic.md reports recall@3 against the exact search). A missed
neighbour is a miss, never a wrong hit: every candidate still passes the threshold and the
contrast checks. Needs ``usearch`` (the ``[semantic]`` extra).
"""

from __future__ import annotations

import threading

import numpy as np


class HnswIndex:
    """Cosine HNSW over unit vectors; thread-safe; keys are the cache's string keys."""

    shared = False

    def __init__(self, dim: int, *, connectivity: int = 16, expansion_add: int = 128, expansion_search: int = 128) -> None:
        try:
            from usearch.index import Index
        except ImportError as exc:
            raise ImportError(f"index='hnsw' needs usearch ({exc}): pip install 'actioncache[semantic]'") from exc
        self.dim = dim
        self._index = Index(ndim=dim, metric="cos", dtype="f32", connectivity=connectivity,
                            expansion_add=expansion_add, expansion_search=expansion_search)
        self._label_of: dict[str, int] = {}
        self._key_of: dict[int, str] = {}
        self._hash_of: dict[str, str] = {}
        self._by_hash: dict[str, str] = {}
        self._next = 0
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._label_of)

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._label_of)

    def add(self, key: str, vector: np.ndarray, prompt_hash: str) -> None:
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        if row.shape[0] != self.dim:
            raise ValueError(f"vector has {row.shape[0]} dimensions, the index {self.dim}")
        with self._lock:
            old = self._label_of.pop(key, None)
            if old is not None:
                self._index.remove(old)
                del self._key_of[old]
            label = self._next
            self._next += 1
            self._index.add(label, row)
            self._label_of[key] = label
            self._key_of[label] = key
            self._hash_of[key] = prompt_hash
            self._by_hash[prompt_hash] = key

    def add_many(self, keys: list[str], vectors: np.ndarray, prompt_hashes: list[str]) -> None:
        """Bulk load (one graph insertion call for all rows): for rebuilding a large namespace."""
        with self._lock:
            for key in keys:
                if key in self._label_of:
                    self.remove(key)
            labels = np.arange(self._next, self._next + len(keys), dtype=np.uint64)
            self._next += len(keys)
            self._index.add(labels, np.asarray(vectors, dtype=np.float32))
            for key, label, digest in zip(keys, labels.tolist(), prompt_hashes):
                self._label_of[key] = label
                self._key_of[label] = key
                self._hash_of[key] = digest
                self._by_hash[digest] = key

    def remove(self, key: str) -> None:
        with self._lock:
            label = self._label_of.pop(key, None)
            if label is None:
                return
            self._index.remove(label)
            del self._key_of[label]
            digest = self._hash_of.pop(key, None)
            if digest is not None and self._by_hash.get(digest) == key:
                del self._by_hash[digest]

    def exact(self, prompt_hash: str) -> str | None:
        return self._by_hash.get(prompt_hash)

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            if not self._label_of or k <= 0:
                return []
            matches = self._index.search(query, min(k, len(self._label_of)))
            return [(self._key_of[int(label)], 1.0 - float(distance))
                    for label, distance in zip(matches.keys, matches.distances) if int(label) in self._key_of]
