"""The int8 bounds behind NumpyIndex.search_above: never leave out a row that reaches the floor.

Real ONNX Runtime (the [semantic] extra); each answer is held against the full float scan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache.semantic import NumpyIndex, SemanticCache
from actioncache.semantic.embedders import normalize_rows
from actioncache.semantic.index_bounds import FloorBounds
from actioncache.stores.memory import MemoryStore

pytest.importorskip("onnxruntime")


def _pair(dim: int, **options) -> tuple[NumpyIndex, NumpyIndex]:
    """An index that bounds from its first row on, and one that always scans its float rows."""
    return NumpyIndex(dim, capacity=4, bounds_from=0, **options), NumpyIndex(dim, capacity=4, bounds_from=None)


def _expected(exact: NumpyIndex, query: np.ndarray, k: int, floor: float) -> list[tuple[str, float]]:
    return [(key, s) for key, s in exact.search(query, len(exact)) if s >= floor][:k]


def _same(got: list[tuple[str, float]], exact: NumpyIndex, query: np.ndarray, k: int, floor: float) -> None:
    """What the float scan answers above ``floor``: the same similarities one for one, each the true
    one of its row. Rows at equal similarity may come in either order, and a row within float
    rounding of the floor may be in or out (two BLAS kernels may differ in the last bit)."""
    loose, strict = _expected(exact, query, k, floor - 1e-5), _expected(exact, query, k, floor + 1e-5)
    assert len(strict) <= len(got) <= len(loose)
    assert [s for _, s in got] == pytest.approx([s for _, s in loose[:len(got)]], abs=1e-5)
    truth = dict(exact.search(query, len(exact)))
    assert len({key for key, _ in got}) == len(got)
    assert all(truth[key] == pytest.approx(s, abs=1e-5) for key, s in got)


rows_strategy = st.sampled_from(["clustered", "random", "extreme", "duplicates", "signs"])


@given(kind=rows_strategy, seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), dim=st.sampled_from([3, 16, 384]),
       floor=st.floats(-1.0, 1.0), k=st.integers(1, 6), removals=st.integers(0, 40))
@settings(max_examples=80, deadline=None)
def test_search_above_answers_what_the_float_scan_answers_above_the_floor(kind, seed, n, dim, floor, k, removals):
    rng = np.random.default_rng(seed)
    if kind == "clustered":
        centres = normalize_rows(rng.standard_normal((max(1, n // 20), dim)))
        rows = centres[rng.integers(0, len(centres), n)] + rng.standard_normal((n, dim)) * rng.uniform(0.005, 0.3)
    elif kind == "extreme":  # one large component and many tiny ones: the coarsest int8 steps
        rows = rng.standard_normal((n, dim)) * 1e-3
        rows[np.arange(n), rng.integers(0, dim, n)] = rng.choice([-1.0, 1.0], n)
    elif kind == "duplicates":
        originals = rng.standard_normal((max(1, n // 10), dim))
        rows = originals[rng.integers(0, len(originals), n)]
    elif kind == "signs":  # every component the same size: every product at its largest
        rows = rng.choice([-1.0, 1.0], (n, dim))
    else:
        rows = rng.standard_normal((n, dim))
    rows = normalize_rows(rows)
    bounded, exact = _pair(dim)
    for i, row in enumerate(rows):
        bounded.add(f"k{i}", row, f"h{i}")
        exact.add(f"k{i}", row, f"h{i}")
    for i in rng.integers(0, n, min(removals, n - 1)):  # a removal moves the last row into the hole
        bounded.remove(f"k{i}")
        exact.remove(f"k{i}")
    for query in (rows[rng.integers(0, n)], normalize_rows(rows[rng.integers(0, n)] + rng.standard_normal(dim) * 0.05)[0],
                  normalize_rows(rng.standard_normal(dim))[0], -rows[rng.integers(0, n)]):
        _same(bounded.search_above(query, k, floor), exact, query, k, floor)


def test_the_integer_product_is_exact_where_a_saturating_kernel_would_not_be():
    """Every component at its largest on both sides (a row of equal components, the query alike):
    products that an int16 pairwise sum would clip. The row's cosine is 1, and it must be found."""
    dim = 384
    same = np.full(dim, 1 / np.sqrt(dim), dtype=np.float32)
    alternating = same * np.where(np.arange(dim) % 2, -1, 1).astype(np.float32)
    bounded, exact = _pair(dim)
    for i in range(50):
        bounded.add(f"same{i}", same, f"s{i}")
        exact.add(f"same{i}", same, f"s{i}")
        bounded.add(f"alt{i}", alternating, f"a{i}")
        exact.add(f"alt{i}", alternating, f"a{i}")
    for query in (same, alternating, -same):
        _same(bounded.search_above(query, 3, 0.99), exact, query, 3, 0.99)
    assert [s for _, s in bounded.search_above(same, 3, 0.99)] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert bounded.search_above(-same, 3, 0.99) == []


def test_rows_that_cannot_reach_the_floor_are_not_scored():
    """The point of the bounds: on scattered rows, a floor of 0.7 leaves a handful of rows to score."""
    rng = np.random.default_rng(5)
    rows = normalize_rows(rng.standard_normal((5000, 384)))
    bounds = FloorBounds(384)
    for i, row in enumerate(rows):
        bounds.put(i, row)
    near = normalize_rows(rows[42] + rng.standard_normal(384) * 0.01)[0]
    survivors = bounds.rows(near, len(rows), 0.7)
    assert survivors is not None and 42 in survivors.tolist() and len(survivors) < 10


def test_non_finite_rows_and_queries_fall_back_to_the_float_scan():
    bounded, exact = _pair(8)
    rows = normalize_rows(np.random.default_rng(3).standard_normal((20, 8)))
    for i, row in enumerate(rows):
        bounded.add(f"k{i}", row, f"h{i}")
        exact.add(f"k{i}", row, f"h{i}")
    odd = rows[0].copy()
    odd[2] = np.nan
    bounded.add("odd", odd, "odd")  # always scored, as the float scan scores it
    exact.add("odd", odd, "odd")
    query = rows[3]
    assert [k for k, _ in bounded.search_above(query, 3, 0.5)] == [k for k, _ in _expected(exact, query, 3, 0.5)]
    assert 20 in bounded._bounds.rows(query, len(bounded), 0.99).tolist()  # the odd row is never left out
    nan_query = query.copy()
    nan_query[0] = np.inf
    assert bounded._bounds.rows(nan_query, len(bounded), 0.5) is None  # no bound: the float scan answers


def test_without_onnxruntime_the_index_scans_its_float_rows(monkeypatch):
    import actioncache.semantic.index_bounds as bounds_module

    def unavailable(dim):
        raise ImportError("no onnxruntime here")

    monkeypatch.setattr(bounds_module, "_matmul_integer_session", unavailable)
    bounded, exact = _pair(16)
    rows = normalize_rows(np.random.default_rng(4).standard_normal((50, 16)))
    for i, row in enumerate(rows):
        bounded.add(f"k{i}", row, f"h{i}")
        exact.add(f"k{i}", row, f"h{i}")
    assert bounded.search_above(rows[7], 2, 0.3) == _expected(exact, rows[7], 2, 0.3)


def test_bounds_from_is_checked():
    for bad in (-1, 2.5, True, "8"):
        with pytest.raises(ValueError, match="bounds_from"):
            NumpyIndex(8, bounds_from=bad)


class _Table:
    """A fixed vector per text (a stand-in for a model: what is under test is the index)."""

    name, dim = "table-embedder", 64

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.vectors = rng, {}

    def embed(self, texts):
        for text in texts:
            if text not in self.vectors:
                self.vectors[text] = normalize_rows(self.rng.standard_normal(self.dim))[0]
        return np.stack([self.vectors[t] for t in texts])


def test_the_semantic_cache_serves_the_same_entries_with_and_without_the_bounds():
    rng = np.random.default_rng(9)
    table = _Table(rng)
    # guard=None: the texts are labels of random vectors; the contrast checks are not under test here
    caches = [SemanticCache(MemoryStore(), embedder=table, namespace="b", threshold=0.8, guard=None,
                            index=NumpyIndex(table.dim, bounds_from=bounds_from)) for bounds_from in (0, None)]
    stored = [f"stored {i}" for i in range(3000)]
    table.embed(stored)
    for text in stored[:100]:  # asked later with a small change of vector
        table.vectors[f"asked {text}"] = normalize_rows(table.vectors[text] + rng.standard_normal(table.dim) * 0.08)[0]
    for cache in caches:
        for text in stored:
            cache.store(text, [text])
    served = [[None if (hit := cache.lookup_hit(f"asked {text}")) is None else hit.prompt for text in stored[:100]] for cache in caches]
    assert served[0] == served[1]
    assert sum(p is not None for p in served[0]) > 50
