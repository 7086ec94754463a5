"""The LangGraph and LiteLLM adapters against their frameworks' own reference caches.

Neither framework ships a conformance suite for its cache interface (langgraph-checkpoint-
conformance covers checkpointers, which actioncache does not provide), so the contract is what the
framework's own in-memory cache does: the same random sequence of operations is run against
``langgraph.cache.memory.InMemoryCache`` / ``litellm``'s ``InMemoryCache`` and against the adapter,
and every read must agree. TTLs are either long (the entry lives through the test) or, for
LangGraph, zero or below (its cache then keeps nothing).
"""

from __future__ import annotations

import asyncio
import os

from hypothesis import given, settings
from hypothesis import strategies as st

from actioncache import Cache

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the price list at import

names = st.sampled_from(["a", "b", "a/b", "a:b", "*", ""])
namespaces = st.lists(names, min_size=1, max_size=2).map(tuple)
keys = st.sampled_from(["k1", "k2", "k/3"])
ttls = st.sampled_from([None, 3600, 0, -5])
ints = st.integers(-2**53, 2**53)  # what both serializers hold (msgpack stops at 64 bits)
values = st.one_of(ints, st.text(max_size=5), st.dictionaries(st.text(max_size=3), ints, max_size=2))

langgraph_ops = st.lists(st.one_of(
    st.tuples(st.just("set"), namespaces, keys, values, ttls),
    st.tuples(st.just("get"), st.lists(st.tuples(namespaces, keys), max_size=3)),
    st.tuples(st.just("clear"), st.one_of(st.none(), st.lists(namespaces, max_size=2))),
), max_size=12)


@settings(max_examples=60, deadline=None)
@given(langgraph_ops)
def test_langgraph_node_cache_reads_as_langgraphs_own_cache(ops) -> None:
    from langgraph.cache.memory import InMemoryCache

    from actioncache.integrations.langgraph import ActionCacheNodeCache

    reference, store = InMemoryCache(), Cache("memory://", cleanup_probability=0.0)
    adapter = ActionCacheNodeCache(store)
    try:
        for op in ops:
            if op[0] == "set":
                _, namespace, key, value, ttl = op
                for cache in (reference, adapter):
                    cache.set({(namespace, key): (value, ttl)})
            elif op[0] == "get":
                wanted = list(op[1])
                assert adapter.get(wanted) == reference.get(wanted)
                assert asyncio.run(adapter.aget(wanted)) == reference.get(wanted)
            else:
                for cache in (reference, adapter):
                    cache.clear(op[1])
    finally:
        store.close()


litellm_ops = st.lists(st.one_of(
    # LiteLLM's backends disagree about a ttl of 0 (in memory: gone unless the key already had a
    # ttl; Redis: refused), so the differential keeps to lifetimes they agree on; 0 is tested below
    st.tuples(st.just("set"), keys, st.fixed_dictionaries({"timestamp": st.floats(0, 1e9), "response": st.text(max_size=5)}),
              st.sampled_from([None, 3600])),
    st.tuples(st.just("pipeline"), st.lists(st.tuples(keys, st.fixed_dictionaries({"response": st.text(max_size=3)})),
                                            max_size=3)),
    st.tuples(st.just("get"), keys),
), max_size=12)


@settings(max_examples=60, deadline=None)
@given(litellm_ops)
def test_litellm_store_reads_as_litellms_own_in_memory_cache(ops) -> None:
    from litellm.caching.in_memory_cache import InMemoryCache

    from actioncache.integrations.litellm import ActionCacheStore

    reference, store = InMemoryCache(default_ttl=3600), Cache("memory://", cleanup_probability=0.0)
    adapter = ActionCacheStore(store)
    try:
        for op in ops:
            if op[0] == "set":
                _, key, value, ttl = op
                options = {} if ttl is None else {"ttl": ttl}
                for cache in (reference, adapter):
                    cache.set_cache(key, value, **options)
            elif op[0] == "pipeline":
                for cache in (reference, adapter):
                    asyncio.run(cache.async_set_cache_pipeline(op[1]))
            else:
                assert adapter.get_cache(op[1]) == reference.get_cache(op[1])
                assert asyncio.run(adapter.async_get_cache(op[1])) == reference.get_cache(op[1])
    finally:
        store.close()


def test_litellm_ttl_of_zero_keeps_nothing() -> None:
    # LiteLLM's cache={"ttl": 0} was stored for the cache's default 60 days
    from actioncache.integrations.litellm import ActionCacheStore

    store = Cache("memory://", cleanup_probability=0.0)
    adapter = ActionCacheStore(store)
    adapter.set_cache("k", {"response": "old"})
    adapter.set_cache("k", {"response": "new"}, ttl=0)
    adapter.set_cache("k2", {"response": "x"}, ttl="0")
    assert adapter.get_cache("k") is None and adapter.get_cache("k2") is None
    adapter.set_cache("k3", {"response": "y"}, ttl="soon")      # unreadable: the default lifetime
    assert adapter.get_cache("k3") == {"response": "y"}
    store.close()
