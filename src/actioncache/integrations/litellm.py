"""LiteLLM adapter: a LiteLLM cache whose keys are ``llm_keys`` and whose store is an actioncache store.

    import litellm
    from actioncache import Cache
    from actioncache.integrations.litellm import ActionCacheLiteLLM

    litellm.cache = ActionCacheLiteLLM(Cache())            # then any completion(..., caching=True)
    litellm.completion(model="openai/gpt-4o-mini", messages=[...], temperature=0, caching=True)

LiteLLM's own key keeps only the parameters it knows; this one follows ``llm_keys``: every argument
enters the key except a known list that cannot change the answer (``llm_keys``' non-output fields,
and LiteLLM's call ids, logging and observability settings, cost tables, rate limits, timeouts and
retries, cache controls: :func:`request_fields`), so ``api_version``, ``headers``, ``region_name``,
``base_model`` and arguments added next month are in. ``headers`` go through the ``llm_keys`` header
rule; credentials (``api_key``, tokens, secrets, passwords) enter as a digest. The provider and its
``api_base`` are part of it. A ``mock_*`` request (``mock_response``, ...) is never cached. Sampling
requests are cached like any other, as LiteLLM's own caches do (one sample replayed);
``deterministic_only=True`` keeps them out. LiteLLM decides before any request exists, so this key
is the call's arguments, not the HTTP request (the OpenAI and Anthropic adapters key that). A
``ttl`` of 0 or below keeps nothing.

Streams are LiteLLM's business: it stores the assembled response once a stream has ended and
replays a hit as its own ``ModelResponseStream`` chunks, so chunk boundaries are LiteLLM's, not
the provider's (the OpenAI and Anthropic adapters keep them). Install with
``pip install 'actioncache[litellm]'``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

from litellm.caching.base_cache import BaseCache
from litellm.caching.caching import Cache as LiteLLMCache
from litellm.types.caching import LiteLLMCacheType

from .._time import face_ttl
from ..cache import Cache
from . import resolve_cache
from .llm_keys import DEFAULT_TEMPERATURE, NON_OUTPUT_FIELDS, llm_request_key, resolve_deterministic_only

ACTION = "litellm.completion"


#: LiteLLM arguments that cannot change the answer (besides ``llm_keys.NON_OUTPUT_FIELDS``).
NON_ANSWER_ARGUMENTS = frozenset({
    "caching", "cache", "cache_key", "preset_cache_key", "ttl", "acompletion", "aembedding", "atext_completion",
    "async_call", "self", "client", "shared_session", "use_client", "logger_fn", "verbose", "no-log",
    "proxy_server_request", "model_info", "id", "tags", "stream_chunk_size", "stream_timeout",
    "client_side_timeout", "force_timeout", "keepalive_seconds", "allow_client_keepalive_override",
    "cooldown_time", "rpm", "tpm", "itpm", "otpm", "max_budget", "budget_duration", "max_parallel_requests",
    "turn_off_message_logging", "log_client_error_tracebacks", "secret_fields", "completion_call_id",
})
#: Prefixes of LiteLLM's own bookkeeping and of observability integrations' settings.
NON_ANSWER_PREFIXES = ("litellm_", "_litellm_", "arize_", "dd_", "langfuse_", "langsmith_", "newrelic_",
                       "posthog_", "wandb_", "weave_", "signoz_", "humanloop_")
#: Parts of an argument name that mark a credential: it enters the key as a digest, never in clear.
CREDENTIAL_PARTS = ("api_key", "secret", "password", "credential", "_token")


def request_fields(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that can change the answer (credentials and ``headers`` left to the caller)."""
    return {k: v for k, v in kwargs.items()
            if not _non_answer(k) and not _is_credential(k) and k != "headers"}


def _non_answer(name: str) -> bool:
    return (name in NON_ANSWER_ARGUMENTS or name.startswith(NON_ANSWER_PREFIXES)
            or "cost_per" in name or "uplift_multiplier" in name or name == "tiered_pricing")


def _is_credential(name: str) -> bool:
    if name in ("api_key", "organization", "project"):
        return True
    return name not in NON_OUTPUT_FIELDS and any(part in name for part in CREDENTIAL_PARTS)  # not prompt_cache_key


def _seconds(ttl: Any, default: float | None) -> float | None:
    """LiteLLM's ``ttl`` (a number, or text holding one) in seconds; ``default`` when absent or unreadable."""
    if ttl is None or isinstance(ttl, bool):
        return default
    try:
        return float(ttl)
    except (TypeError, ValueError):
        return default


class ActionCacheStore(BaseCache):
    """LiteLLM's cache-backend interface (``get_cache``/``set_cache``) on an actioncache :class:`Cache`."""

    def __init__(self, cache: Cache, ttl_seconds: float | None = None) -> None:
        super().__init__()
        self.action_cache, self.ttl_seconds = cache, ttl_seconds

    def set_cache(self, key: Any, value: Any, **kwargs: Any) -> None:
        if not isinstance(key, str) or not key:
            return
        ttl = _seconds(kwargs.get("ttl"), self.ttl_seconds)
        if ttl is not None and ttl <= 0:  # LiteLLM's own caches: expired as it is written, the old value gone
            self.action_cache.invalidate(key=key)
            return
        options: dict[str, Any] = {} if ttl is None else {"ttl_seconds": ttl}
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

    def __init__(self, cache: Cache | str | None = None, *, ttl: float | timedelta | None = None,
                 deterministic_only: bool = False, default_temperature: float = DEFAULT_TEMPERATURE,
                 ttl_seconds: float | None = None, cache_nondeterministic: bool | None = None,
                 **litellm_options: Any) -> None:
        super().__init__(type=LiteLLMCacheType.LOCAL, **litellm_options)
        self.action_cache = resolve_cache(cache)
        self.cache = ActionCacheStore(self.action_cache, face_ttl(ttl, ttl_seconds, "ActionCacheLiteLLM"))
        self.deterministic_only = resolve_deterministic_only(deterministic_only, cache_nondeterministic)
        self.default_temperature = default_temperature

    def key_for(self, **kwargs: Any) -> str | None:
        """The request's key, or None when it is not cached (a ``mock_*`` request, provider-side state,
        sampling under ``deterministic_only=True``)."""
        if any(name.startswith("mock_") for name in kwargs):
            return None  # a mocked answer must never be served for (or share a key with) a real call
        provider = kwargs.get("custom_llm_provider") or ""
        base = kwargs.get("api_base") or kwargs.get("base_url") or ""
        headers = kwargs.get("headers")
        credentials = {k: v for k, v in kwargs.items() if not _non_answer(k) and _is_credential(k)}
        found = llm_request_key(request_fields(kwargs), api=ACTION, base_url=f"{provider}|{base}",
                                headers=headers if isinstance(headers, Mapping) else None,
                                credentials={k: v if isinstance(v, str) else repr(v) for k, v in credentials.items()},
                                deterministic_only=self.deterministic_only,
                                default_temperature=self.default_temperature)
        return found.key

    def get_cache_key(self, **kwargs: Any) -> str:  # LiteLLM's hook: our key instead of its own
        return self.key_for(**kwargs)  # type: ignore[return-value]  # None: not cached (state, mock, sampling)

    def should_use_cache(self, **kwargs: Any) -> bool:
        return bool(super().should_use_cache(**kwargs)) and self.key_for(**kwargs) is not None  # type: ignore[no-untyped-call]
