"""@cached and Cache.cached: binding, options, async, single flight."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import actioncache
from actioncache import Cache, cached


def test_bare_decorator_uses_the_default_cache(tmp_path):
    calls = []

    @cached
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9 and square(3) == 9 and calls == [3]
    assert actioncache.default_cache().store.count() == 1
    assert square.cache_key(3).startswith("cache:test_decorator.")


def test_keyword_order_and_defaults_do_not_change_the_key(cache):
    calls = []

    @cache.cached
    def f(a, b=2, *, c=3):
        calls.append((a, b, c))
        return [a, b, c]

    assert f(1) == [1, 2, 3]
    assert f(1, 2) == [1, 2, 3]
    assert f(a=1, c=3) == [1, 2, 3]
    assert f(c=3, b=2, a=1) == [1, 2, 3]
    assert len(calls) == 1
    assert f.cache_key(1) == f.cache_key(c=3, a=1, b=2)
    assert f(1, 5) == [1, 5, 3] and len(calls) == 2


def test_varargs_and_kwargs(cache):
    @cache.cached
    def f(*args, **kwargs):
        return {"args": list(args), "kwargs": kwargs}

    assert f(1, 2, x=1, y=2) == f(1, 2, y=2, x=1)
    assert f.cache_key(1, 2, x=1, y=2) == f.cache_key(1, 2, y=2, x=1)
    assert f.cache_key(1, 2) != f.cache_key(2, 1)


def test_ignore_leaves_arguments_out_of_the_key(cache):
    calls = []

    @cache.cached(ignore=["verbose"])
    def f(x, verbose=False):
        calls.append(verbose)
        return x

    f(1, verbose=True)
    f(1, verbose=False)
    assert calls == [True]


def test_ignore_must_name_parameters(cache):
    with pytest.raises(ValueError, match="not parameters"):
        @cache.cached(ignore=["nope"])
        def f(x):
            return x


def test_key_callable(cache):
    @cache.cached(key=lambda user, request_id: user)
    def profile(user, request_id):
        return {"user": user, "rid": request_id}

    assert profile("ann", 1) == {"user": "ann", "rid": 1}
    assert profile("ann", 2) == {"user": "ann", "rid": 1}


def test_version_changes_the_key(cache):
    def make(version):
        @cache.cached(version=version, name="versioned")
        def f(x):
            return {"v": version}

        return f

    assert make(1)(0) == {"v": 1}
    assert make(1)(0) == {"v": 1}
    assert make(2)(0) == {"v": 2}


def _compile(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace[name]


def test_code_hash_follows_code_not_line_numbers(cache):
    v1 = _compile("def f(x):\n    return x + 1\n", "f")
    moved = _compile("\n\n\n\ndef f(x):\n    return x + 1\n", "f")
    changed = _compile("def f(x):\n    return x + 2\n", "f")
    k1 = cache.cached(code_hash=True, name="f")(v1).cache_key(1)
    assert cache.cached(code_hash=True, name="f")(moved).cache_key(1) == k1
    assert cache.cached(code_hash=True, name="f")(changed).cache_key(1) != k1
    assert cache.cached(name="f")(changed).cache_key(1) == cache.cached(name="f")(v1).cache_key(1)


def test_ttl_on_the_decorator(sqlite_url):
    now = [1_800_000_000.0]
    cache = Cache(sqlite_url, clock=lambda: now[0], cleanup_probability=0)
    calls = []

    @cache.cached(ttl_seconds=10)
    def f(x):
        calls.append(x)
        return x

    f(1)
    now[0] += 5
    f(1)
    now[0] += 6
    f(1)
    assert calls == [1, 1]


def test_refresh_uncached_invalidate(cache):
    counter = {"n": 0}

    @cache.cached
    def f(x):
        counter["n"] += 1
        return counter["n"]

    assert f(1) == 1 and f(1) == 1
    assert f.uncached(1) == 2 and f(1) == 1  # uncached does not touch the entry
    assert f.refresh(1) == 3 and f(1) == 3  # refresh overwrites it
    assert f.invalidate(1)["deleted_count"] == 1
    assert f(1) == 4
    f(2)
    assert f.invalidate()["deleted_count"] == 2
    assert cache.store.count() == 0


def test_skip_cache_option(cache):
    counter = {"n": 0}

    @cache.cached(skip_cache=True)
    def f():
        counter["n"] += 1
        return counter["n"]

    assert f() == 1 and f() == 2


def test_exceptions_propagate_and_are_not_cached(cache):
    calls = []

    @cache.cached
    def f(x):
        calls.append(x)
        raise KeyError("missing")

    for _ in range(2):
        with pytest.raises(KeyError):
            f(1)
    assert len(calls) == 2 and cache.store.count() == 0


def test_success_false_results_are_not_cached(cache):
    calls = []

    @cache.cached
    def f():
        calls.append(1)
        return {"success": False, "error": "nope"}

    f()
    f()
    assert len(calls) == 2


def test_methods_key_on_arguments_not_the_instance(cache):
    class Client:
        calls = 0

        @cache.cached
        def fetch(self, url):
            Client.calls += 1
            return url.upper()

    assert Client().fetch("a") == "A" and Client().fetch("a") == "A" and Client.calls == 1


def test_unkeyable_arguments_run_uncached_with_a_warning(cache):
    @cache.cached
    def f(obj):
        return 1

    with pytest.warns(actioncache.CacheWarning, match="running uncached"):
        assert f(object()) == 1


def test_single_flight_threads(cache):
    calls = []
    gate = threading.Event()

    @cache.cached
    def slow(x):
        calls.append(x)
        gate.wait(2)
        return x * 10

    results = []
    threads = [threading.Thread(target=lambda: results.append(slow(7))) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    gate.set()
    for t in threads:
        t.join()
    assert results == [70] * 8 and calls == [7]


def test_async_functions_and_single_flight(cache):
    calls = []

    @cache.cached
    async def fetch(x):
        calls.append(x)
        await asyncio.sleep(0.05)
        return {"x": x}

    async def main():
        first = await asyncio.gather(*(fetch(1) for _ in range(10)))
        again = await fetch(1)
        other = await fetch(2)
        return first, again, other

    first, again, other = asyncio.run(main())
    assert first == [{"x": 1}] * 10 and again == {"x": 1} and other == {"x": 2}
    assert calls == [1, 2]
    assert asyncio.iscoroutinefunction(fetch)


def test_async_refresh_is_single_flight(cache):
    """Concurrent refreshes of one key never overlap, and a call on the cold key that arrives while a
    refresh computes waits for it and gets its result instead of running the function again."""
    running = 0
    overlap = []
    calls = []

    @cache.cached
    async def fetch(x):
        nonlocal running
        running += 1
        overlap.append(running)
        calls.append(x)
        await asyncio.sleep(0.05)
        running -= 1
        return {"x": x, "run": len(calls)}

    async def main():
        refreshed, *plain = await asyncio.gather(fetch.refresh(1), *(fetch(1) for _ in range(5)))
        serial = await asyncio.gather(*(fetch.refresh(2) for _ in range(4)))
        return refreshed, plain, serial

    refreshed, plain, serial = asyncio.run(main())
    assert refreshed == {"x": 1, "run": 1} and plain == [refreshed] * 5
    assert calls.count(1) == 1  # the five plain calls waited for the refresh: one run in all
    assert calls.count(2) == 4 and max(overlap) == 1  # every refresh runs, one at a time
    assert [r["run"] for r in serial] == sorted(r["run"] for r in serial)


def test_sync_refresh_is_single_flight(cache):
    calls = []
    gate = threading.Event()

    @cache.cached
    def slow(x):
        calls.append(x)
        gate.wait(2)
        return len(calls)

    out = []
    refresher = threading.Thread(target=lambda: out.append(("refresh", slow.refresh(3))))
    refresher.start()
    while not calls:  # the refresh is computing (inside its flight) before the readers come
        time.sleep(0.01)
    readers = [threading.Thread(target=lambda: out.append(("call", slow(3)))) for _ in range(4)]
    for t in readers:
        t.start()
    time.sleep(0.1)
    gate.set()
    for t in (refresher, *readers):
        t.join()
    assert calls == [3] and sorted(out) == [("call", 1)] * 4 + [("refresh", 1)]


def test_awrap_single_flight(cache):
    calls = []

    async def work(q):
        calls.append(q)
        await asyncio.sleep(0.05)
        return {"q": q}

    async def main():
        return await asyncio.gather(*(cache.awrap("search", work, {"q": "x"}) for _ in range(5)))

    results = asyncio.run(main())
    assert [r["result"] for r in results] == [{"q": "x"}] * 5
    assert sum(r["_cache_hit"] for r in results) == 4 and calls == ["x"]


def test_wrap_single_flight_threads(cache):
    calls = []

    def work():
        calls.append(1)
        time.sleep(0.2)
        return {"ok": True}

    out = []
    threads = [threading.Thread(target=lambda: out.append(cache.wrap("w", work, {}))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sum(r["_cache_hit"] for r in out) == 5


def test_lock_true_single_flight_across_processes(tmp_path, src_env):
    """Four processes ask for one cold key with lock=True; the function runs once."""
    import subprocess
    import sys

    marker = tmp_path / "runs.txt"
    script = f"""
import time
from actioncache import Cache
c = Cache("sqlite:///{tmp_path}/shared.db", cleanup_probability=0)
def work():
    with open({str(marker)!r}, "a") as f:
        f.write("run\\n")
    time.sleep(0.5)
    return {{"ok": True}}
r = c.wrap("cold", work, {{}}, lock=True)
assert r["success"], r
"""
    procs = [subprocess.Popen([sys.executable, "-c", script], env=src_env) for _ in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    assert marker.read_text().count("run") == 1


def test_calls_that_may_not_read_the_cache_run_even_with_lock(cache):
    """lock=True takes the store lease, and the lease's look for a finished result must not turn a
    refresh or a skip_cache call into a hit of the old value."""
    runs = []

    @cache.cached(lock=True)
    def f(x):
        runs.append(x)
        return len(runs)

    assert f(1) == 1 and f(1) == 1
    assert f.refresh(1) == 2 and f(1) == 2
    first = cache.wrap("w", lambda: len(runs), {}, lock=True)
    again = cache.wrap("w", lambda: len(runs) + 100, {}, lock=True, skip_cache=True)
    assert not again["_cache_hit"] and again["result"] == first["result"] + 100


def test_equal_arguments_that_spell_differently_never_share_a_key(cache):
    """0.0 == -0.0, 1 == 1.0 == True: Python equality must not decide which result a call gets,
    whichever of the pair is called first."""
    import math

    @cache.cached
    def sign(x):
        return math.copysign(1.0, x)

    assert sign(0.0) == 1.0 and sign(-0.0) == -1.0
    assert sign(-0.0) == -1.0 and sign(0.0) == 1.0  # the hits too

    @cache.cached
    def kind(x):
        return type(x).__name__

    assert [kind(1), kind(1.0), kind(True)] == ["int", "float", "bool"]
    assert [kind(True), kind(1.0), kind(1)] == ["bool", "float", "int"]
    assert len({kind.cache_key(v) for v in (1, 1.0, True, 0.0, -0.0)}) == 5


def test_refresh_obeys_the_policy_of_its_scope(cache):
    """refresh() skips the lookup but stores only where the scope's decision lets a call store: a
    value computed in a phase the policy never caches must not become a later phase's hit."""
    runs = []

    @cache.cached(scope="llm_ro")
    def report(x):
        runs.append(x)
        return f"run{len(runs)}"

    @cache.cached(scope="llm_ro")
    async def areport(x):
        runs.append(x)
        return f"run{len(runs)}"

    with cache.policy(mode="use", scopes="llm_ro", phase="BUILD"):
        assert report(1) == "run1" and report.refresh(1) == "run2"
        assert asyncio.run(areport.refresh(1)) == "run3"
    with cache.policy(mode="off"):
        assert report.refresh(1) == "run4"
    assert cache.store.count() == 0
    with cache.policy(mode="use", scopes="llm_ro", phase="REPORT"):
        assert report(1) == "run5" and report.refresh(1) == "run6" and report(1) == "run6"
