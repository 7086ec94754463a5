"""The async faces never make a networked store's calls on the event loop (issue 32, F1).

A redis-server of the test's own is stopped (SIGSTOP: a hung server, the connection stays open)
while ``awrap`` or an async ``@cached`` function waits on it. Another task of the loop resumes the
server (SIGCONT). When the store's call runs in a worker thread, that task runs while the call
waits, the call gets its answer, and the entry is stored; when the call blocks the loop (the old
code), nothing else runs until the call's own timeout, and the call fails. No durations are
asserted: the timeouts are long (2 s) so the resumed server answers well inside them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import warnings

import pytest

from actioncache import Cache

from .backends import unique
from .private_servers import private_redis  # noqa: F401 - fixture

pytest.importorskip("redis")


def _cache(server) -> Cache:
    return Cache(f"{server.url}?prefix={unique('aio')}&read_timeout_s=2&write_timeout_s=2")


async def _resume_when(server, ready) -> None:
    """Resume the server as soon as ``ready()`` (from another task of the loop)."""
    while not ready():
        await asyncio.sleep(0)
    os.kill(server.proc.pid, signal.SIGCONT)


def _stop(server) -> None:
    os.kill(server.proc.pid, signal.SIGSTOP)


def _awrap_resuming(server, cache: Cache, action, x: int, ready, *, stop_first: bool) -> dict:
    """``awrap("double", action, {"x": x})`` while another task resumes the server once ``ready()``."""
    async def main():
        if stop_first:
            cache.wrap("warm", lambda: 1)  # connections made while the server answers
            _stop(server)
        try:
            call = asyncio.ensure_future(cache.awrap("double", action, {"x": x}))
            await asyncio.sleep(0)  # awrap starts (its lookup may meet the hung server)
            await _resume_when(server, ready)
        except BaseException:
            os.kill(server.proc.pid, signal.SIGCONT)
            raise
        return await call

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return asyncio.run(main())


def _assert_stored(cache: Cache, response: dict, x: int) -> None:
    try:
        assert response["result"] == 2 * x
        assert "_cache_error" not in response, response  # the store's calls got their answers: the loop was free
        assert cache.wrap("double", lambda x: 0, {"x": x})["_cache_hit"]
    finally:
        cache.store.drop()
        cache.close()


def test_awrap_read_on_a_hung_server_leaves_the_loop_free(private_redis):
    cache = _cache(private_redis)

    async def action(x):
        return x * 2

    response = _awrap_resuming(private_redis, cache, action, 21, lambda: True, stop_first=True)
    _assert_stored(cache, response, 21)


def test_awrap_write_on_a_server_hung_mid_action_leaves_the_loop_free(private_redis):
    cache = _cache(private_redis)
    stopped = []

    async def action(x):
        _stop(private_redis)  # the read is done; the write will meet a hung server
        stopped.append(True)
        return x * 2

    response = _awrap_resuming(private_redis, cache, action, 5, lambda: bool(stopped), stop_first=False)
    _assert_stored(cache, response, 5)


def test_async_cached_on_a_server_hung_mid_call_leaves_the_loop_free(private_redis):
    cache = _cache(private_redis)
    stopped = []

    @cache.cached(ttl=600)
    async def square(n):
        _stop(private_redis)
        stopped.append(True)
        return n * n

    async def main():
        call = asyncio.ensure_future(square(7))
        try:
            await _resume_when(private_redis, lambda: bool(stopped))
        except BaseException:
            os.kill(private_redis.proc.pid, signal.SIGCONT)
            raise
        first = await call
        stopped.clear()
        second = await square(7)  # a hit: the function (which stops the server) does not run
        return first, second

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert asyncio.run(main()) == (49, 49)
    try:
        assert not stopped
        assert cache.stats()["session"].get("errors", 0) == 0
    finally:
        cache.store.drop()
        cache.close()


def test_a_stale_refresh_from_async_code_stores_off_the_loop(private_redis):
    """Stale-while-revalidate: the refresh runs as a task of the loop; its lease and its write go
    through worker threads, so a server that hangs while it stores does not freeze the loop."""
    cache = _cache(private_redis)
    stopped = []

    async def old(x):
        return "old"

    async def new(x):
        _stop(private_redis)  # the refresh's write will meet a hung server
        stopped.append(True)
        return "new"

    async def main():
        await cache.awrap("r", old, {"x": 1}, ttl=1, stale_ttl_seconds=600)
        await asyncio.sleep(1.5)  # past its TTL, inside its stale window
        served = await cache.awrap("r", new, {"x": 1}, ttl=1, stale_ttl_seconds=600)
        try:
            await _resume_when(private_redis, lambda: bool(stopped))
        except BaseException:
            os.kill(private_redis.proc.pid, signal.SIGCONT)
            raise
        for _ in range(200):  # the refresh finishes: its value lands (bounded wait, no duration asserted)
            if cache.get(cache.key_for("r", {"x": 1}))["value"] == "new":
                break
            await asyncio.sleep(0.05)
        return served

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        served = asyncio.run(main())
    try:
        assert served["result"] == "old" and served.get("_cache_stale")
        assert cache.get(cache.key_for("r", {"x": 1}))["value"] == "new"
    finally:
        cache.store.drop()
        cache.close()
