"""Counts stay exact at the edges of a process's life: hits made in exit handlers, a forked child
(what the parent had not flushed is the parent's), planted durations; observers see a read-only
view of a hit without its key; odd arguments (lone surrogates, subclasses) key correctly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from actioncache import Cache


def test_hits_made_in_an_exit_handler_are_counted(tmp_path, src_env):
    url = f"sqlite:///{tmp_path / 'c.db'}"
    script = f"""
import atexit
from actioncache import Cache
c = Cache({url!r}, stats_flush_s=0.05)
@c.cached
def f(x):
    return x
f(1)
def at_exit():
    for _ in range(5):
        f(1)
    c.stats()
    for _ in range(100):
        f(1)
    c.stats()
atexit.register(at_exit)
"""
    subprocess.run([sys.executable, "-c", script], env=src_env, check=True, timeout=60)
    assert Cache(url).stats()["hits"] == 105


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_a_forked_child_does_not_count_its_parents_unflushed_hits(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path / 'c.db'}", stats_flush_s=3600)

    @cache.cached
    def f(x):
        return x

    f(1)
    for _ in range(77):
        f(1)  # tallied, not flushed yet
    pid = os.fork()
    if pid == 0:  # the child: 50 hits of its own, flushed
        try:
            for _ in range(50):
                f(1)
            cache.stats()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert cache.stats()["hits"] == 77 + 50


def test_a_planted_duration_saves_no_time(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path / 'c.db'}")
    key = cache.wrap("a", lambda: 1, {})["_cache_key"]
    entry = cache.store.get(key)
    for duration in (float("nan"), -1e12, 1e308):
        meta = dict(entry.metadata, _cache_duration_ms=duration)
        cache.store.put(type(entry)(key, entry.value, meta, entry.created_at, entry.expires_at))
        assert cache.wrap("a", lambda: 2, {})["result"] == 1
    stats = cache.stats()
    assert stats["hits"] == 3 and stats["time_saved_s"] == 0.0 and stats["session"]["time_saved_s"] == 0.0


def test_an_observer_sees_a_read_only_hit_without_its_key():
    cache = Cache("memory://")
    seen = []
    cache.add_observer(lambda event: seen.append(event) if event.kind == "hits" else None)
    cache.wrap("a", lambda: 1, {})
    cache.wrap("a", lambda: 1, {})
    (event,) = seen
    assert "_cache_key" not in event.metadata and "_cache_duration_ms" in event.metadata
    with pytest.raises(TypeError):
        event.metadata["_cache_duration_ms"] = 1e9  # type: ignore[index]


def test_odd_string_arguments_key_instead_of_crashing():
    cache = Cache("memory://")
    runs = []

    class Label(str):
        pass

    @cache.cached
    def f(x):
        runs.append(x)
        return type(x).__name__

    assert f("a\ud800") == "str" and f(["a\ud800"]) == "list" and f("a\ud800") == "str"
    assert f(Label("1")) == "Label" and f("1") == "str" and f(Label("1")) == "Label"
    assert len(runs) == 4  # the second surrogate call and the last Label call were hits

