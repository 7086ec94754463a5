"""YAML actions of the semantic plan cache: ``semantic.lookup``, ``semantic.store``, ``semantic.feedback``.

Each action works on the agent's store (``engine.store``) under a namespace (default from
``settings.semantic.namespace``, else ``"default"``). One :class:`SemanticCache` per namespace
and settings is built lazily and kept on the engine, so the embedding model loads once.

``settings.semantic`` may set ``namespace``, ``threshold``, ``top_k``, ``alpha``, ``floor`` and
``embedder`` (``"local"`` (default: the best local model), ``"hashing"`` or ``"openai"`` with
``model``/``base_url``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, MutableMapping

if TYPE_CHECKING:  # the real imports wait for the first call: they bring in NumPy
    from .cache import SemanticCache
    from .embedders import Embedder

_TUNABLES = ("threshold", "top_k", "alpha", "floor")
_LOCK = threading.Lock()


def _embedder_from(settings: dict[str, Any]) -> Embedder:
    from .embedders import HashingEmbedder, OpenAICompatibleEmbedder, default_embedder

    kind = settings.get("embedder", "local")
    if kind == "hashing":
        return HashingEmbedder()
    if kind == "openai":
        return OpenAICompatibleEmbedder(settings.get("model", "text-embedding-3-small"), base_url=settings.get("base_url"))
    if kind == "local":
        return default_embedder()
    raise ValueError(f"settings.semantic.embedder must be 'local', 'hashing' or 'openai', got {kind!r}")


def _semantic_cache(engine: Any, namespace: str | None) -> SemanticCache:
    from .cache import SemanticCache

    settings = dict((getattr(engine, "settings", None) or {}).get("semantic") or {})
    ns = namespace or settings.get("namespace") or "default"
    with _LOCK:
        caches = getattr(engine, "_semantic_caches", None)
        if caches is None:
            caches = {}
            engine._semantic_caches = caches
        if "embedder" not in caches:
            caches["embedder"] = _embedder_from(settings)
        if ns not in caches:
            options = {name: settings[name] for name in _TUNABLES if name in settings}
            caches[ns] = SemanticCache(engine.store, embedder=caches["embedder"], namespace=ns, **options)
        return caches[ns]


def _failure(exc: Exception) -> dict[str, Any]:
    return {"success": False, "error": f"{type(exc).__name__}: {exc}"}


def register_actions(registry: MutableMapping[str, Callable[..., dict[str, Any]]], engine: Any) -> None:
    """Add the semantic actions to ``registry``."""

    def lookup(state: dict[str, Any], prompt: str, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "hit", "entry_id", "actions", "similarity", "score", "exact"}``."""
        try:
            hit = _semantic_cache(engine, namespace).lookup_hit(prompt)
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        if hit is None:
            return {"success": True, "hit": False, "entry_id": None, "actions": None}
        return {"success": True, "hit": True, "entry_id": hit.entry_id, "actions": hit.actions,
                "similarity": hit.similarity, "score": hit.score, "exact": hit.exact}

    def store(state: dict[str, Any], prompt: str, actions: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "entry_id"}``; ``success`` is False when the plan could not be cached."""
        try:
            entry_id = _semantic_cache(engine, namespace).store(prompt, actions)
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        if entry_id is None:
            return {"success": False, "entry_id": None, "error": "the plan was not cached (store or embedder failed; see the log)"}
        return {"success": True, "entry_id": entry_id}

    def feedback(state: dict[str, Any], entry_id: str, success: bool, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "updated", "evicted", "score"}``: ``score`` is None once the entry is evicted."""
        cache = _semantic_cache(engine, namespace)
        try:
            updated = cache.update_reward(entry_id, bool(success))
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        entry = cache.get(entry_id) if updated else None
        return {"success": updated, "updated": updated, "evicted": updated and entry is None,
                "score": None if entry is None else entry["score"]}

    registry["semantic.lookup"] = lookup
    registry["semantic.store"] = store
    registry["semantic.feedback"] = feedback
