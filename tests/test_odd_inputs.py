"""Odd inputs never cost the user their result (issue: nothing lost, nothing leaked).

* A bad TTL is refused before the function runs, never after.
* Lone surrogates (file names decoded with ``surrogateescape``) in results and arguments never
  raise: the result is returned and cached losslessly.
* Whatever a store holds under the key, ``wrap`` returns the function's result (hypothesis).
* Secrets in store URLs never reach ``repr``, ``stats()`` or ``_cache_error``.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actioncache import Cache
from actioncache.stores.base import Entry

BAD_TTLS = [float("inf"), float("-inf"), float("nan"), 1e300, 10**400, -1, 0, 36501 * 86400.0]


@pytest.mark.parametrize("ttl", BAD_TTLS, ids=repr)
@pytest.mark.parametrize("unit", ["ttl_seconds", "ttl_hours", "ttl_days"])
def test_bad_ttl_is_refused_before_the_function_runs(unit, ttl):
    cache = Cache("memory://")
    ran = []
    with pytest.raises(ValueError, match=unit):
        cache.wrap("a", lambda: ran.append(1) or 1, **{unit: ttl})
    assert ran == []


@pytest.mark.parametrize("ttl", [float("inf"), float("nan"), 1e300])
def test_bad_default_ttl_is_refused_when_the_cache_is_made(ttl):
    with pytest.raises(ValueError, match="default_ttl"):  # issue 26: one spelling, default_ttl=
        Cache("memory://", default_ttl=ttl)


def test_longest_ttl_is_accepted_and_cached():
    cache = Cache("memory://")
    assert cache.wrap("a", lambda: 1, ttl_days=36500)["result"] == 1
    assert cache.wrap("a", lambda: 2, ttl_days=36500)["_cache_hit"] is True


def test_result_with_a_lone_surrogate_is_returned_and_cached_losslessly(cache):
    name = b"report-\xff.txt".decode("utf-8", "surrogateescape")
    first = cache.wrap("ls", lambda: {"files": [name, "ok"]})
    assert first["success"] is True and first["result"] == {"files": [name, "ok"]}
    assert "_cache_error" not in first
    again = cache.wrap("ls", lambda: {"files": []})
    assert again["_cache_hit"] is True and again["result"] == {"files": [name, "ok"]}
    assert cache.get(again["_cache_key"])["value"] == {"files": [name, "ok"]}


def test_argument_with_a_lone_surrogate_is_keyed_not_refused(cache):
    name = "x\udcff"
    calls = []
    first = cache.wrap("stat", lambda path: calls.append(path) or len(path), {"path": name})
    assert first["success"] is True and first["result"] == 2
    assert cache.wrap("stat", lambda path: calls.append(path) or 0, {"path": name})["_cache_hit"] is True
    # a different surrogate is a different key
    assert cache.wrap("stat", lambda path: calls.append(path) or 3, {"path": "x\udcfe"})["result"] == 3
    assert calls == [name, "x\udcfe"]


def test_custom_key_with_a_lone_surrogate_still_returns_the_result(cache):
    r = cache.wrap("a", lambda: 5, key="k\udcff")
    assert r["success"] is True and r["result"] == 5


# --- the property: wrap returns the function's result, whatever the inputs and the store ------

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                      st.text(), st.text(alphabet="a\udcff\ud800é😀"))  # lone surrogates too
json_values = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=12)
ttl_values = st.one_of(st.none(), st.floats(), st.integers(min_value=-10, max_value=10**30), st.just(10**400))
# Everything here is garbage or expired: the function must run and its result be returned.
planted = st.one_of(
    st.none(),
    st.binary(max_size=40).map(lambda b: b"\x00" + b),  # unknown format byte
    st.binary(max_size=40).map(lambda b: b"j{" + b),  # broken JSON
    st.sampled_from([b"j" + b"[" * 5000 + b"1" + b"]" * 5000, b't{"__ac__":"nope","v":1}', b"j\xff\xfe", b"p" + b"x" * 40]),
    st.builds(lambda e, c: Entry("", b"j1", {}, c, e),  # wrong-typed or absurd times, or simply expired
              st.one_of(st.floats(max_value=1.0), st.text(max_size=5), st.just(float("nan"))),
              st.one_of(st.floats(), st.text(max_size=5))),
    st.builds(lambda c: Entry("", b"j1", {}, c, None), st.one_of(st.text(max_size=5), st.just(6.8e16), st.just(float("inf")))),
    st.builds(lambda v: Entry("", v, {}, 0.0, None), st.one_of(st.text(max_size=5), st.integers(), st.none())),
    st.just("bad-metadata"),
)


def _plant(cache: Cache, key: str, what) -> None:
    if what is None:
        return
    if what == "bad-metadata":
        cache.store.put(Entry(key, b"j1", ["not", "an", "object"], 0.0, None))  # as a foreign writer would
    elif isinstance(what, bytes):
        cache.store.put(Entry(key, what, {}, 0.0, None))
    else:
        cache.store.put(what.replace(key=key))


def _wrap_ttl(ttl):
    if ttl is None:
        return True
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl != ttl:
        return False
    return 0 < ttl <= 36500 * 86400


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ttl=ttl_values, result=json_values, arg=json_values, stored=planted)
def test_wrap_returns_the_functions_result_whatever_the_inputs(ttl, result, arg, stored):
    cache = Cache("memory://")
    key = cache.key_for("act", {"x": arg})
    _plant(cache, key, stored)
    ran = []
    if not _wrap_ttl(ttl):
        with pytest.raises(ValueError, match="ttl_seconds"):
            cache.wrap("act", lambda x: ran.append(1) or result, {"x": arg}, ttl_seconds=ttl)
        assert ran == []  # refused before the run, never after
        return
    out = cache.wrap("act", lambda x: ran.append(1) or result, {"x": arg}, ttl_seconds=ttl)
    assert out["success"] is True and ran == [1]
    assert _same(out["result"], result)
    again = cache.wrap("act", lambda x: ran.append(1) or result, {"x": arg}, ttl_seconds=ttl)
    assert _same(again["result"], result)
    if ttl is None or ttl >= 60:  # (a shorter TTL may have passed already)
        assert again["_cache_hit"] is True, again.get("_cache_error")  # and it was cached losslessly


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# --- secrets never shown -------------------------------------------------------------------

SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize("url", [
    f"redis://127.0.0.1:1/0?password={SECRET}",
    f"redis://user:{SECRET}@127.0.0.1:1/0",
    f"postgresql://u@127.0.0.1:1/db?password={SECRET}",
    f"postgresql://u:{SECRET}@127.0.0.1:1/db",
])
def test_server_passwords_never_shown(url):
    """Port 1 refuses connections: every call fails, and every message about it must stay clean."""
    pytest.importorskip("redis" if url.startswith("redis") else "psycopg")
    cache = Cache(url)
    shown = [repr(cache), cache.url]
    r = cache.wrap("a", lambda: 1)
    assert r["success"] is True and r["result"] == 1 and r["_cache_error"]
    shown += [str(r), str(cache.stats()), str(cache.get("k")), str(cache.invalidate(pattern="*")),
              str(cache.cleanup())]
    for text in shown:
        assert SECRET not in text
    assert "***" in cache.stats()["store"]


def test_libsql_auth_token_never_shown(tmp_path):
    pytest.importorskip("libsql")
    cache = Cache(f"libsql://127.0.0.1:1?authToken={SECRET}&tls=0")
    r = cache.wrap("a", lambda: 1)
    assert r["result"] == 1
    for text in (repr(cache), str(r), str(cache.stats())):
        assert SECRET not in text


# --- size: a result over max_value_bytes is returned, not cached ----------------------------

def test_a_result_over_max_value_bytes_is_returned_and_not_cached(sqlite_url):
    import os

    cache = Cache(sqlite_url, max_value_bytes=100_000, compress_threshold_bytes=None)
    big = os.urandom(100_000).hex()  # 200 KB of text
    with pytest.warns(UserWarning, match="max_value_bytes"):
        first = cache.wrap("big", lambda: big)
    assert first["success"] is True and first["result"] == big and "max_value_bytes" in first["_cache_error"]
    with pytest.warns(UserWarning):
        assert cache.wrap("big", lambda: big)["_cache_hit"] is False
    assert cache.wrap("small", lambda: "x" * 1000)["_cache_hit"] is False
    assert cache.wrap("small", lambda: "x")["_cache_hit"] is True


def test_the_default_limit_is_64_mib_and_none_lifts_it(sqlite_url):
    from actioncache.cache import DEFAULT_MAX_VALUE_BYTES

    assert DEFAULT_MAX_VALUE_BYTES == 64 * 1024 * 1024
    assert Cache(sqlite_url).flow.max_value_bytes == DEFAULT_MAX_VALUE_BYTES
    assert Cache(sqlite_url, max_value_bytes=None).flow.max_value_bytes is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10MB", True])
def test_a_bad_max_value_bytes_is_refused(bad):
    with pytest.raises(ValueError, match="max_value_bytes"):
        Cache("memory://", max_value_bytes=bad)
