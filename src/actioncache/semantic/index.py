"""Vector indexes over the semantic entries of one namespace.

The entries themselves live in the :class:`~actioncache.stores.base.CacheStore`; an index only
answers "which keys are nearest to this unit vector". Two implementations:

* :class:`NumpyIndex` — exact search in process memory: one float32 matrix, one matrix-vector
  product per lookup (cosine similarity, because every row is unit length). Rebuilt from the
  store and kept in sync with it (see :meth:`NumpyIndex.refresh`).
* :class:`PgVectorIndex` (``index_pgvector.py``) — a pgvector table beside a PostgreSQL store;
  the database does the search, so every process sees every entry at once.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, Protocol

from .index_bounds import FloorBounds
from .numpy_required import np
from .spare_core import SpareCore

_blas_libs: list[Any] | None = None

# From this many rows a search first ranks every row by the Hamming distance of its sign bits to the
# query's (a 32x smaller scan), then rescores the PREFILTER_RESCORE nearest with the float rows.
PREFILTER_FROM = 50_000
PREFILTER_RESCORE = 256
# From this many rows (and below PREFILTER_FROM) a search above a floor first bounds every row's
# cosine from an int8 copy of the rows (index_bounds.py) and scores only the rows that can reach it.
BOUNDS_FROM = 2_048


def _blas_controllers() -> list[Any]:
    """The BLAS libraries NumPy loaded, through threadpoolctl when it is installed (else none)."""
    global _blas_libs
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController

            _blas_libs = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        except Exception:  # noqa: BLE001 - optional; without it BLAS keeps its own thread count
            _blas_libs = []
    return _blas_libs


@contextmanager
def _blas_threads(n: int | None) -> Iterator[None]:
    """Run BLAS with ``n`` threads inside the block (a few microseconds to set and restore)."""
    libs = _blas_controllers() if n else []
    saved = [lib.get_num_threads() for lib in libs]
    for lib in libs:
        lib.set_num_threads(n)
    try:
        yield
    finally:
        for lib, threads in zip(libs, saved):
            lib.set_num_threads(threads)


class VectorIndex(Protocol):
    """What :class:`~actioncache.semantic.SemanticCache` needs from an index.

    ``search`` returns up to ``k`` ``(key, cosine_similarity)`` pairs, best first. ``shared`` is
    True when the index lives outside the process (other processes' writes are visible at once).
    """

    shared: bool

    def add(self, key: str, vector: np.ndarray, prompt_hash: str) -> None: ...

    def remove(self, key: str) -> None: ...

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]: ...

    # Optional: search_above(vector, k, floor) -> the top k pairs at or above floor (what search
    # returns, without those below floor). SemanticCache calls it when an index has it: an index
    # may then skip the rows that cannot reach the floor.

    def exact(self, prompt_hash: str) -> str | None: ...

    def keys(self) -> set[str]: ...

    def __len__(self) -> int: ...


class NumpyIndex:
    """Exact nearest-neighbour search in NumPy; thread-safe.

    Rows are kept in one preallocated matrix that doubles when full, and a removal moves the last
    row into the hole, so add and remove are O(dim) and search is one ``matrix @ vector``.

    The product is memory-bound (10k x 384 floats = 15 MB read per query). ``blas_threads="auto"``
    (the default) uses BLAS's own thread count only while a core is free
    (:class:`~actioncache.semantic.spare_core.SpareCore`) and one thread otherwise; an int fixes
    the count, ``None`` always leaves BLAS's setting.

    :meth:`search_above` (what a semantic lookup calls, with its threshold as the floor) reads an
    int8 copy of the rows first, from ``bounds_from`` rows on, and scores in float only the rows
    whose cosine can reach the floor (:mod:`~actioncache.semantic.index_bounds`): the same answer
    above the floor for a quarter of the bytes read (but for float rounding: a row at the floor to
    the last bit may be scored a bit either side of it, as two BLAS products may differ). ``bounds_from=None`` always scans the float rows.
    """

    shared = False

    def __init__(self, dim: int, capacity: int = 1024, blas_threads: int | str | None = "auto",
                 prefilter_from: int | None = PREFILTER_FROM, rescore: int = PREFILTER_RESCORE,
                 bounds_from: int | None = BOUNDS_FROM) -> None:
        if not (blas_threads is None or blas_threads == "auto" or (isinstance(blas_threads, int) and blas_threads > 0)):
            raise ValueError(f"blas_threads must be 'auto', None or a positive int, got {blas_threads!r}")
        if prefilter_from is not None and (isinstance(prefilter_from, bool) or not isinstance(prefilter_from, int) or prefilter_from < 0):
            raise ValueError(f"prefilter_from must be None or a non-negative int, got {prefilter_from!r}")
        if isinstance(rescore, bool) or not isinstance(rescore, int) or rescore < 1:
            raise ValueError(f"rescore must be a positive int, got {rescore!r}")
        if bounds_from is not None and (isinstance(bounds_from, bool) or not isinstance(bounds_from, int) or bounds_from < 0):
            raise ValueError(f"bounds_from must be None or a non-negative int, got {bounds_from!r}")
        self.bounds_from = bounds_from
        self.dim = dim
        # The sign-bit prefilter needs np.bitwise_count (NumPy 2); without it the scan stays exact.
        self.prefilter_from = prefilter_from if hasattr(np, "bitwise_count") else None
        self.rescore = rescore
        self._words = -(-dim // 64)
        # One row of words per 64 dimensions (word-major: each word of every row is one contiguous scan).
        self._bits = np.zeros((self._words, max(capacity, 16)), dtype=np.uint64)
        self._scratch: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.blas_threads = blas_threads
        self._spare_core = SpareCore()
        self._matrix = np.zeros((max(capacity, 16), dim), dtype=np.float32)
        self._keys: list[str] = []
        self._row: dict[str, int] = {}
        self._hash_of: dict[str, str] = {}
        self._by_hash: dict[str, str] = {}
        self._bounds = FloorBounds(dim)
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._keys)

    def _threads(self) -> int | None:
        if self.blas_threads != "auto":
            return self.blas_threads  # type: ignore[return-value]
        return None if self._spare_core() else 1

    def keys(self) -> set[str]:
        with self._lock:
            return set(self._keys)

    def add(self, key: str, vector: np.ndarray, prompt_hash: str) -> None:
        row_vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if row_vector.shape[0] != self.dim:
            raise ValueError(f"vector has {row_vector.shape[0]} dimensions, the index {self.dim}")
        with self._lock:
            row = self._row.get(key)
            if row is None:
                row = len(self._keys)
                if row == self._matrix.shape[0]:
                    grown = np.zeros((row * 2, self.dim), dtype=np.float32)
                    grown[:row] = self._matrix[:row]
                    self._matrix = grown
                    bits = np.zeros((self._words, row * 2), dtype=np.uint64)
                    bits[:, :row] = self._bits[:, :row]
                    self._bits = bits
                self._keys.append(key)
                self._row[key] = row
            self._matrix[row] = row_vector
            self._bounds.put(row, row_vector)
            self._bits[:, row] = self._sign_bits(row_vector)
            self._hash_of[key] = prompt_hash
            # The newest entry for a prompt answers the exact-match path.
            self._by_hash[prompt_hash] = key

    def remove(self, key: str) -> None:
        with self._lock:
            row = self._row.pop(key, None)
            if row is None:
                return
            last = len(self._keys) - 1
            if row != last:
                moved = self._keys[last]
                self._matrix[row] = self._matrix[last]
                self._bits[:, row] = self._bits[:, last]
                self._bounds.move(last, row)
                self._keys[row] = moved
                self._row[moved] = row
            self._keys.pop()
            prompt_hash = self._hash_of.pop(key, None)
            if prompt_hash is not None and self._by_hash.get(prompt_hash) == key:
                del self._by_hash[prompt_hash]

    def exact(self, prompt_hash: str) -> str | None:
        return self._by_hash.get(prompt_hash)

    def _sign_bits(self, vector: np.ndarray) -> np.ndarray:
        packed = np.zeros(self._words * 8, dtype=np.uint8)
        bits = np.packbits(vector > 0)
        packed[:bits.shape[0]] = bits
        return packed.view(np.uint64)

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            n = len(self._keys)
            if n == 0 or k <= 0:
                return []
            if self.prefilter_from is not None and n >= self.prefilter_from and k * 8 <= self.rescore < n:
                return self._prefiltered(query, n, k)
            with _blas_threads(self._threads()):
                sims = self._matrix[:n] @ query
            if k < n:
                top = np.argpartition(sims, n - k)[n - k:]
                top = top[np.argsort(-sims[top], kind="stable")]
            else:
                top = np.argsort(-sims, kind="stable")
            return [(self._keys[i], float(sims[i])) for i in top]

    def search_above(self, vector: np.ndarray, k: int, floor: float) -> list[tuple[str, float]]:
        """The top ``k`` of :meth:`search` that are at or above ``floor``: from ``bounds_from``
        rows on, only the rows whose int8 bound can reach the floor are scored."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            n = len(self._keys)
            if (self.bounds_from is not None and self.bounds_from <= n and k > 0
                    and not (self.prefilter_from is not None and n >= self.prefilter_from)):
                rows = self._bounds.rows(query, n, floor)
                if rows is not None and rows.shape[0] * 4 <= n:  # else the full scan reads less
                    sims = self._matrix[rows] @ query
                    reached = sims >= floor
                    rows, sims = rows[reached], sims[reached]
                    best = np.argsort(-sims, kind="stable")[:k]
                    return [(self._keys[rows[i]], float(sims[i])) for i in best]
            return [(key, similarity) for key, similarity in self.search(query, k) if similarity >= floor]

    def _prefiltered(self, query: np.ndarray, n: int, k: int) -> list[tuple[str, float]]:
        """Top ``k`` among the ``rescore`` rows whose signs differ least from the query's, by their float cosine."""
        # Hamming distance of the sign bits: 48 bytes a row instead of 1,536 (dim 384).
        if self._scratch is None or self._scratch[0].shape[0] < n:
            # Kept between searches (they run under the lock): fresh buffers would fault in each time.
            self._scratch = (np.empty(self._bits.shape[1], dtype=np.uint64), np.empty(self._bits.shape[1], dtype=np.uint8),
                             np.empty(self._bits.shape[1], dtype=np.uint16))
        word, count, differ = (buffer[:n] for buffer in self._scratch)
        for w, bits in enumerate(self._sign_bits(query)):
            np.bitwise_xor(self._bits[w, :n], bits, out=word)
            if w:
                np.bitwise_count(word, out=count)
                np.add(differ, count, out=differ)
            else:
                np.bitwise_count(word, out=differ)
        # The rescore nearest by distance: a histogram finds the cut (cheaper than a partition of n).
        below = np.cumsum(np.bincount(differ, minlength=self._words * 64 + 1))
        cut = int(np.searchsorted(below, self.rescore))
        taken = int(below[cut - 1]) if cut else 0
        ties = np.flatnonzero(differ == cut)[:self.rescore - taken]
        rows = np.concatenate([np.flatnonzero(differ < cut), ties]) if taken else ties
        sims = self._matrix[rows] @ query
        best = np.argsort(-sims, kind="stable")[:k]
        return [(self._keys[rows[i]], float(sims[i])) for i in best]
