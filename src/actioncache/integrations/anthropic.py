"""Anthropic SDK adapter: ``cached(client)`` caches ``messages.create``.

    from anthropic import Anthropic
    from actioncache import Cache
    from actioncache.integrations.anthropic import cached

    client = cached(Anthropic(), cache=Cache())
    m = client.messages.create(model="claude-sonnet-4-5", max_tokens=512, messages=[...], temperature=0)

Works on ``Anthropic`` and ``AsyncAnthropic``. A hit is the SDK's own ``Message``; a streamed call
(``stream=True``) is stored once it reached ``message_stop`` and replays as the SDK's stream events.
Anthropic's default temperature is 1.0 (sampling): give ``temperature=0`` or opt in with
``cache_nondeterministic=True``. Install with ``pip install 'actioncache[anthropic]'``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..cache import Cache
from .sdk_cache import CachedClient, Endpoint, make_settings

MESSAGES_API = "anthropic.messages"


def _messages_finished(events: list[dict[str, Any]], request: Mapping[str, Any]) -> bool:
    return bool(events) and events[-1].get("type") == "message_stop"


def _routes() -> dict[tuple[str, ...], Endpoint]:
    from anthropic.types import Message, RawMessageStreamEvent

    return {("messages", "create"): Endpoint(MESSAGES_API, Message, RawMessageStreamEvent, _messages_finished)}


def cached(client: Any, cache: Cache | str | None = None, *, ttl_seconds: float | None = None,
           cache_nondeterministic: bool = False) -> Any:
    """A view of ``client`` whose ``messages.create`` goes through ``cache`` (default: the process-wide cache)."""
    return CachedClient(client, _routes(), make_settings(client, cache, ttl_seconds, cache_nondeterministic))
