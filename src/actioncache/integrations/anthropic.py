"""Anthropic SDK adapter: ``cached(client)`` caches ``messages.create``.

    from anthropic import Anthropic
    from actioncache import Cache
    from actioncache.integrations.anthropic import cached

    client = cached(Anthropic(), cache=Cache())
    m = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[...], temperature=0)

Works on ``Anthropic`` and ``AsyncAnthropic``. The key is the HTTP request the SDK sends
(``llm_keys.http_request_key``). A hit is the SDK's own ``Message``; a streamed call
(``stream=True``) is stored once it reached ``message_stop`` and replays as the SDK's stream events.
Anthropic's default temperature is 1.0 (sampling): such a request is cached like any other (its one
sample is replayed); ``deterministic_only=True`` keeps sampling requests out.
Install with ``pip install 'actioncache[anthropic]'``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Mapping

from .._time import face_ttl
from ..cache import Cache
from .llm_keys import resolve_deterministic_only
from .sdk_cache import CachedClient, Endpoint, make_settings

MESSAGES_API = "anthropic.messages"


def _messages_finished(events: list[dict[str, Any]], request: Mapping[str, Any]) -> bool:
    return bool(events) and events[-1].get("type") == "message_stop"


def _routes() -> dict[tuple[str, ...], Endpoint]:
    from anthropic.types import Message, RawMessageStreamEvent

    return {("messages", "create"): Endpoint(MESSAGES_API, Message, RawMessageStreamEvent, _messages_finished)}


def cached(client: Any, cache: Cache | str | None = None, *, ttl: float | timedelta | None = None,
           deterministic_only: bool = False, ttl_seconds: float | None = None,
           cache_nondeterministic: bool | None = None) -> Any:
    """A view of ``client`` whose ``messages.create`` goes through ``cache`` (default: the process-wide cache).
    ``deterministic_only=True`` leaves sampling requests uncached."""
    settings = make_settings(cache, face_ttl(ttl, ttl_seconds, "anthropic.cached"),
                             resolve_deterministic_only(deterministic_only, cache_nondeterministic))
    return CachedClient(client, _routes(), settings)
