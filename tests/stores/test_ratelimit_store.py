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


class PausesInTheCheck:
    """The real store; the first read of the limiter's log stops until ``resume`` is set, as a
    check paused (GC, SIGSTOP) past its lease would. A wrapper: every call reaches the store."""

    def __init__(self, store, resume) -> None:
        self.store, self.resume, self.paused = store, resume, threading.Event()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def get(self, key):
        entry = self.store.get(key)
        if key.startswith("ratelimit:") and not self.paused.is_set():
            self.paused.set()
            self.resume.wait(30)
        return entry


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_check_paused_past_its_lease_grants_nothing(backend, tmp_path):
    """The log is rewritten under the lease with the store's fenced write: a check that read the
    log, then was paused past the lease while another check took the only grant, must not write
    its stale log (which drops that grant) nor grant a second time."""
    store = BACKENDS[backend](tmp_path)
    resume = threading.Event()
    paused = PausesInTheCheck(store, resume)
    outcome = []
    slow = threading.Thread(target=lambda: outcome.append(take(paused, "fenced", 1, 600)))
    slow.start()
    assert paused.paused.wait(30)
    while take(store, "fenced", 1, 600) != 0.0:  # waits for the paused check's lease to lapse
        pass
    resume.set()
    slow.join(30)
    assert outcome and outcome[0] > 0.0, "the paused check was granted past the limit"
    assert take(store, "fenced", 1, 600) > 0.0, "the grant taken meanwhile is still in the log"
    store.close()
