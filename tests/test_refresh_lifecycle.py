"""However a background refresh or a locked run ends (done, cancelled with its event loop, closed
unfinished, a BaseException, interpreter exit), its lease is released and the key is free to be
refreshed again, in this process and in others. Real SQLite store (it has leases and renewal)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest

from actioncache import Cache, cached


def _eventually(check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def _lease_is_free(cache: Cache, key: str) -> bool:
    token = cache.store.acquire_lease("lease:" + key, 5)
    if token is None:
        return False
    cache.store.release_lease("lease:" + key, token)
    return True


@pytest.fixture
def url(tmp_path):
    return f"sqlite:///{tmp_path}/refresh.db"


SWR = {"ttl_seconds": 1, "stale_ttl_seconds": 600, "lock_timeout_s": 60}


def _seed_and_expire(cache: Cache, action: str) -> str:
    key = cache.wrap(action, lambda: "v1", {}, **SWR)["_cache_key"]
    time.sleep(1.1)
    return key


def test_an_async_refresh_cancelled_with_its_loop_lets_the_key_go(url):
    """asyncio.run per request: the loop ends and cancels the refresh task. Its heartbeat stops, its
    lease is released (lock_timeout_s is 60 s: a lapse cannot explain it) and this process and
    another refresh the key at once."""
    cache, other = Cache(url), Cache(url)
    key = _seed_and_expire(cache, "ar")

    async def slow():
        await asyncio.sleep(30)
        return "never"

    stale = asyncio.run(cache.awrap("ar", slow, {}, **SWR))
    assert stale["_cache_stale"] is True and stale["result"] == "v1"
    assert _lease_is_free(other, key)
    again = cache.wrap("ar", lambda: "v2", {}, **SWR)  # the in-process mark is gone too
    assert again["_cache_stale"] is True
    assert _eventually(lambda: cache.get(key)["value"] == "v2")


def test_an_async_refresh_whose_loop_is_closed_unfinished_lets_the_key_go(url):
    """A loop closed without cancelling its tasks: the refresh can never finish. Its heartbeat
    notices within a third of the lease and releases it instead of renewing it forever."""
    cache, other = Cache(url), Cache(url)
    key = cache.wrap("closed", lambda: "v1", {}, ttl_seconds=1, stale_ttl_seconds=600)["_cache_key"]
    time.sleep(1.1)

    async def slow():
        await asyncio.sleep(30)
        return "never"

    loop = asyncio.new_event_loop()
    opts = {"ttl_seconds": 1, "stale_ttl_seconds": 600, "lock_timeout_s": 0.6}
    assert loop.run_until_complete(cache.awrap("closed", slow, {}, **opts))["_cache_stale"] is True
    loop.close()
    assert _eventually(lambda: _lease_is_free(other, key))
    # Renewed forever, the lease would never be free for longer than a beat: it stays free.
    time.sleep(0.5)
    assert _lease_is_free(other, key)
    cache.wrap("closed", lambda: "v2", {}, **opts)
    assert _eventually(lambda: cache.get(key)["value"] == "v2")


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # re-raised in its thread
@pytest.mark.parametrize("exc", [SystemExit, KeyboardInterrupt])
def test_a_background_refresh_raising_a_base_exception_lets_the_key_go(url, exc):
    cache, other = Cache(url), Cache(url)
    key = _seed_and_expire(cache, "s")
    raised = []

    def boom():
        raised.append(1)
        raise exc(2)

    assert cache.wrap("s", boom, {}, **SWR)["_cache_stale"] is True
    assert _eventually(lambda: raised and _lease_is_free(other, key))
    assert cache.get(key)["value"] == "v1"  # nothing stored
    cache.wrap("s", lambda: "v2", {}, **SWR)
    assert _eventually(lambda: cache.get(key)["value"] == "v2")


def test_a_caller_who_finds_the_lease_free_may_refresh_at_once(tmp_path):
    """The moment a finished refresh's lease is free, the key is free in this process too: a caller
    then starts the next refresh. A store whose release returns slowly (a network round trip after
    the server let go) holds the ending refresh open in that window."""
    from actioncache.stores.sqlite import SQLiteStore

    released = threading.Event()

    class SlowRelease(SQLiteStore):
        def release_lease(self, key, token):
            super().release_lease(key, token)
            released.set()
            time.sleep(1.0)

    cache = Cache(store=SlowRelease(str(tmp_path / "slow.db")))
    key = _seed_and_expire(cache, "slow")

    def fails():
        raise RuntimeError("upstream down")  # nothing stored: the entry stays stale

    assert cache.wrap("slow", fails, {}, **SWR)["_cache_stale"] is True
    assert released.wait(30)
    assert cache.get(key)["value"] == "v1"
    assert cache.wrap("slow", lambda: "v3", {}, **SWR)["_cache_stale"] is True
    assert _eventually(lambda: cache.get(key)["value"] == "v3")


def test_a_caller_overtaken_by_another_refresh_finds_the_work_done_under_the_lease(tmp_path):
    """Between a caller's stale read and its lease, another caller refreshed the key and let the
    lease go: the first caller takes the lease, finds the entry fresh again and runs nothing (four
    processes refreshing one stale key ran the function twice on a loaded machine)."""
    from actioncache.stores.sqlite import SQLiteStore

    path = tmp_path / "overtaken.db"
    other = Cache(f"sqlite:///{path}")
    overtaken: list[int] = []

    class Overtaken(SQLiteStore):
        def acquire_lease(self, name, ttl_s):
            if not overtaken:  # the other caller's whole refresh happens right here
                overtaken.append(1)
                assert other.wrap("k", lambda: "v2", {}, **SWR)["_cache_stale"] is True
                assert _eventually(lambda: other.get(key)["value"] == "v2" and _lease_is_free(other, key))
            return super().acquire_lease(name, ttl_s)

    cache = Cache(store=Overtaken(str(path)))
    key = _seed_and_expire(cache, "k")
    ran: list[int] = []

    def again():
        ran.append(1)
        return "v3"

    assert cache.wrap("k", again, {}, **SWR)["_cache_stale"] is True
    assert overtaken
    time.sleep(1.0)  # a refresh started here would have run by now
    assert ran == [] and cache.get(key)["value"] == "v2"
    assert _lease_is_free(other, key)


@pytest.mark.parametrize("exc", [SystemExit, KeyboardInterrupt])
def test_a_locked_run_raising_a_base_exception_releases_its_lease(url, exc):
    cache, other = Cache(url), Cache(url)

    def boom():
        raise exc(3)

    @cached(cache=cache, lock=True)
    def deco():
        raise exc(4)

    with pytest.raises(exc):
        cache.wrap("b", boom, {}, lock=True)
    with pytest.raises(exc):
        deco()
    assert _lease_is_free(other, cache.key_for("b", {}))
    assert _lease_is_free(other, deco.cache_key())
    assert cache.store.count() == 0


def test_a_short_lived_process_finishes_its_refresh_at_exit(tmp_path, src_env):
    """A CLI-style run that serves a stale value exits at once; the refresh it started is given the
    chance to finish at exit, so the next run finds the new value instead of a held lease."""
    marker = tmp_path / "runs.txt"
    script = f"""
import sys, time
from actioncache import Cache
c = Cache("sqlite:///{tmp_path}/cli.db", cleanup_probability=0)
def fetch():
    time.sleep(0.5)
    with open({str(marker)!r}, "a") as f:
        f.write("run\\n")
    return sys.argv[1]
r = c.wrap("rates", fetch, {{}}, ttl_seconds=float(sys.argv[2]), stale_ttl_seconds=3600)
print(r["result"], bool(r.get("_cache_stale")))
"""

    def run(tag: str, ttl_s: float) -> str:
        done = subprocess.run([sys.executable, "-c", script, tag, str(ttl_s)], env=src_env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("first", 1) == "first False"
    time.sleep(1.1)
    # stale at once; the refresh finishes at exit, and what it stores stays fresh long enough to be
    # read below however slowly a loaded machine runs the rest of this test
    assert run("second", 600) == "first True"
    assert marker.read_text().count("run") == 2
    cache = Cache(f"sqlite:///{tmp_path}/cli.db")
    assert cache.get(cache.key_for("rates", {}))["value"] == "second"
    assert _lease_is_free(cache, cache.key_for("rates", {}))
