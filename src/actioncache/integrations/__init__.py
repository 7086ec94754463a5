"""Caching where agent developers already are: SDK and framework adapters, an MCP proxy, metrics.

Each module is an optional extra, imported only when you import it (the base install stays light):

* ``llm_keys``: the canonical key of an LLM request (no extra needed)
* ``openai`` (``actioncache[openai]``), ``anthropic`` (``actioncache[anthropic]``): ``cached(client)``
* ``langchain`` (``actioncache[langchain]``): ``ActionCacheLLMCache`` for ``set_llm_cache``
* ``langgraph`` (``actioncache[langgraph]``): ``ActionCacheNodeCache`` for ``CachePolicy`` nodes
* ``litellm`` (``actioncache[litellm]``): a LiteLLM cache backend keyed by ``llm_keys``
* ``mcp_proxy`` (``actioncache[mcp]``): ``actioncache mcp-proxy -- <server command>``
* ``metrics`` (``actioncache[metrics]``): OpenTelemetry metrics and a Prometheus exposition

See docs/integrations.md.
"""

from __future__ import annotations

from typing import Any


def resolve_cache(cache: Any) -> Any:
    """The adapters' ``cache=`` argument: a ``Cache``, a store URL, or None for the process-wide cache."""
    from ..cache import Cache, default_cache

    if cache is None:
        return default_cache()
    if isinstance(cache, Cache):
        return cache
    if isinstance(cache, str):
        return Cache(cache)
    raise ValueError(f"cache must be an actioncache.Cache or a store URL such as 'sqlite:///abs/path.db', "
                     f"not {type(cache).__name__}")
