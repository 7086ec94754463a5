"""LangGraph adapter: ``ActionCacheNodeCache``, LangGraph's node ``BaseCache`` on an actioncache store.

    from langgraph.graph import StateGraph
    from langgraph.types import CachePolicy
    from actioncache import Cache
    from actioncache.integrations.langgraph import ActionCacheNodeCache

    builder.add_node("research", research, cache_policy=CachePolicy(ttl=3600))
    graph = builder.compile(cache=ActionCacheNodeCache(Cache("redis://127.0.0.1:6379/0")))

LangGraph decides what is cached (nodes with a ``CachePolicy``) and keys each node's input with the
policy's ``key_func``; this class stores what it writes in any actioncache store, so node results
survive restarts and are shared across processes. Values go through LangGraph's own serializer
(``JsonPlusSerializer`` without pickle) and are stored as JSON. A policy without ``ttl`` keeps the
entry for the cache's default TTL (60 days); a ``ttl`` of 0 or below keeps nothing (as LangGraph's
``InMemoryCache``: such an entry has expired when it is written). Install with
``pip install 'actioncache[langgraph]'``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from langgraph.cache.base import BaseCache, FullKey, Namespace

from ..cache import Cache
from ..keys import args_key
from . import resolve_cache

ACTION = "langgraph.node"


def namespace_label(namespace: Namespace) -> str:
    """The namespace as stored in each entry's metadata (for ``clear``): its JSON, so ``("a/b",)``
    and ``("a", "b")`` stay two namespaces."""
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


class ActionCacheNodeCache(BaseCache[Any]):
    """LangGraph's node cache over an actioncache :class:`Cache` (any store)."""

    def __init__(self, cache: Cache | str | None = None, *, serde: Any = None) -> None:
        super().__init__(serde=serde)
        self.cache = resolve_cache(cache)

    @staticmethod
    def key_for(namespace: Namespace, key: str) -> str:
        return args_key(ACTION, {"namespace": list(namespace), "key": key})

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        found: dict[FullKey, Any] = {}
        for namespace, key in keys:
            hit = self.cache.lookup(ACTION, self.key_for(namespace, key))
            if hit is not None:
                stored = hit["result"]
                found[(namespace, key)] = self.serde.loads_typed((stored["type"], stored["data"]))
        return found

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        return self.get(keys)

    def set(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        for (namespace, key), (value, ttl) in pairs.items():
            entry_key = self.key_for(namespace, key)
            if ttl is not None and ttl <= 0:  # expired as it is written: nothing to keep, the old value goes
                self.cache.invalidate(key=entry_key)
                continue
            kind, data = self.serde.dumps_typed(value)
            stored = {"type": kind, "data": data}
            options = {} if ttl is None else {"ttl_seconds": ttl}
            self.cache.wrap(ACTION, lambda stored=stored: stored, {}, key=entry_key, skip_cache=True,
                            metadata={"langgraph_namespace": namespace_label(namespace)}, **options)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, int | None]]) -> None:
        self.set(pairs)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Delete the entries of these namespaces (nodes), or every node entry of this cache."""
        if namespaces is None:
            self.cache.invalidate_action(ACTION)
            return
        for namespace in namespaces:
            self.cache.invalidate(metadata_filter={"_cache_action": ACTION,
                                                   "langgraph_namespace": namespace_label(namespace)})

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        self.clear(namespaces)
