"""Stores shared by processes: separate Cache objects in separate processes see each other's
entries, ``lock=True`` computes a cold key once across processes, and a server that goes down
mid-test never fails the wrapped action and caching resumes when it is back.

Real servers throughout: the shared Redis/PostgreSQL for visibility and single flight, private
ones (tests/stores/private_servers.py) for the outages, since stopping the shared ones would
break everyone else's tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actioncache import Cache, open_store
from actioncache.errors import StoreError
from actioncache.stores.base import Entry

from .backends import BACKENDS, SHAREABLE
from .private_servers import free_port, private_postgres, private_redis  # noqa: F401 - fixtures

CROSS_PROCESS = sorted({"redis", "postgres"} & SHAREABLE)
SINGLE_FLIGHT = sorted({"redis", "postgres", "sqlite"} & SHAREABLE)


def shared_url(backend: str, tmp_path: Path) -> str:
    """The URL of a fresh, isolated store that another process can open again."""
    store = BACKENDS[backend](tmp_path)
    url = store.url
    store.close()
    return url


WORKER = """
import json, os, sys
from actioncache import Cache
cache = Cache(sys.argv[1], cleanup_probability=0)
r = cache.wrap("shared.work", lambda n: {"n": n, "pid": os.getpid()}, {"n": int(sys.argv[2])})
cache.close()
print(json.dumps(r))
"""


def run_worker(src_env: dict[str, str], url: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, url, str(n)], env=src_env, capture_output=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("backend", CROSS_PROCESS)
def test_two_processes_see_each_others_entries(backend, tmp_path, src_env):
    url = shared_url(backend, tmp_path)
    first = run_worker(src_env, url, 1)
    second = run_worker(src_env, url, 1)
    assert first["_cache_hit"] is False and "_cache_error" not in first
    assert second["_cache_hit"] is True
    assert second["result"] == first["result"] and first["result"]["pid"] != os.getpid()

    # This process, with its own Cache object, sees the child's entry and the child sees ours.
    here = Cache(url, cleanup_probability=0)
    try:
        assert here.wrap("shared.work", lambda n: {"n": n, "pid": os.getpid()}, {"n": 1})["result"] == first["result"]
        mine = here.wrap("shared.work", lambda n: {"n": n, "pid": os.getpid()}, {"n": 2})
        assert mine["_cache_hit"] is False
        assert run_worker(src_env, url, 2)["result"] == {"n": 2, "pid": os.getpid()}

        # An invalidation in one process is seen by the next process.
        assert here.invalidate_action("shared.work")["deleted_count"] == 2
        again = run_worker(src_env, url, 1)
        assert again["_cache_hit"] is False and again["result"]["pid"] not in (first["result"]["pid"], os.getpid())

        stats = here.stats()  # counters are shared by every process using the store
        assert stats["hits"] >= 3 and stats["misses"] >= 3 and stats["errors"] == 0
    finally:
        here.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("backend", CROSS_PROCESS)
def test_store_is_usable_after_fork(backend, tmp_path):
    """A forked child never reuses the parent's connection, and both keep working."""
    store = BACKENDS[backend](tmp_path)
    store.put(Entry("before", b"1", {}, 1.0, None))
    pid = os.fork()
    if pid == 0:
        try:
            store.put(Entry("child", b"2", {}, 1.0, None))
            os._exit(0 if store.get("before").value == b"1" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert store.get("child").value == b"2" and store.get("before").value == b"1"
    store.close()


FLIGHT = """
import json, os, sys, time
from actioncache import Cache
url, go, log = sys.argv[1:4]
cache = Cache(url, cleanup_probability=0)
def compute(x):
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(0.3)  # keeps the key cold while the other processes ask for it
    return {"x": x, "by": os.getpid()}
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
r = cache.wrap("cold", compute, {"x": 7}, lock=True, lock_timeout_s=60)
cache.close()
print(json.dumps(r), flush=True)
"""


@pytest.mark.parametrize("backend", SINGLE_FLIGHT)
def test_lock_true_computes_a_cold_key_once_across_processes(backend, tmp_path, src_env):
    url = shared_url(backend, tmp_path)
    go, log = tmp_path / "go", tmp_path / "computed.log"
    procs = [subprocess.Popen([sys.executable, "-c", FLIGHT, url, str(go), str(log)], env=src_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        for p in procs:  # every process is up and waiting before any asks
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        go.touch()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            results.append(json.loads(out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    computed_by = log.read_text().split()
    assert len(computed_by) == 1, f"computed {len(computed_by)} times: {computed_by}"
    assert all(r["success"] and r["result"] == {"x": 7, "by": int(computed_by[0])} for r in results)
    assert sorted(r["_cache_hit"] for r in results) == [False, True, True, True]


# --- outages ------------------------------------------------------------------------------

def check_outage_and_recovery(cache: Cache, stop, start, server_word: str) -> None:
    calls: list[int] = []

    def work(x: int) -> dict:
        calls.append(x)
        return {"x": x, "call": len(calls)}

    assert cache.wrap("o", work, {"x": 1})["_cache_hit"] is False
    assert cache.wrap("o", work, {"x": 1})["_cache_hit"] is True

    stop()
    down = cache.wrap("o", work, {"x": 1})
    assert down["success"] is True and down["_cache_hit"] is False
    assert down["result"] == {"x": 1, "call": 2}, "the action ran fresh"
    assert server_word in down["_cache_error"] and "start" in down["_cache_error"], down["_cache_error"]
    locked = cache.wrap("o", work, {"x": 3}, lock=True, lock_timeout_s=5)
    assert locked["success"] is True and locked["result"]["x"] == 3, "no lease is no reason to fail"
    stats = cache.stats()
    assert "error" in stats and stats["session"]["errors"] >= 2

    start()
    # The store's circuit breaker opened while it was down: calls skip it until its probe (at most
    # the cool-down after the outage's last failure) finds it answering again.
    deadline = time.monotonic() + 30
    while True:
        fresh = cache.wrap("o", work, {"x": 2})
        if "_cache_error" not in fresh or time.monotonic() > deadline:
            break
        assert "circuit breaker is open" in fresh["_cache_error"], fresh
        time.sleep(0.1)
    assert fresh["success"] is True and "_cache_error" not in fresh, fresh
    assert cache.wrap("o", work, {"x": 2})["_cache_hit"] is True, "caching resumed"
    stats = cache.stats()
    assert "error" not in stats
    assert stats["errors"] >= 2, "errors counted while down reach the store once it is back"


def test_redis_outage_runs_fresh_and_caching_resumes(private_redis):
    cache = Cache(private_redis.url + "?prefix=outage", cleanup_probability=0, stats_flush_s=0)
    try:
        check_outage_and_recovery(cache, private_redis.stop, private_redis.start, "Redis")
    finally:
        cache.close()


def test_postgres_outage_runs_fresh_and_caching_resumes(private_postgres):
    cache = Cache(private_postgres.url + "?table=outage", cleanup_probability=0, stats_flush_s=0)
    try:
        check_outage_and_recovery(cache, private_postgres.stop, private_postgres.start, "PostgreSQL")
        # PostgreSQL is durable: what was cached before the outage is still there.
        assert cache.wrap("o", lambda x: {"x": x}, {"x": 1})["_cache_hit"] is True
    finally:
        cache.close()


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
def test_cache_over_an_unreachable_server_constructs_and_runs(scheme):
    port = free_port()  # nothing listens here
    url = f"redis://127.0.0.1:{port}/0" if scheme == "redis" else f"postgresql://postgres@127.0.0.1:{port}/x"
    cache = Cache(url, cleanup_probability=0)
    r = cache.wrap("a", lambda: {"ok": True}, {})
    assert r["success"] and r["result"] == {"ok": True} and str(port) in r["_cache_error"]
    with pytest.raises(StoreError, match=f"127.0.0.1:{port}.*(start|fix)"):
        open_store(url).get("k")
    cache.close()
