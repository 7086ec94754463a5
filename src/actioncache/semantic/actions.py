"""YAML actions of the semantic plan cache: ``semantic.lookup``, ``semantic.store``, ``semantic.feedback``.

Each action works on the agent's store (``engine.store``) under a namespace (default from
``settings.semantic.namespace``, else ``"default"``). One :class:`SemanticCache` per namespace is
built lazily and kept by this face for the engine it registered with (one embedder per engine), so
the embedding model loads once. Failures carry ``error_type`` (:mod:`actioncache.actions`):
``validation_error`` (bad arguments or settings), ``cache_error`` (the plan could not be stored),
``not_found`` (feedback on an entry that is not there).

``settings.semantic`` may set ``namespace``, ``threshold``, ``top_k``, ``alpha``, ``floor``,
``embedder`` (``"local"`` (default: the best local model), ``"hashing"`` or ``"openai"`` with
``model``/``base_url``) and ``verifier`` (``"auto"``, the default: the learned verifier with the
local model; ``"learned"``; ``"cross"``, the cross-encoder; ``"off"``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..actions import ActionTable, Engine, failure

if TYPE_CHECKING:  # the real imports wait for the first call: they bring in NumPy
    from .cache import SemanticCache
    from .embedders import Embedder

_TUNABLES = ("threshold", "top_k", "alpha", "floor")


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


class _EngineCaches:
    """The semantic caches of one engine: one embedder, one :class:`SemanticCache` per namespace."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.embedder: Embedder | None = None
        self.caches: dict[str, SemanticCache] = {}
        self.lock = threading.Lock()

    def get(self, namespace: str | None) -> SemanticCache:
        from .cache import SemanticCache

        settings = dict((getattr(self.engine, "settings", None) or {}).get("semantic") or {})
        ns = namespace or settings.get("namespace") or "default"
        with self.lock:
            if self.embedder is None:
                self.embedder = _embedder_from(settings)
            if ns not in self.caches:
                options: dict[str, Any] = {name: settings[name] for name in _TUNABLES if name in settings}
                verifier = settings.get("verifier", "auto")
                if verifier not in ("auto", "learned", "cross", "off"):
                    raise ValueError(f"settings.semantic.verifier must be 'auto', 'learned', 'cross' or 'off', "
                                     f"got {verifier!r}")
                options["verifier"] = None if verifier == "off" else verifier
                self.caches[ns] = SemanticCache(self.engine.store, embedder=self.embedder, namespace=ns, **options)
            return self.caches[ns]


def _failure(exc: Exception) -> dict[str, Any]:
    return failure("validation_error", f"{type(exc).__name__}: {exc}")


def register_actions(registry: ActionTable, engine: Engine) -> None:
    """Add the semantic actions to ``registry``."""
    caches = _EngineCaches(engine)

    def lookup(state: dict[str, Any], prompt: str, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "hit", "entry_id", "actions", "similarity", "score", "exact"}``."""
        try:
            hit = caches.get(namespace).lookup_hit(prompt)
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        if hit is None:
            return {"success": True, "hit": False, "entry_id": None, "actions": None}
        return {"success": True, "hit": True, "entry_id": hit.entry_id, "actions": hit.actions,
                "similarity": hit.similarity, "score": hit.score, "exact": hit.exact}

    def store(state: dict[str, Any], prompt: str, actions: Any, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "entry_id"}``; ``success`` is False when the plan could not be cached."""
        try:
            entry_id = caches.get(namespace).store(prompt, actions)
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        if entry_id is None:
            return failure("cache_error", "the plan was not cached (store or embedder failed; see the log)", entry_id=None)
        return {"success": True, "entry_id": entry_id}

    def feedback(state: dict[str, Any], entry_id: str, success: bool, namespace: str | None = None, **_: Any) -> dict[str, Any]:
        """``{"success", "updated", "evicted", "score"}``: ``score`` is None once the entry is evicted."""
        try:
            cache = caches.get(namespace)
            updated = cache.update_reward(entry_id, success)
        except (TypeError, ValueError) as exc:
            return _failure(exc)
        entry = cache.get(entry_id) if updated else None
        out = {"success": updated, "updated": updated, "evicted": updated and entry is None,
               "score": None if entry is None else entry["score"]}
        if not updated:
            out.update(error=f"feedback on {entry_id!r} was not recorded: no such entry in this namespace (evicted, "
                             "or never stored; give the entry_id semantic.lookup or semantic.store returned), or the "
                             "store failed (see the log)", error_type="not_found")
        return out

    registry["semantic.lookup"] = lookup
    registry["semantic.store"] = store
    registry["semantic.feedback"] = feedback
