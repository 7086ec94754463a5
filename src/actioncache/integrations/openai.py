"""OpenAI SDK adapter: ``cached(client)`` caches ``chat.completions.create`` and ``responses.create``.

    from openai import OpenAI
    from actioncache import Cache
    from actioncache.integrations.openai import cached

    client = cached(OpenAI(), cache=Cache())
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[...], temperature=0)
    # the second identical call is a hit: a ChatCompletion rebuilt from the store, no HTTP

Works on ``OpenAI``, ``AsyncOpenAI`` and ``AzureOpenAI``. Everything else on the client is the
client's own. The key is the HTTP request the SDK sends (``llm_keys.http_request_key``): set
``client.base_url``, ``organization`` or the API key later, give a custom ``http_client``, and the
key follows. Streams (``stream=True``) are stored once they ended with their final chunk and replay
as ``ChatCompletionChunk`` / response events. Sampling requests are cached like any other (one
sample is replayed); ``deterministic_only=True`` keeps them out.
Install with ``pip install 'actioncache[openai]'``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

from .._time import face_ttl
from ..cache import Cache
from .llm_keys import resolve_deterministic_only
from .sdk_cache import CachedClient, Endpoint, make_settings

CHAT_API = "openai.chat"
RESPONSES_API = "openai.responses"


def _chat_finished(events: list[dict[str, Any]], request: Mapping[str, Any]) -> bool:
    # whole when every requested choice reported a finish_reason (and the usage chunk came, if asked)
    finished = {c.get("index") for e in events for c in e.get("choices") or () if c.get("finish_reason")}
    n = request.get("n")
    wanted = n if isinstance(n, int) else 1
    if len(finished) < wanted:
        return False
    options = request.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        return bool(events) and events[-1].get("usage") is not None
    return True


def _responses_finished(events: list[dict[str, Any]], request: Mapping[str, Any]) -> bool:
    return bool(events) and events[-1].get("type") == "response.completed"


def _response_final(data: Mapping[str, Any]) -> bool:
    # "incomplete" (stopped by max_output_tokens) is an answer; queued, in_progress, failed, cancelled are not
    return data.get("status") in (None, "completed", "incomplete")


def _routes() -> dict[tuple[str, ...], Endpoint]:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    return {
        ("chat", "completions", "create"): Endpoint(CHAT_API, ChatCompletion, ChatCompletionChunk, _chat_finished),
        ("responses", "create"): Endpoint(RESPONSES_API, Response, ResponseStreamEvent, _responses_finished,
                                        _response_final),
    }


def cached(client: Any, cache: Cache | str | None = None, *, ttl: float | timedelta | None = None,
           deterministic_only: bool = False, ttl_seconds: float | None = None,
           cache_nondeterministic: bool | None = None) -> Any:
    """A view of ``client`` whose ``chat.completions.create`` and ``responses.create`` go through ``cache``
    (default: the process-wide cache). ``ttl`` (seconds or a timedelta) overrides the cache's default TTL;
    ``deterministic_only=True`` leaves sampling requests uncached (``cache_nondeterministic`` is its
    deprecated opposite)."""
    settings = make_settings(cache, face_ttl(ttl, ttl_seconds, "openai.cached"),
                             resolve_deterministic_only(deterministic_only, cache_nondeterministic))
    return CachedClient(client, _routes(), settings)
