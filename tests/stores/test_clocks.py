"""Expiry is judged by one clock per store: the server's clock where the store has one.

Writers and readers on machines whose clocks are an hour off (simulated with ``Cache(clock=...)``,
the clock the cache would otherwise read from this machine) still agree on every expiry.
"""

from __future__ import annotations

import time

import pytest

from actioncache import Cache

from .backends import postgres_store, redis_store

HOUR = 3600.0
SERVER_STORES = {"redis": redis_store, "postgres": postgres_store}


@pytest.fixture(params=sorted(SERVER_STORES))
def server_store(request, tmp_path):
    store = SERVER_STORES[request.param](tmp_path)
    yield store
    store.close()


def _cache(store, skew_s: float) -> Cache:
    return Cache(store=store, cleanup_probability=0.0, clock=lambda: time.time() + skew_s)


@pytest.mark.parametrize("writer_skew", [-HOUR, HOUR])
def test_skewed_writer_gives_everyone_hits_for_exactly_the_ttl(server_store, writer_skew):
    writer = _cache(server_store, writer_skew)
    first = writer.wrap("a", lambda: 1, ttl_seconds=600)
    assert first["_cache_hit"] is False
    for reader_skew in (0.0, -HOUR, HOUR, writer_skew):
        assert _cache(server_store, reader_skew).wrap("a", lambda: 2, ttl_seconds=600)["_cache_hit"] is True
    entry = server_store.get(first["_cache_key"])
    lives = entry.expires_at - server_store.server_time()
    # Ten minutes by the server's clock: not 70, not already gone. The writer knows the server's
    # clock within a round trip (Flow.now: the offset is measured between two local readings), so
    # the entry may live a few milliseconds past 600 s (600.0047 in a CI run on a loaded machine).
    assert 590 < lives <= 600.5


def test_expired_by_the_servers_clock_is_expired_for_every_reader(server_store):
    writer = _cache(server_store, HOUR)  # a fast machine
    key = writer.wrap("a", lambda: 1, ttl_seconds=1)["_cache_key"]
    time.sleep(1.2)
    for reader_skew in (0.0, -HOUR, HOUR):
        assert _cache(server_store, reader_skew).wrap("a", lambda: 2, ttl_seconds=600)["_cache_hit"] is False
        server_store.delete(key)


def test_cleanup_uses_the_servers_clock(server_store):
    slow = _cache(server_store, -HOUR)
    slow.wrap("a", lambda: 1, ttl_seconds=1)
    time.sleep(1.2)
    assert slow.cleanup()["deleted_count"] == 1  # expired by the server's clock, though not by the slow one
