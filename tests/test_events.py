"""The observer seam (actioncache.events): every path of the core reports, no key text leaves it."""

from __future__ import annotations

import asyncio

import pytest

from actioncache import Cache
from actioncache.events import CacheEvent


def _kinds(events: list[CacheEvent]) -> list[str]:
    return [e.kind for e in events]


def test_wrap_reports_lookup_miss_store_then_lookup_hit(cache: Cache) -> None:
    events: list[CacheEvent] = []
    cache.add_observer(events.append)
    cache.wrap("double", lambda x: x * 2, {"x": 2})
    assert _kinds(events) == ["lookup", "misses", "stores"]
    assert all(e.action == "double" for e in events)
    assert events[0].value >= 0.0
    events.clear()
    cache.wrap("double", lambda x: x * 2, {"x": 2})
    assert _kinds(events) == ["lookup", "hits"]
    hit = events[1]
    assert hit.metadata is not None and hit.metadata["_cache_action"] == "double"
    assert "_cache_duration_ms" in hit.metadata


def test_decorator_and_awrap_report_too(cache: Cache) -> None:
    events: list[CacheEvent] = []
    cache.add_observer(events.append)

    @cache.cached
    def square(x: int) -> int:
        return x * x

    square(3), square(3)
    assert _kinds(events).count("hits") == 1 and _kinds(events).count("misses") == 1

    async def triple(x: int) -> int:
        return x * 3

    events.clear()
    asyncio.run(cache.awrap("triple", triple, {"x": 1}))
    asyncio.run(cache.awrap("triple", triple, {"x": 1}))
    assert _kinds(events) == ["lookup", "misses", "stores", "lookup", "hits"]


def test_failures_are_reported_and_not_stored(cache: Cache) -> None:
    events: list[CacheEvent] = []
    cache.add_observer(events.append)

    def boom() -> None:
        raise RuntimeError("no")

    cache.wrap("boom", boom, {})
    assert "failures" in _kinds(events) and "stores" not in _kinds(events)


def test_a_raising_observer_never_fails_the_action(cache: Cache, caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: CacheEvent) -> None:
        raise ValueError("observer bug")

    cache.add_observer(broken)
    r = cache.wrap("ok", lambda: 1, {})
    assert r["success"] and r["result"] == 1
    assert "observer bug" in caplog.text


def test_remover_stops_events_and_events_carry_no_key(cache: Cache) -> None:
    events: list[CacheEvent] = []
    remove = cache.add_observer(events.append)
    r = cache.wrap("secret", lambda text: text, {"text": "user data"})
    assert not any(r["_cache_key"] in repr(e.kind) + repr(e.action) + repr(e.value) for e in events)
    remove()
    remove()  # twice is harmless
    n = len(events)
    cache.wrap("secret", lambda text: text, {"text": "user data"})
    assert len(events) == n


def test_non_callable_observer_is_refused(cache: Cache) -> None:
    with pytest.raises(ValueError, match="callable taking one CacheEvent"):
        cache.add_observer("not a function")  # type: ignore[arg-type]


def test_lookup_is_the_read_half_of_wrap(cache: Cache) -> None:
    events: list[CacheEvent] = []
    cache.add_observer(events.append)
    key = "cache:stream:abc"
    assert cache.lookup("stream", key) is None
    cache.wrap("stream", lambda: [1, 2], {}, key=key, skip_cache=True)
    hit = cache.lookup("stream", key)
    assert hit["result"] == [1, 2] and hit["_cache_hit"] is True and hit["_cache_key"] == key
    assert _kinds(events) == ["lookup", "misses", "stores", "lookup", "hits"]
    assert cache.stats()["by_action"]["stream"]["hits"] == 1
    with pytest.raises(ValueError, match="non-empty name"):
        cache.lookup("", key)
