"""Redis specifics beyond the conformance suite: URL options, expiry done by Redis itself and
the cleanup of what it leaves, index sets instead of keyspace scans, glob translation to
Redis's byte-wise, backslash-escaped MATCH. All against real servers."""

from __future__ import annotations

import threading
import time

import pytest
import services

from actioncache import Cache, open_store
from actioncache.errors import StoreError, StoreURLError
from actioncache.stores.base import Entry
from actioncache.stores.redis import bucket_of

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
    """Every Redis key of the store's namespace (the layout is documented in stores/redis.py),
    but the buckets' size counters at 0 (left by a delete, harmless)."""
    client = redis.Redis.from_url(services.REDIS_URL)
    try:
        keys = sorted(k.decode() for k in client.scan_iter(match="{" + store.prefix + "|*"))
        return [k for k in keys if not (k.endswith(":size") and client.get(k) == b"0")]
    finally:
        client.close()


def tag(store, key: str) -> str:
    """The hash tag of the bucket ``key`` lives in."""
    return f"{{{store.prefix}|{bucket_of(key)}}}"


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
    assert raw_keys(store) == []


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
    assert raw_keys(store) == []


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


# --- get's own path below redis-py's command layer (RedisStore._hmget) ----------------------

def test_get_after_the_server_dropped_its_connection_reconnects_and_hits(store):
    store.put(Entry("k", b"v", {"_cache_action": "a"}, 1.0, None))
    assert store.get("k").value == b"v"  # the pool now holds a connected connection
    admin = redis.Redis.from_url(services.REDIS_URL)
    try:
        for _ in range(3):
            # Only this store's own connections (by their local address): other tests may be
            # reading the same server at the same time, and their connections must live.
            pool = store._pool  # the pool get's fast path reads on (the hit path's own client)
            ours = {"%s:%d" % c._sock.getsockname()[:2] for c in list(pool._available_connections) if c._sock is not None}
            mine = [c["id"] for c in admin.client_list() if c.get("addr") in ours]
            assert mine, "the store holds a connected pooled connection"
            for client_id in mine:
                admin.client_kill_filter(_id=client_id)
            assert store.get("k").value == b"v", "a dropped pooled connection is reconnected, not an error"
    finally:
        admin.close()


def test_a_reply_only_answers_its_own_command(private_redis):
    """A read that times out leaves its reply in flight; the connection must not go back to the
    pool with it, or the next get would be answered with the previous key's value."""
    # breaker=off: the timeout below would open the circuit breaker and skip the reads this checks
    store = open_store(private_redis.url + "?prefix=late&retries=0&socket_timeout=0.2&breaker=off")
    blocker = redis.Redis.from_url(private_redis.url)
    try:
        store.put(Entry("first", b"first value", {"_cache_action": "a"}, 1.0, None))
        store.put(Entry("second", b"second value", {"_cache_action": "a"}, 1.0, None))
        busy = threading.Thread(target=blocker.eval, args=(_SPIN_LUA, 0, "600"))
        busy.start()
        time.sleep(0.1)  # the script holds the server: HMGET is answered after it ends
        with pytest.raises(StoreError, match="get failed"):
            store.get("first")
        busy.join()
        for _ in range(5):
            assert store.get("second").value == b"second value"
            assert store.get("first").value == b"first value"
    finally:
        store.drop()
        store.close()
        blocker.close()


# Busy for ARGV[1] milliseconds by the server's clock (a script blocks every other client).
_SPIN_LUA = """
local t = redis.call('TIME')
local stop = t[1] * 1000000 + t[2] + ARGV[1] * 1000
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop
return 1
"""


@pytest.mark.parametrize("options", [{"single_connection_client": True}, {}])
def test_get_through_either_client_path(options):
    from actioncache.stores.redis import RedisStore

    store = RedisStore(services.REDIS_URL, prefix=unique("ac_"), **options)
    try:
        store.put(Entry("k", b"v", {"_cache_action": "a", "_cache_duration_ms": 2.5}, 1.0, None))
        entry = store.get("k")
        assert (entry.value, entry.metadata["_cache_duration_ms"], entry.metadata["_cache_action"]) == (b"v", 2.5, "a")
        assert store.get("other") is None
        redis.Redis.from_url(services.REDIS_URL).set(f"{tag(store, 'planted')}:e:planted", b"not a hash")
        assert "non-hash" in store.get("planted").metadata["_corrupt_metadata"]
    finally:
        store.drop()
        store.close()


def test_entries_carry_a_ttl_and_the_index_keys_do_not():
    """What the docs' advice rests on: under maxmemory-policy volatile-* Redis evicts only keys with
    a TTL. Every entry Cache.wrap writes has one; the index keys have none (allkeys-* could evict
    them); an entry stored without an expiry has none either (volatile-* never evicts it)."""
    services.require_redis()
    store = open_store(services.redis_url(12, f"prefix={unique('ttlcheck_')}"))
    client = redis.Redis.from_url(services.redis_url(12))
    try:
        cache = Cache(store=store)
        written = cache.wrap("a", lambda: 1, key="wrapped")
        assert written["result"] == 1
        now = time.time()
        store.put(Entry("forever", b"v", {"_cache_action": "a"}, now, None))
        assert client.pttl(f"{tag(store, written['_cache_key'])}:e:{written['_cache_key']}") > 0
        assert client.pttl(f"{tag(store, 'forever')}:e:forever") == -1
        index_keys = [k.decode() for k in client.scan_iter(match="{" + store.prefix + "|*") if b"}:e:" not in k]
        assert f"{tag(store, 'forever')}:z" in index_keys and any(":i:" in k for k in index_keys)
        for key in index_keys:
            assert client.pttl(key) == -1, key
    finally:
        store.drop()
        store.close()
        client.close()
