"""A Redis Cluster slot in migration is not a server failure (issue 32, F7).

While one slot is resharded (``CLUSTER SETSLOT ... MIGRATING/IMPORTING`` and ``MIGRATE``, as
``redis-cli --cluster reshard`` does), a script whose keys are split between the two nodes gets
``TRYAGAIN`` until the migration ends. That bucket's calls run uncached, with a message saying so;
the circuit breaker does not count them, so every other key of the process stays cached. On a
cluster of the test's own (scripts/services.d/redis-cluster.sh), which the test reshards.
"""

from __future__ import annotations

import warnings

import pytest

from actioncache import Cache
from actioncache.stores.redis import bucket_of

from .test_redis_topologies import private_cluster  # noqa: F401 - fixture

redis = pytest.importorskip("redis")


def test_writes_to_a_migrating_slot_never_open_the_breaker_for_the_cluster(private_cluster):
    published, _ = private_cluster
    from redis.cluster import RedisCluster

    cache = Cache(f"{published['ACTIONCACHE_TEST_REDIS_CLUSTER_URL']}?prefix=resh", cleanup_probability=0)
    ports = [int(p) for p in published["ACTIONCACHE_TEST_REDIS_CLUSTER_PORTS"].split()]
    admin = RedisCluster(host="127.0.0.1", port=ports[0])
    try:
        moving = cache.key_for("k", {"i": 0})
        tag = f"{{resh|{bucket_of(moving)}}}"
        slot = admin.keyslot(tag)
        others = [i for i in range(1, 400) if admin.keyslot(f"{{resh|{bucket_of(cache.key_for('k', {'i': i}))}}}") != slot][:20]
        assert len(others) == 20
        cache.wrap("k", lambda i: "v0", {"i": 0})

        source = admin.get_node_from_key(tag)
        target = next(n for n in admin.get_primaries() if n.port != source.port)
        src, dst = redis.Redis(port=source.port), redis.Redis(port=target.port)
        src_id, dst_id = (str(node.cluster("myid"), "ascii") if isinstance(node.cluster("myid"), bytes)
                          else node.cluster("myid") for node in (src, dst))
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", tag + ":z")  # half moved

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            moving_errors = [cache.wrap("k", lambda i: "v1", {"i": 0}, skip_cache=True).get("_cache_error")
                             for _ in range(6)]
            assert all(moving_errors), moving_errors  # that bucket runs uncached while its slot moves...
            assert "migrated" in moving_errors[0]  # ...and says why
            assert cache.store.health()["breaker"]["state"] == "closed"
            for i in others:  # ...and every other key stays cached
                first = cache.wrap("k", lambda i: i, {"i": i})
                assert "_cache_error" not in first, first
                assert cache.wrap("k", lambda i: -1, {"i": i})["_cache_hit"]
    finally:
        admin.close()
        cache.close()
