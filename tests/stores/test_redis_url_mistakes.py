"""Common Redis URL mistakes get a message naming the fix (issue 32, F10), on the run's real
servers (scripts/services.sh): a cluster node opened as one server, a negative retries, a
Sentinel master name the Sentinels do not know."""

from __future__ import annotations

import warnings

import pytest
import services

from actioncache import Cache, open_store
from actioncache.errors import StoreURLError

from .backends import unique


def test_negative_retries_are_refused_when_the_store_is_opened():
    with pytest.raises(StoreURLError, match="retries=-1 must be 0 or more"):
        open_store("redis+cluster://127.0.0.1:1,127.0.0.1:2?retries=-1")


def test_a_cluster_node_opened_as_one_server_says_to_use_redis_cluster():
    if not services.REDIS_CLUSTER_PORTS:
        pytest.skip("no Redis Cluster in this run (scripts/services.sh start)")
    cache = Cache(f"redis://127.0.0.1:{services.REDIS_CLUSTER_PORTS[0]}/0?prefix={unique('mistake')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        errors = [cache.wrap("a", lambda i: i, {"i": i}).get("_cache_error") for i in range(20)]
    cache.close()
    moved = [e for e in errors if e]
    assert moved, errors  # some of the 64 buckets' slots live on other nodes
    assert all("redis+cluster://" in e for e in moved), moved[0]


def test_an_unknown_sentinel_master_name_says_to_check_the_name_and_shows_no_client_repr():
    if not services.REDIS_SENTINEL_URL:
        pytest.skip("no Sentinel in this run (scripts/services.sh start)")
    url = services.REDIS_SENTINEL_URL.replace("/actioncache/", "/nosuchmaster/")
    cache = Cache(f"{url}?prefix={unique('mistake')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        error = cache.wrap("a", lambda: 1)["_cache_error"]
    cache.close()
    assert "sentinel masters" in error and "nosuchmaster" in error, error
    assert "<redis.client" not in error, error
