"""awrap(lock=True) and async @cached(lock=True) waiting on another process's lease: the wait
sleeps on the event loop, so the loop's default executor stays free for everything else (a parked
thread per waiter would starve getaddrinfo and run_in_executor). Real SQLite store; the other
process's lease is taken through a second Cache on the same file."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from actioncache import Cache, cached


def test_lock_waiters_leave_the_default_executor_free(tmp_path):
    url = f"sqlite:///{tmp_path}/lock.db"
    cache, holder = Cache(url, cleanup_probability=0), Cache(url, cleanup_probability=0)
    key = cache.key_for("k", {})
    token = holder.store.acquire_lease("lease:" + key, 120)  # another process computes k
    assert token is not None
    ran: list[str] = []

    async def fast():
        ran.append("waiter")
        return "mine"

    @cached(cache=cache, lock=True, lock_timeout_s=120, name="deco")
    async def deco():
        ran.append("deco")
        return "mine"

    deco_token = holder.store.acquire_lease("lease:" + deco.cache_key(), 120)

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=2))
        waiters = [asyncio.ensure_future(cache.awrap("k", fast, {}, lock=True, lock_timeout_s=120)) for _ in range(6)]
        waiters += [asyncio.ensure_future(deco()) for _ in range(2)]
        await asyncio.sleep(0.2)
        try:
            # Eight waiters, two executor threads: the executor still answers while they wait.
            probe = await asyncio.wait_for(loop.run_in_executor(None, lambda: "executor free"), timeout=30)
            await asyncio.wait_for(loop.getaddrinfo("localhost", 80), timeout=30)
        finally:
            holder.wrap("k", lambda: "held", {})  # the holder finishes, stores and lets go
            holder.store.release_lease("lease:" + key, token)
            holder.store.release_lease("lease:" + deco.cache_key(), deco_token)
        return probe, await asyncio.gather(*waiters)

    probe, answers = asyncio.run(main())
    assert probe == "executor free"
    assert [a["result"] for a in answers[:6]] == ["held"] * 6 and all(a["_cache_hit"] for a in answers[:6])
    assert ran.count("waiter") == 0  # every waiter got the holder's result
    assert answers[6:] == ["mine", "mine"] and ran.count("deco") == 1  # the lease let go: one run


def test_a_cancelled_lock_waiter_leaves_no_lease_behind(tmp_path):
    url = f"sqlite:///{tmp_path}/cancel.db"
    cache, holder = Cache(url), Cache(url)
    key = cache.key_for("c", {})
    token = holder.store.acquire_lease("lease:" + key, 120)

    async def never():
        return "never"

    async def main():
        waiter = asyncio.ensure_future(cache.awrap("c", never, {}, lock=True, lock_timeout_s=120))
        await asyncio.sleep(0.3)
        holder.store.release_lease("lease:" + key, token)  # free now: the waiter's next try takes it
        waiter.cancel()
        try:
            await waiter
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    again = holder.store.acquire_lease("lease:" + key, 5)
    assert again is not None  # whatever the cancelled waiter took, it let go
    assert cache.store.count() == 0
