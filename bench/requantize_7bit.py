"""Rewrite an int8 ONNX model's matrix weights on 7 bits, so that no x86 CPU saturates its integer products.

ONNX Runtime multiplies unsigned 8-bit activations by signed 8-bit weights. With AVX-512 VNNI each
product is summed in 32 bits; without it (AVX2, AVX-512 without VNNI: many AMD EPYC and older Xeon
machines) pairs of products are summed in 16 bits first (``vpmaddubsw``), and a pair above 32,767
saturates. The same model then answers differently by CPU: the cross-encoder scored one pair 0.037
on an AMD EPYC and 0.141 on a Xeon with VNNI, on either side of its operating point 0.094. Weights in
[-64, 64] cannot saturate (255 x 64 x 2 = 32,640), which is what ONNX Runtime's ``reduce_range``
does when it quantizes from float; ``bench/train_semantic_crossencoder.py`` and the embedder
(``embedders_onnx._quantize``) quantize that way.

This script is for a model whose float weights were not kept (the shipped cross-encoder): each
signed 8-bit weight matrix with a zero point of 0 is halved and rounded, and its scales doubled,
the weights quantized a second time from their 8-bit values. The error to the float weights grows
from half a step to at most one and a half of the 8-bit steps.

Run:  python bench/requantize_7bit.py src/actioncache/semantic/data/verifier_cross.onnx
      (rewrites the file in place; then update its "id" in verifier_cross.json: printed)
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

#: The largest magnitude of a weight that cannot saturate a 16-bit sum of two u8 x s8 products.
SEVEN_BIT = 64


def seven_bit_weights(model) -> list[str]:  # an onnx.ModelProto
    """Rewrite ``model``'s signed 8-bit weight matrices (``<name>_quantized`` beside ``<name>_scale``
    and a zero ``<name>_zero_point``, as ``quantize_dynamic`` names them) on 7 bits, in place; the
    names rewritten, in order."""
    from onnx import numpy_helper

    initializers = {t.name: t for t in model.graph.initializer}
    done = []
    for name, tensor in list(initializers.items()):
        if not name.endswith("_quantized"):
            continue
        weights = numpy_helper.to_array(tensor)
        if weights.dtype != np.int8:
            continue  # the unsigned embedding tables: looked up, never multiplied by an activation
        stem = name[: -len("_quantized")]
        scale, zero = initializers.get(f"{stem}_scale"), initializers.get(f"{stem}_zero_point")
        if scale is None or zero is None or np.any(numpy_helper.to_array(zero) != 0):
            raise ValueError(f"{name}: no scale or a zero point other than 0 beside it; not a symmetric int8 weight")
        if np.abs(weights.astype(np.int16)).max() <= SEVEN_BIT:
            continue  # already on 7 bits
        halved = np.clip(np.round(weights.astype(np.float32) / 2), -SEVEN_BIT, SEVEN_BIT).astype(np.int8)
        tensor.CopyFrom(numpy_helper.from_array(halved, name))
        scale.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(scale) * np.float32(2), scale.name))
        done.append(name)
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="an ONNX model with int8 weights, rewritten in place")
    args = parser.parse_args()
    import onnx

    model = onnx.load(str(args.model))
    done = seven_bit_weights(model)
    onnx.save(model, str(args.model))
    print(f"{args.model}: {len(done)} weight matrices on 7 bits; id {hashlib.sha256(args.model.read_bytes()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
