"""A Redis write never stops halfway, and no one entry can block the shared server (issue 32).

Redis does not roll a script back: the writes it made before a command failed stay. Each test
plants keys of the wrong type where the store keeps its bookkeeping (as another writer or a
"repair" tool could), or writes an entry with thousands of metadata fields, on the real server of
scripts/services.sh, and checks through the public API that the entry lands whole (expiry,
indexes, record), that invalidate reaches it, and that stats, invalidate and cleanup keep working.
"""

from __future__ import annotations

import warnings

import pytest
import services
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache, open_store
from actioncache.stores.base import Entry
from actioncache.stores.redis import bucket_of

from .backends import unique
from .private_servers import private_redis  # noqa: F401 - fixture

redis = pytest.importorskip("redis") if not services.in_ci() else __import__("redis")

# The index cap of docs/backends.md ("Metadata indexes"), written out: the old code had none.
CAP = 64


@pytest.fixture
def raw():
    services.require_redis()
    client = redis.Redis.from_url(services.REDIS_URL)
    yield client
    client.close()


@pytest.fixture
def cache():
    services.require_redis()
    c = Cache(services.redis_url(query=f"prefix={unique('integ')}"))
    yield c
    c.store.drop()
    c.close()


def _bucket_key(cache: Cache, key: str, suffix: str) -> str:
    return f"{{{cache.store.prefix}|{bucket_of(key)}}}:{suffix}"


PLANTS = {
    "record": "n",
    "index set": 'i:["_cache_action","a"]',
    "expiry index": "z",
    "size": "size",
    "over-cap set": "u",
}


@pytest.mark.parametrize("kinds", [[k] for k in PLANTS] + [list(PLANTS)], ids=[*PLANTS, "all"])
def test_a_put_over_planted_wrong_type_keys_lands_whole_and_invalidate_reaches_it(cache, raw, kinds):
    key = cache.key_for("a", {"x": 1})
    for kind in kinds:
        raw.delete(_bucket_key(cache, key, PLANTS[kind]))
        raw.rpush(_bucket_key(cache, key, PLANTS[kind]), "garbage")  # a list: the wrong type for every one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = cache.wrap("a", lambda x: "v1", {"x": 1}, ttl=600)
    assert "_cache_error" not in first, first
    entry_key = _bucket_key(cache, key, "e:" + key)
    assert 0 < raw.pttl(entry_key) <= 610_000  # Redis frees it at its expiry (clocks differ by ms)
    assert cache.wrap("a", lambda x: "v2", {"x": 1}, ttl=600)["_cache_hit"]
    assert cache.stats().get("error") is None
    assert cache.invalidate(metadata_filter={"_cache_action": "a"})["deleted_count"] == 1
    after = cache.wrap("a", lambda x: "v3", {"x": 1}, ttl=600)
    assert not after["_cache_hit"] and after["result"] == "v3"  # never the invalidated value
    assert cache.invalidate(pattern="cache:a:*")["deleted_count"] == 1


def test_a_garbled_expiry_index_is_rebuilt_for_stats_invalidate_and_cleanup(cache, raw):
    cache.wrap("a", lambda x: x, {"x": 1}, ttl=600)
    cache.wrap("a", lambda x: x, {"x": 2}, ttl=600)
    key = cache.key_for("a", {"x": 1})
    z = _bucket_key(cache, key, "z")
    raw.delete(z)
    raw.set(z, "garbage")
    store = cache.store
    assert store.count() == 2
    assert sorted(store.find(pattern="cache:a:*")) == sorted([key, cache.key_for("a", {"x": 2})])
    assert store.delete_expired(10**12) == 2  # cleanup still walks the rebuilt index
    assert store.count() == 0


def test_a_planted_index_set_does_not_fail_metadata_filters(cache, raw):
    cache.wrap("a", lambda x: x, {"x": 1}, ttl=600, metadata={"team": "red"})
    other = cache.key_for("a", {"x": 99})  # a bucket the entry may not be in
    for b in range(64):
        name = f"{{{cache.store.prefix}|{b}}}:i:[\"team\",\"red\"]"
        if not raw.exists(name):
            raw.set(name, "garbage")
    assert other  # every bucket now holds a planted or a real index set
    assert cache.invalidate(metadata_filter={"team": "red"})["deleted_count"] == 1


def _index_sets(raw, prefix: str) -> int:
    return sum(1 for _ in raw.scan_iter(match="{" + prefix + "|*}:i:*", count=1000))


def test_an_entry_over_the_index_cap_gets_no_index_sets_and_filters_still_find_it(cache, raw):
    """The put script of an entry with thousands of fields was quadratic and blocked the shared
    server for seconds; now it touches no index set and the entry is found by checking its metadata."""
    fields = {f"f{i}": i for i in range(4000)}
    response = cache.wrap("m", lambda n: n, {"n": 1}, ttl=600, metadata=fields)
    assert "_cache_error" not in response, response
    assert _index_sets(raw, cache.store.prefix) == 0
    assert cache.wrap("m", lambda n: n, {"n": 1}, ttl=600, metadata=fields)["_cache_hit"]
    key = cache.key_for("m", {"n": 1})
    assert cache.store.find(metadata_filter={"f3999": 3999}) == [key]
    assert cache.store.find(metadata_filter={"f3999": 1}) == []
    assert cache.store.find(metadata_filter={"_cache_action": "m", "f7": 7}) == [key]
    assert cache.invalidate(metadata_filter={"_cache_action": "m"})["deleted_count"] == 1
    assert not cache.wrap("m", lambda n: n, {"n": 1}, ttl=600)["_cache_hit"]
    assert list(raw.scan_iter(match="{" + cache.store.prefix + "|*}:u")) == []  # forgotten with the entry


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(min_value=0, max_value=CAP + 8), min_size=1, max_size=4),
       probe=st.integers(min_value=0, max_value=CAP + 8))
def test_filters_are_exact_on_both_sides_of_the_index_cap(sizes, probe):
    services.require_redis()
    store = open_store(services.redis_url(query=f"prefix={unique('cap')}"))
    try:
        metas = {f"k{i}": {f"f{j}": j for j in range(n)} | {"_cache_action": "a", "n": n} for i, n in enumerate(sizes)}
        for key, meta in metas.items():
            store.put(Entry(key, b"1", meta, 1.0, None))
        for flt in ({"_cache_action": "a"}, {f"f{probe}": probe}, {"n": probe}, {f"f{probe}": probe, "n": probe}):
            expected = sorted(k for k, m in metas.items() if all(m.get(f) == v for f, v in flt.items()))
            assert sorted(store.find(metadata_filter=flt)) == expected, flt
        assert store.delete_many(list(metas)) == len(metas)
        assert store.find(metadata_filter={"_cache_action": "a"}) == []
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("over_cap", [False, True], ids=["indexed", "over the cap"])
def test_an_index_set_garbled_after_the_write_is_rebuilt_and_invalidate_still_reaches_the_entry(cache, raw, over_cap):
    metadata = {f"f{i}": i for i in range(CAP + 1)} if over_cap else {"team": "red"}
    cache.wrap("a", lambda x: "v1", {"x": 1}, ttl=600, metadata=metadata)
    key = cache.key_for("a", {"x": 1})
    garbled = _bucket_key(cache, key, "u" if over_cap else 'i:["_cache_action","a"]')
    assert raw.exists(garbled)
    raw.delete(garbled)
    raw.set(garbled, "garbage")  # what the set listed is lost from it: the records in n still say
    assert cache.invalidate(metadata_filter={"_cache_action": "a"})["deleted_count"] == 1
    after = cache.wrap("a", lambda x: "v2", {"x": 1}, ttl=600)
    assert not after["_cache_hit"] and after["result"] == "v2"


def test_a_full_redis_with_noeviction_refuses_the_caches_writes_too(private_redis):
    """maxmemory holds for the cache as for every other client: over the limit a put is refused
    whole (the action's result is returned uncached, saying why), never written past the limit."""
    admin = redis.Redis.from_url(private_redis.url)
    cache = Cache(f"{private_redis.url}?prefix={unique('oom')}", cleanup_probability=0)
    limit = 3 * 1024 * 1024
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", limit)
    try:
        errors = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(2000):  # 8 MB of values
                error = cache.wrap("big", lambda i: "x" * 4096, {"i": i}, ttl=600).get("_cache_error")
                if error:
                    errors.append(error)
                    if len(errors) > 5:
                        break
        assert errors and "out of memory" in errors[0], errors[:1]
        assert int(admin.info("memory")["used_memory"]) < 2 * limit
    finally:
        admin.config_set("maxmemory", 0)
        cache.store.drop()
        cache.close()
        admin.close()
