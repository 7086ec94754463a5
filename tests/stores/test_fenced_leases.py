"""Fenced leases through the public API: a caller paused (SIGSTOP, every thread of its process,
its lease heartbeat too) past its lease never overwrites the value the next holder stored; it gets
its own value back, uncached, and ``stats()["lease_lost"]`` says so (issue 27, item 1).

Real SQLite, Redis and PostgreSQL; the holder is a real second process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from actioncache import Cache

from .backends import BACKENDS

HOLDER = """
import json, sys
from actioncache import Cache

cache = Cache(sys.argv[1])

def compute(x):
    print("computing", flush=True)
    sys.stdin.readline()  # the test stops this process here (SIGSTOP), past its lease
    return "older"

out = cache.wrap("fenced.compute", compute, {"x": 1}, lock=True, lock_timeout_s=1.0, ttl_seconds=600)
print(json.dumps({"data": out["result"], "lease_lost": cache.stats().get("lease_lost", 0)}), flush=True)
cache.close()
"""


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_caller_paused_past_its_lease_returns_its_value_and_the_newer_value_stays(backend, tmp_path, src_env):
    store = BACKENDS[backend](tmp_path)
    url = store.url
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, url], env=src_env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    cache = Cache(url)
    try:
        assert holder.stdout.readline().strip() == "computing"  # it holds the lease and computes
        os.kill(holder.pid, signal.SIGSTOP)  # paused: its heartbeat stops renewing the lease

        # The second caller waits for the lease, takes it once it lapses, computes and stores.
        second = cache.wrap("fenced.compute", lambda x: "newer", {"x": 1}, lock=True, lock_timeout_s=1.0, ttl_seconds=600)
        assert second["result"] == "newer" and second["_cache_hit"] is False

        os.kill(holder.pid, signal.SIGCONT)
        out, _ = holder.communicate("go\n", timeout=60)
        said = json.loads(out.strip().splitlines()[-1])
        assert said == {"data": "older", "lease_lost": 1}, "its own value back, uncached, and counted"

        third = cache.wrap("fenced.compute", lambda x: "recomputed", {"x": 1}, lock=True, lock_timeout_s=1.0)
        assert third["result"] == "newer" and third["_cache_hit"] is True, "the newer value stays"
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait()
        cache.close()
        drop = getattr(store, "drop", None)
        if drop is not None:
            drop()
        store.close()
