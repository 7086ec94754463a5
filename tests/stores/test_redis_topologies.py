"""Redis beyond one server, and what every Redis-like store guarantees on top of the conformance
suite: fenced leases (a holder paused past its lease cannot write), namespaces that never
overlap, the URL grammar of clusters and Sentinels, and a Redis Cluster losing a master while
callers keep getting correct results. Real servers throughout: the run's cluster, Sentinel and
valkey-server (scripts/services.d/), and a private cluster of the failover test's own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import services

from actioncache import Cache, open_store
from actioncache.errors import StoreURLError
from actioncache.stores.base import Entry

from .backends import BACKENDS, unique

pytest.importorskip("redis") if not services.in_ci() else __import__("redis")

REDIS_LIKE = ["redis", "redis-cluster", "redis-sentinel", "valkey"]


@pytest.fixture(params=REDIS_LIKE)
def redis_store(request, tmp_path):
    store = BACKENDS[request.param](tmp_path)
    yield store
    store.drop()
    store.close()


def fence(token: str) -> int:
    number, sep, rest = token.partition(":")
    assert sep and number.isdigit() and len(rest) >= 16, token
    return int(number)


def test_lease_tokens_carry_a_fencing_number_that_grows_across_releases_and_expiries(redis_store):
    first = redis_store.acquire_lease("lease:cache:k", 30)
    redis_store.release_lease("lease:cache:k", first)
    second = redis_store.acquire_lease("lease:cache:k", 0.2)
    time.sleep(0.4)  # expired, never released
    third = redis_store.acquire_lease("lease:cache:k", 30)
    assert fence(first) < fence(second) < fence(third)
    assert redis_store.acquire_lease("lease:cache:k", 30) is None


def test_put_fenced_writes_only_under_the_current_grant(redis_store):
    NOW = time.time()
    old = Entry("cache:k", b"old", {"_cache_action": "a"}, NOW, NOW + 60)
    new = Entry("cache:k", b"new", {"_cache_action": "a"}, NOW, NOW + 60)
    token = redis_store.acquire_lease("lease:cache:k", 30)
    assert redis_store.put_fenced(old, "lease:cache:k", token) is True
    assert redis_store.get("cache:k").value == b"old"
    redis_store.release_lease("lease:cache:k", token)
    assert redis_store.put_fenced(new, "lease:cache:k", token) is False, "released: no longer the grant"
    other = redis_store.acquire_lease("lease:cache:k", 30)
    assert redis_store.put_fenced(new, "lease:cache:k", token) is False, "another grant holds it"
    assert redis_store.put_fenced(new, "lease:cache:k", "9" + other) is False
    assert redis_store.get("cache:k").value == b"old"
    assert redis_store.find(metadata_filter={"_cache_action": "a"}) == ["cache:k"]


HOLDER = """
import sys, time
from actioncache import open_store
from actioncache.stores.base import Entry
store = open_store(sys.argv[1])
token = store.acquire_lease("lease:cache:fenced", 0.5)
print(token, flush=True)
time.sleep(0.3)  # computing: the test stops this process here, past the lease
now = time.time()
print(store.put_fenced(Entry("cache:fenced", b"stale", {}, now, now + 60), "lease:cache:fenced", token), flush=True)
"""


@pytest.mark.parametrize("backend", REDIS_LIKE)
def test_a_holder_paused_past_its_lease_cannot_overwrite_the_next_holders_value(backend, tmp_path, src_env):
    store = BACKENDS[backend](tmp_path)
    try:
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, store.url], env=src_env, stdout=subprocess.PIPE,
                                  text=True)
        try:
            first = holder.stdout.readline().strip()
            os.kill(holder.pid, signal.SIGSTOP)  # paused mid-computation, holding the lease
            time.sleep(0.8)  # ... past its 0.5 s lease
            second = store.acquire_lease("lease:cache:fenced", 30)
            assert second is not None and fence(second) > fence(first)
            now = time.time()
            assert store.put_fenced(Entry("cache:fenced", b"fresh", {}, now, now + 60), "lease:cache:fenced", second)
            os.kill(holder.pid, signal.SIGCONT)
            out, _ = holder.communicate(timeout=30)
        finally:
            if holder.poll() is None:
                os.kill(holder.pid, signal.SIGCONT)
                holder.kill()
        assert out.strip() == "False", "the paused holder's write was refused"
        assert store.get("cache:fenced").value == b"fresh"
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("backend", ["redis", "redis-cluster"])
def test_namespaces_never_overlap(backend, tmp_path):
    base = BACKENDS[backend](tmp_path)
    url = base.url.split("?")[0]
    base.close()
    name = unique("ns")
    NOW = time.time()
    stores = {p: open_store(f"{url}?prefix={p}") for p in (name, f"{name}:sub", f"{name}|1", f"{name}|x")}
    try:
        for prefix, store in stores.items():
            store.put(Entry("cache:k", prefix.encode(), {"_cache_action": "a"}, NOW, NOW + 60))
            store.add_counters({"stats:hits": 1})
        stores[name].drop()
        assert stores[name].get("cache:k") is None and stores[name].count() == 0
        for prefix, store in stores.items():
            if prefix != name:
                assert store.get("cache:k").value == prefix.encode(), prefix
                assert store.count() == 1 and store.counters("stats:") == {"stats:hits": 1}
    finally:
        for store in stores.values():
            store.drop()
            store.close()


def test_a_prefix_with_a_brace_is_refused():
    with pytest.raises(StoreURLError, match="braces"):
        open_store("redis://127.0.0.1:1/0?prefix=a}b")


@pytest.mark.parametrize("url, words", [
    ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001/1", "only database 0"),
    ("redis+cluster://", "at least one node"),
    ("redis+cluster://127.0.0.1:7000,nohostport", "host:port"),
    ("redis+sentinel://127.0.0.1:26379", "name the master"),
    ("redis+sentinel://127.0.0.1:26379/mymaster/x", "by number"),
    ("valkey+cluster://:secretpass@127.0.0.1:7000/2", "only database 0"),
])
def test_cluster_and_sentinel_urls_that_cannot_work_are_refused(url, words):
    with pytest.raises(StoreURLError, match=words) as err:
        open_store(url)
    assert "secretpass" not in str(err.value)


def test_valkey_scheme_talks_to_a_real_valkey_server(tmp_path):
    store = BACKENDS["valkey"](tmp_path)
    try:
        assert store.url.startswith("valkey://")
        info = store.client.info("server")
        assert "valkey_version" in info or info.get("server_name") == "valkey", info
    finally:
        store.drop()
        store.close()


# --- a master dies under load ------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def private_cluster():
    """A cluster of this test's own (the run's cluster is shared by other tests): started by the
    same script as the run's, in a run directory of its own; stopped by the same script."""
    run_dir = tempfile.mkdtemp(prefix="ac-cluster-")
    env = {**os.environ, "ACTIONCACHE_TEST_RUN_DIR": run_dir}
    script = REPO / "scripts" / "services.d" / "redis-cluster.sh"
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        services.require_program("redis-cli", "scripts/install.d/40-redis-postgres.sh")
    started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stderr
        published = dict(line.split("=", 1) for line in Path(run_dir, "services.env").read_text().splitlines())
        yield published, Path(run_dir)
    finally:
        subprocess.run(["bash", str(script), "stop"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(run_dir, ignore_errors=True)


def _master_pidfile(run_dir: Path, published: dict[str, str], slot_owner_port: int) -> Path:
    ports = published["ACTIONCACHE_TEST_REDIS_CLUSTER_PORTS"].split()
    return run_dir / f"redis-cluster-{ports.index(str(slot_owner_port)) + 1}.pid"


def test_callers_keep_correct_results_while_a_master_fails_over(private_cluster):
    published, run_dir = private_cluster
    cache = Cache(f"{published['ACTIONCACHE_TEST_REDIS_CLUSTER_URL']}?prefix=failover", cleanup_probability=0)
    calls: list[int] = []

    def work(n: int) -> dict[str, int]:
        calls.append(n)
        return {"n": n, "square": n * n}

    keys = range(200)
    for n in keys:
        assert cache.wrap("sq", work, {"n": n})["result"] == {"n": n, "square": n * n}
    hits_before = sum(cache.wrap("sq", work, {"n": n})["_cache_hit"] for n in keys)
    assert hits_before == len(keys)

    # Kill the master that serves the most buckets of this namespace (SIGKILL: no goodbye).
    client = cache.store.client
    owners: dict[int, int] = {}
    for bucket in range(64):
        node = client.get_node_from_key(f"{{failover|{bucket}}}")
        owners[node.port] = owners.get(node.port, 0) + 1
    victim = max(owners, key=owners.get)
    pidfile = _master_pidfile(run_dir, published, victim)
    os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)  # "pid start-time"

    wrong, raised, served_hits, rounds = [], [], 0, 0
    deadline = time.monotonic() + 60
    with pytest.warns(Warning):  # the cache says once that its store fails (and its breaker opens)
        while time.monotonic() < deadline:
            rounds += 1
            round_hits = 0
            for n in keys:
                try:
                    got = cache.wrap("sq", work, {"n": n})
                except Exception as exc:
                    raised.append(repr(exc))
                    continue
                if got.get("result") != {"n": n, "square": n * n}:
                    wrong.append(got)
                round_hits += bool(got.get("_cache_hit"))
            served_hits = round_hits
            if round_hits == len(keys) and rounds > 1:
                break  # the replica took over, and the entries written since are served again
            time.sleep(0.2)
    assert not raised, raised[:3]
    assert not wrong, wrong[:3]
    assert served_hits == len(keys), f"caching did not resume after the failover ({served_hits} hits of {len(keys)})"
    stats = cache.stats()
    assert stats["success"] is True and json.dumps(stats)
    cache.close()
