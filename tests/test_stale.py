"""Stale-while-revalidate (stale_ttl_seconds) and serve-stale-on-error, through wrap, awrap and
@cached. A fake clock moves time past the TTL; the background refresh is awaited by polling."""

from __future__ import annotations

import asyncio
import time

import pytest

from actioncache import Cache, cached
from actioncache.cache import CacheWarning


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now


def _eventually(check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture(params=["memory", "sqlite"])
def clocked(request, tmp_path):
    clock = Clock()
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/swr.db"
    cache = Cache(url, clock=clock, cleanup_probability=0.0)
    yield cache, clock
    cache.close()


def test_a_stale_value_is_served_at_once_and_refreshed_once(clocked):
    cache, clock = clocked
    runs: list[int] = []

    def fetch(x):
        runs.append(x)
        return {"version": len(runs)}

    opts = {"ttl_seconds": 10, "stale_ttl_seconds": 100}
    assert cache.wrap("fetch", fetch, {"x": 1}, **opts)["result"] == {"version": 1}
    clock.now += 30  # past the TTL, inside the stale window
    stale = cache.wrap("fetch", fetch, {"x": 1}, **opts)
    assert stale["_cache_hit"] is True and stale["_cache_stale"] is True and stale["result"] == {"version": 1}
    assert _eventually(lambda: cache.get(stale["_cache_key"])["value"] == {"version": 2})
    fresh = cache.wrap("fetch", fetch, {"x": 1}, **opts)
    assert fresh["result"] == {"version": 2} and "_cache_stale" not in fresh
    assert runs == [1, 1]


def test_past_the_stale_window_is_a_miss(clocked):
    cache, clock = clocked
    opts = {"ttl_seconds": 10, "stale_ttl_seconds": 20}
    cache.wrap("f", lambda: "old", **opts)
    clock.now += 31
    r = cache.wrap("f", lambda: "new", **opts)
    assert r["_cache_hit"] is False and r["result"] == "new"


def test_a_call_without_a_stale_window_never_gets_a_stale_value(clocked):
    cache, clock = clocked
    cache.wrap("f", lambda: "old", ttl_seconds=10, stale_ttl_seconds=100)
    clock.now += 30
    r = cache.wrap("f", lambda: "new", ttl_seconds=10)  # this caller asked for fresh values only
    assert r["_cache_hit"] is False and r["result"] == "new" and "_cache_stale" not in r


def test_serve_stale_on_error(clocked):
    cache, clock = clocked
    cache.wrap("f", lambda: {"ok": 1}, ttl_seconds=10)
    clock.now += 30

    def down():
        raise ConnectionError("upstream is down")

    plain = cache.wrap("f", down, ttl_seconds=10)
    assert plain["success"] is False
    served = cache.wrap("f", down, ttl_seconds=10, serve_stale_on_error=True)
    assert served["success"] is True and served["result"] == {"ok": 1} and served["_cache_stale"] is True
    assert "upstream is down" in served["_cache_error"]
    failed = cache.wrap("f", lambda: {"success": False, "error": "quota"}, ttl_seconds=10, serve_stale_on_error=True)
    assert failed["result"] == {"ok": 1} and "quota" in failed["_cache_error"]
    nothing = cache.wrap("never-cached", down, serve_stale_on_error=True)
    assert nothing["success"] is False  # no stale value: the failure stands


def test_the_decorator_serves_stale_and_refreshes(clocked):
    cache, clock = clocked
    calls: list[int] = []

    @cached(cache=cache, ttl_seconds=10, stale_ttl_seconds=100)
    def square(x):
        calls.append(x)
        return x * x + len(calls) - 1

    assert square(3) == 9
    clock.now += 30
    assert square(3) == 9  # stale, at once
    assert _eventually(lambda: len(calls) == 2)
    assert _eventually(lambda: square(3) == 10)


def test_the_decorator_serves_stale_on_error(clocked):
    cache, clock = clocked
    fail = [False]

    @cached(cache=cache, ttl_seconds=10, serve_stale_on_error=True)
    def price(item):
        if fail[0]:
            raise TimeoutError("slow upstream")
        return 42

    assert price("a") == 42
    clock.now += 30
    fail[0] = True
    with pytest.warns(CacheWarning, match="stale"):
        assert price("a") == 42
    with pytest.raises(TimeoutError):
        price("never-seen")


def test_async_stale_while_revalidate(clocked):
    cache, clock = clocked
    runs: list[int] = []

    async def fetch():
        runs.append(1)
        await asyncio.sleep(0)
        return len(runs)

    @cached(cache=cache, ttl_seconds=10, stale_ttl_seconds=100)
    async def deco():
        return await fetch()

    async def main():
        first = await cache.awrap("f", fetch, ttl_seconds=10, stale_ttl_seconds=100)
        clock.now += 30
        stale = await cache.awrap("f", fetch, ttl_seconds=10, stale_ttl_seconds=100)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if len(runs) == 2:
                break
        again = await cache.awrap("f", fetch, ttl_seconds=10, stale_ttl_seconds=100)
        d1 = await deco()
        clock.now += 30
        d2 = await deco()
        await asyncio.sleep(0.05)
        return first, stale, again, d1, d2

    first, stale, again, d1, d2 = asyncio.run(main())
    assert first["result"] == 1 and stale["_cache_stale"] is True and stale["result"] == 1
    assert again["result"] == 2 and d1 == d2 == 3 and len(runs) == 4


@pytest.mark.parametrize("bad", [-1, float("inf"), float("nan"), "60", True])
def test_a_bad_stale_window_is_refused_before_anything_runs(bad):
    cache = Cache("memory://")
    ran = []
    with pytest.raises(ValueError, match="stale_ttl_seconds"):
        cache.wrap("f", lambda: ran.append(1), stale_ttl_seconds=bad)
    with pytest.raises(ValueError, match="stale_ttl_seconds"):
        cached(cache=cache, stale_ttl_seconds=bad)(lambda: 1)
    assert ran == []


def test_a_caller_never_gets_a_value_older_than_its_own_window(clocked):
    cache, clock = clocked
    cache.wrap("cw", lambda: "old", ttl_seconds=1, stale_ttl_seconds=3600)  # the writer allows an hour
    clock.now += 4
    r = cache.wrap("cw", lambda: "new", ttl_seconds=1, stale_ttl_seconds=1)  # this caller: one second
    assert r["_cache_hit"] is False and r["result"] == "new" and "_cache_stale" not in r


def test_get_reports_a_stale_entry_as_expired(clocked):
    cache, clock = clocked
    key = cache.wrap("g", lambda: "v1", ttl_seconds=10, stale_ttl_seconds=60)["_cache_key"]
    assert cache.get(key)["expired"] is False
    clock.now += 20
    got = cache.get(key)
    assert got["found"] is True and got["expired"] is True and got["stale"] is True and got["value"] == "v1"


def test_the_decorator_serves_stale_on_a_success_false_result(clocked):
    """serve_stale_on_error is one rule for wrap and @cached: a raised error and a returned
    `success: false` both fall back to the expired value (sync and async)."""
    cache, clock = clocked
    fail = [False]

    @cached(cache=cache, ttl_seconds=10, serve_stale_on_error=True)
    def quote(sym):
        return {"success": False, "error": "upstream 503"} if fail[0] else {"success": True, "price": 42}

    @cached(cache=cache, ttl_seconds=10, serve_stale_on_error=True)
    async def aquote(sym):
        return {"success": False, "error": "upstream 503"} if fail[0] else {"success": True, "price": 7}

    assert quote("X") == {"success": True, "price": 42}
    assert asyncio.run(aquote("X")) == {"success": True, "price": 7}
    clock.now += 30
    fail[0] = True
    with pytest.warns(CacheWarning, match="upstream 503; a stale cached value"):
        assert quote("X") == {"success": True, "price": 42}
    with pytest.warns(CacheWarning, match="upstream 503"):
        assert asyncio.run(aquote("X")) == {"success": True, "price": 7}
    assert quote("Y") == {"success": False, "error": "upstream 503"}  # nothing to fall back on
    assert cache.stats()["session"]["stale_served"] == 2
