"""Across processes: a stale entry is refreshed once, a computation longer than the lease runs once
(the holder renews its lease), and a SIGKILLed holder frees the key within lock_timeout_s.
Real stores shared by real processes (SQLite file, the shared Redis and PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actioncache import Cache
from actioncache.stores.base import open_store

from .backends import BACKENDS, SHAREABLE

SHARED = sorted({"redis", "postgres", "sqlite"} & SHAREABLE)


def _url(backend: str, tmp_path: Path) -> str:
    store = BACKENDS[backend](tmp_path)
    url = store.url
    store.close()
    return url


def _runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


SWR_WORKER = """
import sys, time
from actioncache import Cache
url, log = sys.argv[1], sys.argv[2]
cache = Cache(url, cleanup_probability=0.0)
def compute():
    with open(log, "a") as f:
        f.write("run\\n")
    time.sleep(0.5)
    return "new"
# The refreshed value stays fresh for a minute: a worker that starts late on a loaded machine
# must find it fresh, not stale again (a 1 s TTL would send it to refresh a second time).
r = cache.wrap("swr", compute, ttl_seconds=60, stale_ttl_seconds=120)
print(r["result"], r.get("_cache_stale", False))
time.sleep(2.5)  # let a background refresh of this process finish before it exits
"""


@pytest.mark.parametrize("backend", SHARED)
def test_a_stale_entry_is_refreshed_once_across_four_processes(backend, tmp_path, src_env):
    url = _url(backend, tmp_path)
    cache = Cache(url, cleanup_probability=0.0)
    cache.wrap("swr", lambda: "old", ttl_seconds=1, stale_ttl_seconds=120)
    time.sleep(1.3)  # now stale (real time: the store's own clock judges Redis and PostgreSQL)
    log = tmp_path / "runs.log"
    procs = [subprocess.Popen([sys.executable, "-c", SWR_WORKER, url, str(log)], env=src_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    answers = [o[0].split() for o in outs]
    # Each caller got the stale value at once, or (starting after the refresh landed) the new one.
    assert all(a in (["old", "True"], ["new", "False"]) for a in answers), answers
    assert ["old", "True"] in answers
    assert _runs(log) == 1
    assert cache.wrap("swr", lambda: "unused", ttl_seconds=1, stale_ttl_seconds=120)["result"] == "new"


LONG_WORKER = """
import sys, time
from actioncache import Cache
url, log, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
cache = Cache(url, cleanup_probability=0.0)
def compute():
    with open(log, "a") as f:
        f.write("run\\n")
    time.sleep(seconds)
    return "done"
r = cache.wrap("long", compute, lock=True, lock_timeout_s=1.0)
print(r["result"])
"""


@pytest.mark.parametrize("backend", SHARED)
def test_a_computation_three_times_the_lease_runs_once(backend, tmp_path, src_env):
    url = _url(backend, tmp_path)
    log = tmp_path / "runs.log"
    first = subprocess.Popen([sys.executable, "-c", LONG_WORKER, url, str(log), "3.0"], env=src_env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while _runs(log) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _runs(log) == 1
    # Joining late, well after lock_timeout_s: without renewal the lease would have lapsed by now.
    time.sleep(1.5)
    others = [subprocess.Popen([sys.executable, "-c", LONG_WORKER, url, str(log), "3.0"], env=src_env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in [first, *others]:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "done"
    assert _runs(log) == 1


@pytest.mark.parametrize("backend", SHARED)
def test_a_killed_holder_frees_the_key_within_the_lease(backend, tmp_path, src_env):
    url = _url(backend, tmp_path)
    log = tmp_path / "runs.log"
    holder = subprocess.Popen([sys.executable, "-c", LONG_WORKER, url, str(log), "600"], env=src_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while _runs(log) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _runs(log) == 1
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    killed_at = time.monotonic()
    cache = Cache(url, cleanup_probability=0.0)
    r = cache.wrap("long", lambda: "after", lock=True, lock_timeout_s=1.0)
    assert r["result"] == "after" and _runs(log) == 1
    assert time.monotonic() - killed_at < 1.0 + 5.0  # the lease lapsed: no renewal from a dead holder
    store = open_store(url)
    try:
        assert store.acquire_lease("probe", 1.0) is not None
    finally:
        store.close()


def test_renew_lease_on_every_store_that_offers_it(store):
    renew = getattr(store, "renew_lease", None)
    if renew is None:  # object stores and Firestore: leases lapse after ttl_s (documented)
        # A ttl far longer than two calls take on a loaded machine: the second must find it held.
        token = store.acquire_lease("plain", 30.0)
        assert token is not None and store.acquire_lease("plain", 30.0) is None
        return
    token = store.acquire_lease("held", 1.0)
    assert token is not None
    assert renew("held", "not-the-token", 5.0) is False
    assert renew("held", token, 5.0) is True
    time.sleep(1.3)  # past the first ttl: the renewal keeps it
    assert store.acquire_lease("held", 1.0) is None
    store.release_lease("held", token)
    assert renew("held", token, 5.0) is False  # released: nothing to renew
    assert store.acquire_lease("held", 1.0) is not None


@pytest.mark.parametrize("backend", sorted({"redis", "postgres"} & SHAREABLE))
def test_waiters_are_told_when_the_lease_is_let_go(backend, tmp_path):
    """Redis (pub/sub) and PostgreSQL (LISTEN/NOTIFY) wake a waiter when the holder releases."""
    import threading

    store = BACKENDS[backend](tmp_path)
    other = open_store(store.url) if backend == "redis" else BACKENDS[backend](tmp_path)
    if backend == "postgres":
        other = open_store(f"{store.conninfo.split('?')[0]}?table={store.table}")
    token = store.acquire_lease("job", 60.0)
    assert token is not None
    woke: list[float] = []
    waiter = threading.Thread(target=lambda: (other.wait_lease("job", 30.0), woke.append(time.monotonic())))
    waiter.start()
    time.sleep(0.5)
    assert not woke, "the waiter returned while the lease was still held"
    released_at = time.monotonic()
    store.release_lease("job", token)
    waiter.join(timeout=30)
    assert woke and woke[0] - released_at < 25, "woken by the release, not by its 30 s timeout"
    other.wait_lease("job", 30.0)  # nothing held: returns at once
    store.close()
    other.close()
