"""Redis specifics beyond the conformance suite: URL options, expiry done by Redis itself and
the cleanup of what it leaves, index sets instead of keyspace scans, glob translation to
Redis's byte-wise, backslash-escaped MATCH. All against real servers."""

from __future__ import annotations

import time

import pytest

from actioncache import Cache, open_store
from actioncache.errors import StoreError, StoreURLError
from actioncache.stores.base import Entry

import services

from .backends import BACKENDS, unique
from .private_servers import private_redis  # noqa: F401 - fixture

redis = pytest.importorskip("redis") if not services.in_ci() else __import__("redis")


@pytest.fixture
def store(tmp_path):
    s = BACKENDS["redis"](tmp_path)
    yield s
    s.drop()
    s.close()


def raw_keys(store) -> list[str]:
    """Every Redis key under the store's prefix (the layout is documented in stores/redis.py)."""
    client = redis.Redis.from_url(services.REDIS_URL)
    try:
        return sorted(k.decode() for k in client.scan_iter(match=store.prefix + ":*"))
    finally:
        client.close()


def test_url_options_and_errors():
    store = open_store("redis://:s3cret@127.0.0.1:1/3?prefix=app1&retries=0&socket_timeout=2")
    assert store.prefix == "app1" and store.url.startswith("redis://:***@127.0.0.1:1/3?prefix=app1")
    with pytest.raises(StoreError) as err:
        store.get("k")
    assert "s3cret" not in str(err.value) and "***" in str(err.value) and "redis-server running" in str(err.value)
    with pytest.raises(StoreURLError, match="prefix"):
        open_store("redis://127.0.0.1/0?prefix=a*b")
    with pytest.raises(StoreURLError, match="retries"):
        open_store("redis://127.0.0.1/0?retries=many")


def test_prefixes_isolate_stores_on_one_database(store):
    other = open_store(f"{services.REDIS_URL}?prefix={unique('ac_')}")
    try:
        store.put(Entry("k", b"mine", {"_cache_action": "a"}, 1.0, None))
        assert other.get("k") is None and other.find(pattern="*") == [] and other.count() == 0
        assert other.find(metadata_filter={"_cache_action": "a"}) == []
    finally:
        other.drop()


def test_redis_expires_entries_itself_and_cleanup_removes_the_traces(store):
    now = time.time()
    store.put(Entry("short", b"x" * 10, {"_cache_action": "a", "tag": "t"}, now, now + 0.3))
    store.put(Entry("long", b"y" * 5, {"_cache_action": "a", "tag": "t"}, now, now + 3600))
    assert store.get("short") is not None and store.count() == 2
    time.sleep(0.6)  # Redis drops the entry at its expiry; nobody calls delete_expired yet
    assert store.get("short") is None
    assert store.count() == 1
    assert store.find(pattern="*") == ["long"]
    assert store.find(metadata_filter={"tag": "t"}) == ["long"]
    assert store.find(metadata_filter={"_cache_action": "a", "note": None}) == []
    assert store.size_bytes() == 15, "the value's bytes count until the cleanup"
    assert store.delete_expired(time.time()) == 1
    assert store.size_bytes() == 5
    assert store.delete("long") is True
    assert store.size_bytes() == 0
    # Nothing of either entry is left: no entry hash, no index member, no bookkeeping, no ZSET member.
    assert raw_keys(store) == [f"{store.prefix}:size"]


def test_cache_get_of_an_entry_redis_expired_is_a_miss(store):
    cache = Cache(store=store, cleanup_probability=0)
    cache.wrap("a", lambda: 1, {}, ttl_seconds=0.2)
    time.sleep(0.4)
    assert cache.wrap("a", lambda: 2, {}, ttl_seconds=60)["result"] == 2


def test_upsert_moves_index_memberships(store):
    store.put(Entry("k", b"1", {"_cache_action": "a", "n": 1, "s": "x"}, 1.0, None))
    store.put(Entry("k", b"2", {"_cache_action": "b", "n": 2.0}, 1.0, None))
    assert store.find(metadata_filter={"_cache_action": "a"}) == []
    assert store.find(metadata_filter={"s": "x"}) == []
    assert store.find(metadata_filter={"_cache_action": "b", "n": 2}) == ["k"]
    store.delete("k")
    assert raw_keys(store) == [f"{store.prefix}:size"]


def test_filters_on_unindexed_fields_are_exact(store):
    long_text = "é" * 300  # longer than any indexed string
    store.put(Entry("k1", b"1", {"note": long_text, "nested": {"a": [1, 2]}, "_cache_key": "k1"}, 1.0, None))
    store.put(Entry("k2", b"2", {"note": "short", "nested": {"a": [1]}, "_cache_key": "k2"}, 1.0, None))
    assert store.find(metadata_filter={"note": long_text}) == ["k1"]
    assert store.find(metadata_filter={"nested": {"a": [1]}}) == ["k2"]
    assert store.find(metadata_filter={"_cache_key": "k2", "note": "short"}) == ["k2"]
    assert store.find(metadata_filter={"note": "short", "nested": {"a": [1, 2]}}) == []


def test_metadata_filters_use_index_sets_not_scans(private_redis):
    """INFO commandstats on a private server (nobody else's commands) shows which commands ran."""
    store = open_store(private_redis.url + "?prefix=idx")
    client = redis.Redis.from_url(private_redis.url)
    try:
        for i in range(300):
            store.put(Entry(f"cache:a:{i}", b"1", {"_cache_action": "a" if i else "b", "_cache_type": "x"}, 1.0, None))
        client.config_resetstat()
        assert store.find(metadata_filter={"_cache_action": "b", "_cache_type": "x"}) == ["cache:a:0"]
        used = set(client.info("commandstats"))
        assert "cmdstat_sinter" in used
        assert not used & {"cmdstat_scan", "cmdstat_zscan", "cmdstat_keys", "cmdstat_hget"}, used
        client.config_resetstat()
        assert len(store.find(pattern="cache:a:1*")) == 111
        used = set(client.info("commandstats"))
        assert "cmdstat_zscan" in used and not used & {"cmdstat_scan", "cmdstat_keys"}, used
    finally:
        store.drop()
        client.close()
