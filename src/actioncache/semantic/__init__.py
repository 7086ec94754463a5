"""Semantic plan cache (seed 002): prompt -> action sequence, similarity lookup, reward-driven eviction.

``from actioncache.semantic import SemanticCache`` needs NumPy; the local model needs the
``[semantic]`` extra. See docs/semantic.md.
"""

from .cache import DEFAULT_THRESHOLD, SemanticCache, SemanticHit, normalize_prompt, prompt_hash
from .embedders import (
    Embedder,
    EmbedderError,
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    default_embedder,
)
from .guard import literal_guard
from .index import NumpyIndex, VectorIndex

__all__ = [
    "DEFAULT_THRESHOLD",
    "Embedder",
    "EmbedderError",
    "HashingEmbedder",
    "NumpyIndex",
    "OpenAICompatibleEmbedder",
    "SemanticCache",
    "SemanticHit",
    "SentenceTransformerEmbedder",
    "VectorIndex",
    "default_embedder",
    "literal_guard",
    "normalize_prompt",
    "prompt_hash",
]
