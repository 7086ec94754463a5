"""Which rows can reach a similarity floor, from an int8 copy of the index: exact, four to eight
times less to read than the float rows.

A lookup only ever serves a candidate at or above its threshold, so :class:`NumpyIndex` does not
need every row's cosine, only the rows that can reach the floor. :class:`FloorBounds` keeps each
row a second time as int8 (one scale per row, column-major so that ONNX Runtime's integer matrix
product reads them in one pass: 384 bytes a row instead of 1,536) and turns the integer products
into an upper bound of every row's cosine. Rows whose bound is below the floor are left out; the
others are scored exactly with their float rows. Nothing that reaches the floor is ever left out,
so the search answers what the full float scan answers above the floor.

The bound, for a query ``q`` and a row ``x`` with their rounded copies ``q^ = s_q * Q``,
``x^ = s_x * X`` (every component off by at most half a step, ``s_q / 2`` and ``s_x / 2``)::

    q.x = q^.x^ + q.(x - x^) + (q - q^).x^
        <= s_q s_x (Q.X) + |q|_1 s_x / 2 + s_q / 2 * s_x |X|_1

``Q.X`` is exact in int32. The query goes in as ``Q + 64`` (unsigned, 1..127) and ``64 * sum(X)``,
kept per row, is taken off afterwards (ONNX Runtime's own zero-point input takes about twice as
long). The query has 7 bits, not 8: with 8 on both sides, AVX2's pairwise multiply-add (u8 x s8
into int16) could saturate and the product would no longer be exact.

Needs onnxruntime and onnx (the ``[semantic]`` extra); without them :meth:`FloorBounds.rows` says
so and the index scans its float rows.
"""

from __future__ import annotations

from typing import Any

from .numpy_required import np

_QUERY_STEPS = 63  # the query's components: -63..63 around the zero point
_QUERY_ZERO = 64
_ROW_STEPS = 127
# Float32 arithmetic in the bound itself (a few products and sums of numbers below 400): far above its rounding.
_SLACK = 1e-3


def _matmul_integer_session(dim: int) -> Any:
    """ONNX Runtime's MatMulInteger of a (1, dim) uint8 query by a (dim, n) int8 matrix, one thread."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper
    except ImportError:
        return None
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["query", "rows"], ["products"])], "floor_bounds",
        [helper.make_tensor_value_info("query", TensorProto.UINT8, [1, dim]),
         helper.make_tensor_value_info("rows", TensorProto.INT8, [dim, "n"])],
        [helper.make_tensor_value_info("products", TensorProto.INT32, [1, "n"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what every onnxruntime since 1.10 reads
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


class FloorBounds:
    """The int8 copy of an index's rows and the upper bound of their cosine to a query.

    The owner (:class:`~actioncache.semantic.index.NumpyIndex`) calls :meth:`put` for every row it
    writes and :meth:`move` when it moves one, under its own lock; :meth:`rows` runs under that lock too.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._session = None
        self._tried = False
        self._capacity = 0
        self._columns = np.zeros((dim, 0), dtype=np.int8)  # row i of the index is column i
        self._scale = np.zeros(0, dtype=np.float32)  # s_x
        self._scale_l1 = np.zeros(0, dtype=np.float32)  # s_x * |X|_1
        self._zero_sums = np.zeros(0, dtype=np.int32)  # 64 * sum(X): the query's zero point times the row
        self._usable = np.zeros(0, dtype=bool)  # False: a row with a non-finite value (always scored)

    def _ensure(self, rows: int) -> None:
        if rows <= self._capacity:
            return
        capacity = max(rows, self._capacity + self._capacity // 4 + 1024)  # ORT reads every column kept: grow by a quarter
        columns = np.zeros((self.dim, capacity), dtype=np.int8)
        columns[:, :self._capacity] = self._columns
        self._columns = columns
        for name in ("_scale", "_scale_l1", "_zero_sums"):
            grown = np.zeros(capacity, dtype=getattr(self, name).dtype)
            grown[:self._capacity] = getattr(self, name)
            setattr(self, name, grown)
        usable = np.ones(capacity, dtype=bool)
        usable[:self._capacity] = self._usable
        self._usable = usable
        self._capacity = capacity

    def put(self, row: int, vector: np.ndarray) -> None:
        self._ensure(row + 1)
        top = float(np.max(np.abs(vector))) if vector.size else 0.0
        if not np.isfinite(top):
            self._columns[:, row] = 0
            self._scale[row] = self._scale_l1[row] = 0.0
            self._zero_sums[row] = 0
            self._usable[row] = False
            return
        scale = top / _ROW_STEPS if top > 0 else 0.0
        quantized = np.rint(vector / scale).astype(np.int8) if scale else np.zeros(self.dim, dtype=np.int8)
        self._columns[:, row] = quantized
        self._scale[row] = scale
        self._scale_l1[row] = scale * float(np.abs(quantized, dtype=np.int32).sum())
        self._zero_sums[row] = _QUERY_ZERO * int(quantized.sum(dtype=np.int32))
        self._usable[row] = True

    def move(self, source: int, target: int) -> None:
        self._columns[:, target] = self._columns[:, source]
        for array in (self._scale, self._scale_l1, self._zero_sums, self._usable):
            array[target] = array[source]

    def rows(self, query: np.ndarray, n: int, floor: float) -> np.ndarray | None:
        """Indexes (ascending) of the first ``n`` rows whose cosine to ``query`` can reach ``floor``;
        None when the bound cannot be computed (no onnxruntime, a non-finite query)."""
        if not self._tried:
            self._tried = True
            try:
                self._session = _matmul_integer_session(self.dim)
            except Exception:  # noqa: BLE001 - an onnxruntime that cannot run this: the float scan answers
                self._session = None
        top = float(np.max(np.abs(query))) if query.size else 0.0
        if self._session is None or not np.isfinite(top) or n > self._capacity:
            return None
        step = top / _QUERY_STEPS if top > 0 else 1.0
        steps = np.rint(query / step)
        quantized = (steps + _QUERY_ZERO).astype(np.uint8).reshape(1, -1)
        products = self._session.run(None, {"query": quantized, "rows": self._columns})[0][0, :n]
        products -= self._zero_sums[:n]  # now Q.X
        # s_x * (s_q * Q.X + |q|_1 / 2) + s_q / 2 * s_x |X|_1: the bound above, per row
        bound = products.astype(np.float32)
        bound *= np.float32(step)
        bound += np.float32(float(np.abs(query).sum()) / 2)
        bound *= self._scale[:n]
        bound += np.float32(step / 2) * self._scale_l1[:n]
        return np.flatnonzero((bound >= floor - _SLACK) | ~self._usable[:n])
