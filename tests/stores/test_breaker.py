"""Timeouts and the circuit breaker: a store that hangs never stalls the caller for long, is
skipped while it keeps failing, and is used again once it answers. Against real servers behind a
fault injector (tests/stores/fault_proxy.py: a TCP proxy that can stop answering). No timing
assertions here: bench/bench_hung_store.py measures what a call costs."""

from __future__ import annotations

import time
import warnings

import pytest
import services

from actioncache import Cache, open_store
from actioncache.stores.breaker import BreakerWarning, CircuitBreaker, StoreSkippedError

from .backends import unique
from .fault_proxy import FaultProxy


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_skips_probes_and_closes():
    clock = Clock()
    breaker = CircuitBreaker("store X", failures=3, timeouts=2, cooldown_s=1.0, max_cooldown_s=4.0, clock=clock)
    for _ in range(2):
        breaker.before()
        breaker.failure(ConnectionError("refused"), "refused")
    assert breaker.state()["state"] == "closed"
    with pytest.warns(BreakerWarning, match="store X failed 3 times"):
        breaker.before()
        breaker.failure(ConnectionError("refused"), "refused")
    assert breaker.state()["state"] == "open"
    with pytest.raises(StoreSkippedError, match="circuit breaker is open"):
        breaker.before()
    clock.now += 1.0
    breaker.before()  # the probe goes through ...
    with pytest.raises(StoreSkippedError):
        breaker.before()  # ... alone
    breaker.failure(TimeoutError("still hung"), "still hung")
    assert breaker.state()["state"] == "open" and breaker.state()["retry_in_s"] == 2.0  # twice the cool-down
    clock.now += 2.0
    breaker.before()
    breaker.success()
    assert breaker.state() == {"state": "closed", "consecutive_failures": 0, "opened": 1}


def test_two_timeouts_open_it_and_a_success_resets_the_streak():
    breaker = CircuitBreaker("store Y", clock=Clock())
    breaker.failure(TimeoutError(), "t")
    breaker.success()
    breaker.failure(TimeoutError(), "t")
    assert breaker.state()["state"] == "closed"
    with pytest.warns(BreakerWarning):
        breaker.failure(TimeoutError(), "t")
    assert breaker.state()["state"] == "open"


def _wait_until(predicate, patience_s: float = 30.0) -> bool:
    """The goal's patience (caching resumes within 30 s), not a measurement."""
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _hang_and_recover(url: str) -> None:
    cache = Cache(url, cleanup_probability=0)
    answers = {n: {"n": n} for n in range(20)}
    try:
        for n in range(5):
            assert cache.wrap("act", lambda n: answers[n], {"n": n})["_cache_hit"] is False
        yield_point = yield  # the caller makes the server hang here
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = [cache.wrap("act", lambda n: answers[n], {"n": n}) for n in range(20)]
        assert [r["result"] for r in results] == [answers[n] for n in range(20)], "every call still answered"
        assert all(r["success"] for r in results) and not any(r["_cache_hit"] for r in results)
        assert any(issubclass(w.category, BreakerWarning) for w in caught), [str(w.message) for w in caught]
        skipped = [r for r in results if "circuit breaker is open" in r.get("_cache_error", "")]
        assert len(skipped) >= 16, "after at most 3 failures (two calls) the store is skipped"
        stats = cache.stats()
        assert stats["store_health"]["breaker"]["state"] in ("open", "half-open"), stats
        yield_point = yield  # the caller makes the server answer again here
        assert _wait_until(lambda: cache.wrap("act", lambda n: answers[n], {"n": 0}).get("_cache_hit") is True
                           or cache.store.health()["breaker"]["state"] == "closed"), "caching resumed"
        fresh = cache.wrap("act", lambda n: answers[n], {"n": 19})
        assert "_cache_error" not in fresh
        assert cache.wrap("act", lambda n: answers[n], {"n": 19})["_cache_hit"] is True
        assert cache.stats()["store_health"]["breaker"]["state"] == "closed"
        del yield_point
    finally:
        cache.close()


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_a_hung_server_is_skipped_and_caching_resumes_when_it_answers(backend):
    if backend == "redis":
        services.require_redis()
        proxy = FaultProxy((services.REDIS_HOST, services.REDIS_PORT))
        url = f"redis://127.0.0.1:{proxy.port}/15?prefix={unique('hung_')}"
    else:
        services.require_postgres()
        pytest.importorskip("psycopg") if not services.in_ci() else None
        proxy = FaultProxy((services.POSTGRES_HOST, services.POSTGRES_PORT))
        database = services.POSTGRES_URL.rsplit("/", 1)[1]
        url = f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}?table={unique('hung_')}"
    steps = _hang_and_recover(url)
    try:
        next(steps)
        proxy.hang()
        next(steps)
        proxy.answer()
        with pytest.raises(StopIteration):
            next(steps)
    finally:
        proxy.close()
        cleanup = open_store(url.replace(f"127.0.0.1:{proxy.port}", f"{services.REDIS_HOST}:{services.REDIS_PORT}"
                                         if backend == "redis" else f"{services.POSTGRES_HOST}:{services.POSTGRES_PORT}"))
        cleanup.drop()
        cleanup.close()


def test_a_server_that_never_answered_costs_one_timeout_per_cool_down():
    proxy = FaultProxy(None)  # accepts, never answers: no server behind it at all
    try:
        cache = Cache(f"redis://127.0.0.1:{proxy.port}/0", cleanup_probability=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = [cache.wrap("act", lambda: "fresh") for _ in range(10)]
        assert [r["result"] for r in results] == ["fresh"] * 10
        health = cache.store.health()["breaker"]
        assert health["state"] == "open" and health["consecutive_failures"] <= 3
        assert "Timeout" in health["last_error"] or "timed out" in health["last_error"].lower()
        cache.close()
    finally:
        proxy.close()


def _postgres_through(proxy: FaultProxy, options: str) -> str:
    database = services.POSTGRES_URL.rsplit("/", 1)[1]
    return f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}?table={unique('never_')}&{options}"


def _returns_within_patience(work, patience_s: float = 60.0):
    """``work()``'s result, or a failure if it is still running after ``patience_s`` (liveness,
    not a measurement: the store's own connect deadline is a fraction of a second)."""
    import threading

    out: list = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    thread.join(patience_s)
    assert not thread.is_alive(), f"still waiting after {patience_s:g} s"
    return out[0]


def test_a_postgres_server_that_never_answers_is_skipped_and_caching_resumes():
    """A PostgreSQL that accepts and never answers, from the first connect on: the caller waits for
    the store's own connect deadline, not libpq's connect_timeout (600 s here: a user's choice the
    store must not make the caller pay), each call returns the function's value uncached, the
    breaker opens, and caching resumes once the server answers."""
    services.require_postgres()
    pytest.importorskip("psycopg") if not services.in_ci() else None
    proxy = FaultProxy((services.POSTGRES_HOST, services.POSTGRES_PORT))
    proxy.hang()
    url = _postgres_through(proxy, "connect_timeout=600")
    cache = Cache(url, cleanup_probability=0)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = _returns_within_patience(lambda: [cache.wrap("act", lambda n: {"n": n}, {"n": n})
                                                        for n in range(10)])
        assert [r["result"] for r in results] == [{"n": n} for n in range(10)]
        assert not any(r["_cache_hit"] for r in results) and all("_cache_error" in r for r in results)
        assert any(issubclass(w.category, BreakerWarning) for w in caught)
        health = cache.store.health()["breaker"]
        assert health["state"] in ("open", "half-open") and health["consecutive_failures"] <= 3, health
        assert "connect_timeout_s" in health["last_error"], health
        proxy.answer()
        assert _wait_until(lambda: "_cache_error" not in _returns_within_patience(
            lambda: cache.wrap("act", lambda n: {"n": n}, {"n": 100})))
        assert cache.wrap("act", lambda n: {"n": n}, {"n": 100})["_cache_hit"] is True
        assert cache.store.health()["breaker"]["state"] == "closed"
    finally:
        cache.close()
        proxy.close()
        direct = url.replace(f"127.0.0.1:{proxy.port}", f"{services.POSTGRES_HOST}:{services.POSTGRES_PORT}")
        cleanup = open_store(direct.replace("&connect_timeout=600", ""))
        cleanup.drop()
        cleanup.close()


def _connections_named(name: str) -> int:
    import psycopg

    with psycopg.connect(services.POSTGRES_URL, autocommit=True) as admin:
        row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("close_at_once", [False, True])
def test_a_connect_that_ends_after_its_caller_gave_up_is_kept_or_closed_never_leaked(close_at_once):
    """A deadline no connect can meet (connect_timeout_s=1e-9): the call fails (a timeout), the
    connect goes on; once it ends, the next call takes its connection rather than open another,
    and closing the store closes it, also when the store is closed while the connect still runs."""
    services.require_postgres()
    pytest.importorskip("psycopg") if not services.in_ci() else None
    name = unique("late_")
    url = f"{services.POSTGRES_URL}?table={name}&application_name={name}&connect_timeout_s=1e-9&breaker=off"
    store = open_store(url)
    try:
        from actioncache.errors import StoreError

        with pytest.raises(StoreError, match="connect_timeout_s"):
            store.get("k")
        if close_at_once:
            store.close()
        else:
            assert _wait_until(lambda: _connections_named(name) == 1), "the connect went on and reached the server"

            def served() -> bool:
                # the server lists the connection before the client's connect has returned (on a
                # loaded machine, long before): a call in between times out again, and must claim
                # the same connect, not start another
                try:
                    return store.get("k") is None
                except StoreError as exc:
                    assert "connect_timeout_s" in str(exc)
                    return False

            assert _wait_until(served), "a later call took the connection that ended late"
            assert _connections_named(name) == 1, "and no call opened another"
            store.close()
        assert _wait_until(lambda: _connections_named(name) == 0), "no connection left open"
    finally:
        store.close()
        cleanup = open_store(f"{services.POSTGRES_URL}?table={name}")
        cleanup.drop()
        cleanup.close()


def test_breaker_options_in_the_url():
    store = open_store("redis://127.0.0.1:1/0?breaker_failures=5&breaker_cooldown_s=2")
    assert store.breaker.failures == 5 and store.breaker.cooldown_s == 2.0
    assert open_store("redis://127.0.0.1:1/0?breaker=off").breaker is None
    from actioncache.errors import StoreError

    with pytest.raises(StoreError, match="breaker_failures"):
        open_store("redis://127.0.0.1:1/0?breaker_failurs=5")
    with pytest.raises(StoreError, match="positive"):
        open_store("redis://127.0.0.1:1/0?breaker_cooldown_s=-1")
