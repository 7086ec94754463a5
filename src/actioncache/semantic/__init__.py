"""Semantic plan cache: prompt -> action sequence, similarity lookup, reward-driven eviction.

``from actioncache.semantic import SemanticCache`` needs NumPy; the local model needs the
``[semantic]`` extra. See docs/semantic.md.

Names load on first use (PEP 562): the agent runtime imports ``actioncache.semantic.actions``
for every agent, and an agent that never looks anything up should not pay for NumPy.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "DEFAULT_THRESHOLD": "cache",
    "SemanticCache": "cache",
    "SemanticHit": "cache",
    "normalize_prompt": "cache",
    "prompt_hash": "cache",
    "Embedder": "embedders",
    "EmbedderError": "embedders",
    "HashingEmbedder": "embedders",
    "OnnxEmbedder": "embedders_onnx",
    "HnswIndex": "index_hnsw",
    "OpenAICompatibleEmbedder": "embedders",
    "SentenceTransformerEmbedder": "embedders",
    "default_embedder": "embedders",
    "literal_guard": "guard",
    "contrast": "guard",
    "CrossEncoderVerifier": "verifiers",
    "LLMJudgeVerifier": "verifiers",
    "NumpyIndex": "index",
    "VectorIndex": "index",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'actioncache.semantic' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
