"""LiteLLM adapter: a LiteLLM cache whose keys are ``llm_keys`` and whose store is an actioncache store.

    import litellm
    from actioncache import Cache
    from actioncache.integrations.litellm import ActionCacheLiteLLM

    litellm.cache = ActionCacheLiteLLM(Cache())            # then any completion(..., caching=True)
    litellm.completion(model="openai/gpt-4o-mini", messages=[...], temperature=0, caching=True)

LiteLLM's own key keeps only the parameters it knows; this one follows ``llm_keys``: every request
field the caller gave enters the key except the known non-output ones and LiteLLM's own routing
and logging arguments (``litellm_call_id``, ``metadata``, retries, ...), and the provider and its
``api_base`` are part of it. Sampling requests are not cached unless ``cache_nondeterministic=True``.

Streams are LiteLLM's business: it stores the assembled response once a stream has ended and
replays a hit as its own ``ModelResponseStream`` chunks, so chunk boundaries are LiteLLM's, not
the provider's (the OpenAI and Anthropic adapters keep them). Install with
``pip install 'actioncache[litellm]'``.
"""

from __future__ import annotations

from typing import Any, Mapping

from litellm.caching.base_cache import BaseCache
from litellm.caching.caching import Cache as LiteLLMCache
from litellm.types.caching import LiteLLMCacheType
from litellm.types.utils import is_litellm_owned_kwarg

from ..cache import Cache
from .llm_keys import DEFAULT_TEMPERATURE, llm_request_key
from . import resolve_cache

ACTION = "litellm.completion"


def request_fields(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the caller spelled it: LiteLLM's own routing and logging arguments removed."""
    return {k: v for k, v in kwargs.items() if not is_litellm_owned_kwarg(k) and k != "caching"}


class ActionCacheStore(BaseCache):
    """LiteLLM's cache-backend interface (``get_cache``/``set_cache``) on an actioncache :class:`Cache`."""

    def __init__(self, cache: Cache, ttl_seconds: float | None = None) -> None:
        super().__init__()
        self.action_cache, self.ttl_seconds = cache, ttl_seconds

    def set_cache(self, key: Any, value: Any, **kwargs: Any) -> None:
        if not isinstance(key, str) or not key:
            return
        ttl = kwargs.get("ttl") or self.ttl_seconds
        options = {"ttl_seconds": float(ttl)} if ttl else {}
        self.action_cache.wrap(ACTION, lambda: value, {}, key=key, skip_cache=True, **options)

    async def async_set_cache(self, key: Any, value: Any, **kwargs: Any) -> None:
        self.set_cache(key, value, **kwargs)

    async def async_set_cache_pipeline(self, cache_list: Any, **kwargs: Any) -> None:
        for key, value in cache_list:
            self.set_cache(key, value, **kwargs)

    def get_cache(self, key: Any, **kwargs: Any) -> Any:
        if not isinstance(key, str) or not key:
            return None
        hit = self.action_cache.lookup(ACTION, key)
        return None if hit is None else hit["result"]

    async def async_get_cache(self, key: Any, **kwargs: Any) -> Any:
        return self.get_cache(key, **kwargs)

    async def batch_cache_write(self, key: Any, value: Any, **kwargs: Any) -> None:
        self.set_cache(key, value, **kwargs)

    async def disconnect(self) -> None:
        return None


class ActionCacheLiteLLM(LiteLLMCache):
    """Set as ``litellm.cache``: LiteLLM's caching flow, actioncache's keys and store."""

    def __init__(self, cache: Cache | str | None = None, *, ttl_seconds: float | None = None,
                 cache_nondeterministic: bool = False, default_temperature: float = DEFAULT_TEMPERATURE,
                 **litellm_options: Any) -> None:
        super().__init__(type=LiteLLMCacheType.LOCAL, **litellm_options)
        self.action_cache = resolve_cache(cache)
        self.cache = ActionCacheStore(self.action_cache, ttl_seconds)
        self.cache_nondeterministic = cache_nondeterministic
        self.default_temperature = default_temperature

    def key_for(self, **kwargs: Any) -> str | None:
        provider = kwargs.get("custom_llm_provider") or ""
        base = kwargs.get("api_base") or kwargs.get("base_url") or ""
        found = llm_request_key(request_fields(kwargs), api=ACTION, base_url=f"{provider}|{base}",
                                cache_nondeterministic=self.cache_nondeterministic,
                                default_temperature=self.default_temperature)
        return found.key

    def get_cache_key(self, **kwargs: Any) -> str:  # LiteLLM's hook: our key instead of its own
        return self.key_for(**kwargs)  # type: ignore[return-value] - None: not cached (sampling)

    def should_use_cache(self, **kwargs: Any) -> bool:
        return bool(super().should_use_cache(**kwargs)) and self.key_for(**kwargs) is not None
