"""The shared rate limiter (stores/ratelimit.py) on real stores: at most N grants in any window,
across threads and processes, natively on Redis-like stores and through the lease-guarded log
elsewhere."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from actioncache.stores.ratelimit import take

from .backends import BACKENDS, SHAREABLE

LIMITED = ["memory", "sqlite", "redis", "redis-cluster", "valkey", "postgres"]


@pytest.fixture(params=LIMITED)
def limited_store(request, tmp_path):
    store = BACKENDS[request.param](tmp_path)
    yield store
    if hasattr(store, "drop"):
        store.drop()
    store.close()


def test_at_most_n_grants_in_a_window_then_a_retry_time(limited_store):
    grants = [take(limited_store, "api", 3, 0.5) for _ in range(3)]
    assert grants == [0.0, 0.0, 0.0]
    retry_in = take(limited_store, "api", 3, 0.5)
    assert 0.0 < retry_in <= 0.5
    assert take(limited_store, "other", 3, 0.5) == 0.0, "limiters are separate by name"
    time.sleep(retry_in + 0.05)
    assert take(limited_store, "api", 3, 0.5) == 0.0, "the oldest grant left the window"


def test_threads_never_get_more_than_the_limit(limited_store):
    taken: list[float] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            if take(limited_store, "shared", 7, 30.0) == 0.0:
                with lock:
                    taken.append(time.monotonic())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(taken) == 7


WORKER = """
import sys
from actioncache import open_store
from actioncache.stores.ratelimit import take
store = open_store(sys.argv[1])
print(sum(take(store, "procs", 5, 30.0) == 0.0 for _ in range(8)))
"""


@pytest.mark.parametrize("backend", sorted(set(LIMITED) & SHAREABLE))
def test_processes_share_one_limit(backend, tmp_path, src_env):
    store = BACKENDS[backend](tmp_path)
    try:
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, store.url], env=src_env, stdout=subprocess.PIPE,
                                  text=True) for _ in range(3)]
        total = sum(int(p.communicate(timeout=60)[0]) for p in procs)
        assert total == 5
    finally:
        if hasattr(store, "drop"):
            store.drop()
        store.close()
