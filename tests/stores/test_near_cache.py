"""The near cache (stores/near.py) over real Redis, a Redis Cluster and PostgreSQL: hot entries
are served from the process, and a change made by any other process (with or without a near cache
of its own) reaches them within the stated bound: one pub/sub message (Redis) or one notification
at commit (PostgreSQL), and never past near_max_age_s."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import services

from actioncache import Cache, open_store
from actioncache.errors import StoreURLError
from actioncache.stores.base import Entry
from actioncache.stores.near import NearCache

from .backends import unique
from .private_servers import private_redis  # noqa: F401 - fixture

redis = pytest.importorskip("redis") if not services.in_ci() else __import__("redis")

WRITER = """
import sys, time
from actioncache import open_store
from actioncache.stores.base import Entry
store = open_store(sys.argv[1])  # a plain store: no near cache in this process
now = time.time()
if sys.argv[2] == "delete":
    print(store.delete("cache:hot"))
else:
    store.put(Entry("cache:hot", sys.argv[2].encode(), {"_cache_action": "a"}, now, now + 600))
    print(True)
"""


def _until(predicate, patience_s: float) -> bool:
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.fixture(params=["redis", "redis-cluster", "postgres"])
def urls(request):
    if request.param == "postgres":
        services.require_postgres()
        plain = f"{services.POSTGRES_URL}?connect_timeout_s=2&table={unique('near_')}"
        yield plain, plain + "&near=on&near_max_age_s=60"
        store = open_store(plain)
        store.drop()
        store.close()
        return
    if request.param == "redis":
        services.require_redis()
        base = services.redis_url(15)
    else:
        if not services.REDIS_CLUSTER_URL:
            services.require("redis cluster", "127.0.0.1", 0)
        base = services.REDIS_CLUSTER_URL
    plain = f"{base}?prefix={unique('near_')}"
    yield plain, plain + "&near=on&near_max_age_s=60"
    store = open_store(plain)
    store.drop()
    store.close()


def test_a_change_in_another_process_reaches_the_near_cache(urls, src_env):
    plain_url, near_url = urls
    near = open_store(near_url)
    try:
        assert isinstance(near, NearCache)
        assert _until(lambda: near.health()["near"]["listening"], 10), "the near cache listens"
        now = time.time()
        near.put(Entry("cache:hot", b"v1", {"_cache_action": "a"}, now, now + 600))
        assert near.get("cache:hot").value == b"v1"
        assert near.get("cache:hot") is near.get("cache:hot"), "served from the process"
        for change, expected in (("v2", b"v2"), ("delete", None)):
            subprocess.run([sys.executable, "-c", WRITER, plain_url, change], env=src_env, check=True, timeout=60)
            # The stated bound is one pub/sub message; max_age (60 s here) would be the fallback,
            # so seeing the change within 10 s shows the message dropped the copy.
            assert _until(lambda: (near.get("cache:hot") or Entry("", b"")).value == (expected or b""), 10), change
    finally:
        near.close()


def test_near_hits_make_no_round_trip(private_redis):
    near = open_store(private_redis.url + "?prefix=nearhits&near=on&near_max_age_s=600")  # no re-read by age
    admin = redis.Redis.from_url(private_redis.url)
    try:
        assert _until(lambda: near.health()["near"]["listening"], 10)
        cache = Cache(store=near, cleanup_probability=0)
        assert cache.wrap("hot", lambda: 42)["_cache_hit"] is False
        assert cache.wrap("hot", lambda: 42)["_cache_hit"] is True  # read from Redis, kept
        # The put's own invalidation message may arrive after that read and drop the copy once: let
        # it arrive, and read again, before counting (what is measured is hits on a settled copy).
        for _ in range(3):
            time.sleep(0.1)
            assert cache.wrap("hot", lambda: 0)["result"] == 42
        admin.config_resetstat()
        for _ in range(100):
            assert cache.wrap("hot", lambda: 0)["result"] == 42
        used = admin.info("commandstats")
        assert "cmdstat_hmget" not in used, used
        cache.invalidate(key=cache.key_for("hot", {}))
        assert cache.wrap("hot", lambda: 43)["result"] == 43, "an invalidate in this process drops the copy at once"
    finally:
        near.store.drop()
        near.close()
        admin.close()


def test_near_cache_options_are_checked():
    with pytest.raises(StoreURLError, match="near=on or near=off"):
        open_store("redis://127.0.0.1:1/0?near=maybe")
    with pytest.raises(StoreURLError, match="near_max_ages"):
        open_store("redis://127.0.0.1:1/0?near=on&near_max_ages=3")
    with pytest.raises(StoreURLError, match="without near=on"):
        open_store("redis://127.0.0.1:1/0?near_max_age_s=3")
    store = open_store("redis://127.0.0.1:1/0?near=on&near_max_age_s=0.5&near_max_entries=10")
    assert store.max_age_s == 0.5 and store.max_entries == 10
    store.close()
