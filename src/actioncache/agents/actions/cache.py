"""``cache.*``: seed 000's cache actions over the agent's :class:`Cache` (``engine.cache``)."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import AgentDefinitionError, suggest

# Every Cache.wrap option a YAML node may pass through (DESIGN.md "The public contract").
WRAP_OPTIONS = (
    "key", "key_strategy", "key_source", "ttl_seconds", "ttl_hours", "ttl_days", "skip_cache",
    "cache_enabled", "cleanup_probability", "cleanup_limit", "metadata", "scope", "lock", "lock_timeout_s",
)


def register(registry: Any, engine: Any) -> None:
    def wrap(state: Mapping[str, Any], action: str, args: Mapping[str, Any] | None = None,
             **options: Any) -> dict[str, Any]:
        """Run ``action`` through the cache: a live entry is returned without running it."""
        for name in options:
            if name not in WRAP_OPTIONS:
                raise AgentDefinitionError(
                    f"node {engine.current_node!r}: cache.wrap has no parameter {name!r}"
                    f"{suggest(name, WRAP_OPTIONS + ('action', 'args'))}"
                )
        canonical, fn = engine.registry.resolve(action, node=engine.current_node)
        label = f"{engine.namespace}/{canonical}" if engine.namespace else canonical
        return engine.cache.wrap(label, lambda **kw: fn(state, **kw), dict(args or {}), **options)

    def get(state: Mapping[str, Any], key: str, include_metadata: bool = False) -> dict[str, Any]:
        return engine.cache.get(key, include_metadata=include_metadata)

    def invalidate(state: Mapping[str, Any], key: str | None = None, pattern: str | None = None,
                   metadata_filter: Mapping[str, Any] | None = None, action: str | None = None) -> dict[str, Any]:
        if action is not None:
            metadata_filter = {**(metadata_filter or {}), "_cache_action": action}
        return engine.cache.invalidate(key=key, pattern=pattern, metadata_filter=metadata_filter)

    def cleanup(state: Mapping[str, Any], limit: int | None = None) -> dict[str, Any]:
        return engine.cache.cleanup(limit=limit)

    def stats(state: Mapping[str, Any]) -> dict[str, Any]:
        return engine.cache.stats()

    registry["cache.wrap"] = wrap
    registry["cache.get"] = get
    registry["cache.invalidate"] = invalidate
    registry["cache.cleanup"] = cleanup
    registry["cache.stats"] = stats
