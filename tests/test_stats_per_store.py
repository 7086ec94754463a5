"""Counters belong to the store, not to the Cache object: every Cache over one store in a process
reports the same in-process counts, flushed or not, and a Cache dropped without close() (one made
per call) loses nothing."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from actioncache import Cache, cached


@pytest.fixture(params=["sqlite", "duckdb"])
def file_url(request, tmp_path):
    if request.param == "duckdb":
        pytest.importorskip("duckdb")
        return f"duckdb:///{tmp_path}/c.duckdb"
    return f"sqlite:///{tmp_path}/c.db"


def _work(url: str, x: int) -> dict:
    cache = Cache(url, stats_flush_s=3600, cleanup_probability=0.0)  # made per call, never closed
    return cache.wrap("double", lambda x: x * 2, {"x": x})


def test_a_cache_made_per_call_and_dropped_keeps_its_counts(file_url):
    results = [_work(file_url, 1) for _ in range(5)]
    assert [r["_cache_hit"] for r in results] == [False, True, True, True, True]
    gc.collect()
    report = Cache(file_url).stats()
    assert (report["hits"], report["misses"], report["stores"]) == (4, 1, 1)


def test_a_dropped_cache_in_a_process_that_exits_keeps_its_counts(file_url, src_env):
    script = ("import sys\nfrom actioncache import Cache\n"
              "def work():\n    c = Cache(sys.argv[1], stats_flush_s=3600)\n    return c.wrap('a', lambda: 1)['_cache_hit']\n"
              "print([work() for _ in range(3)])\n")
    out = subprocess.run([sys.executable, "-c", script, file_url], env=src_env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[False, True, True]", out.stderr
    report = Cache(file_url).stats()
    assert (report["hits"], report["misses"]) == (2, 1)


def test_every_cache_over_one_store_sees_the_same_counts_before_a_flush(tmp_path):
    url = f"sqlite:///{tmp_path}/shared.db"
    first = Cache(url, stats_flush_s=3600)
    second = Cache(url, stats_flush_s=3600)
    first.wrap("a", lambda: 1)
    first.wrap("a", lambda: 1)
    assert second.stats()["session"]["hits"] == 1 and second.stats()["session"]["misses"] == 1
    assert first.stats()["hits"] == second.stats()["hits"] == 1


def test_the_default_cache_and_cache_on_its_store_share_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIONCACHE_URL", f"sqlite:///{tmp_path}/default.db")

    @cached
    def square(x: int) -> int:
        return x * x

    assert [square(3), square(3), square(3)] == [9, 9, 9]
    report = Cache().stats()
    assert report["session"]["hits"] == 2 and report["session"]["misses"] == 1


def test_two_unnamed_memory_stores_keep_their_own_counts():
    first, second = Cache("memory://"), Cache("memory://")
    first.wrap("a", lambda: 1)
    first.wrap("a", lambda: 1)
    assert second.stats()["hits"] == 0 and first.stats()["hits"] == 1


def test_an_observer_hears_only_its_own_cache(tmp_path):
    url = f"sqlite:///{tmp_path}/obs.db"
    first, second = Cache(url), Cache(url)
    heard: list[str] = []
    first.add_observer(lambda event: heard.append(event.kind))
    second.wrap("a", lambda: 1)
    assert heard == []
    first.wrap("a", lambda: 1)
    assert "hits" in heard
