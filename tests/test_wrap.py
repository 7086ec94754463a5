"""Seed 000 acceptance criteria AC-1..AC-20 for Cache.wrap/get/invalidate/cleanup, on the SQLite store."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
import sqlite3
import time

import pytest

from actioncache import Cache, CacheWarning, Entry
from actioncache.cache import DEFAULT_TTL_SECONDS


class Clock:
    """A settable clock so expiry can be tested without sleeping."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Counter:
    def __init__(self, result=None):
        self.calls = []
        self.result = result

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return self.result if self.result is not None else {"echo": kwargs}


def parse_iso(text: str) -> dt.datetime:
    assert text.endswith("Z")
    return dt.datetime.fromisoformat(text[:-1] + "+00:00")


# AC-1, AC-3, AC-4, AC-5, AC-6, AC-20
def test_miss_runs_and_stores_then_hit_returns_cached_without_running(cache):
    fn = Counter()
    first = cache.wrap("extract", fn, {"file": "a.pdf"})
    assert first["success"] is True and first["_cache_hit"] is False
    assert first["result"] == {"echo": {"file": "a.pdf"}}
    assert "_cache_created_at" not in first
    second = cache.wrap("extract", fn, {"file": "a.pdf"})
    assert second["_cache_hit"] is True and second["result"] == first["result"]
    assert second["_cache_key"] == first["_cache_key"]
    parse_iso(second["_cache_created_at"])
    assert len(fn.calls) == 1


# AC-2: args strategy
def test_args_key_is_sha256_of_canonical_json(cache):
    args = {"b": [1, 2], "a": "ü"}
    r = cache.wrap("llm.call", Counter(), args)
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert r["_cache_key"] == "cache:llm.call:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert cache.wrap("llm.call", Counter(), {"a": "ü", "b": [1, 2]})["_cache_hit"] is True
    assert cache.wrap("llm.call", Counter(), {"a": "ü", "b": [2, 1]})["_cache_hit"] is False
    assert cache.wrap("other.action", Counter(), args)["_cache_hit"] is False


# AC-2: sha256 strategy
def test_sha256_strategy_hashes_the_named_argument_only(cache):
    fn = Counter()
    r1 = cache.wrap("summarize", fn, {"text": "hello", "verbose": True}, key_strategy="sha256", key_source="text")
    assert r1["_cache_key"] == "cache:summarize:" + hashlib.sha256(b"hello").hexdigest()
    r2 = cache.wrap("summarize", fn, {"text": "hello", "verbose": False}, key_strategy="sha256", key_source="text")
    assert r2["_cache_hit"] is True and len(fn.calls) == 1


def test_sha256_strategy_with_a_literal_value(cache):
    r = cache.wrap("x", Counter(), {}, key_strategy="sha256", key_source="some content")
    assert r["_cache_key"] == "cache:x:" + hashlib.sha256(b"some content").hexdigest()


# AC-2: custom strategy (explicit key)
def test_custom_key(cache):
    fn = Counter()
    r = cache.wrap("web.search", fn, {"q": "a"}, key_strategy="custom", key="search:abc")
    assert r["_cache_key"] == "cache:search:abc"
    assert cache.wrap("web.search", fn, {"q": "different"}, key="search:abc")["_cache_hit"] is True
    assert cache.get("search:abc")["found"] is True


def test_custom_without_key_is_a_clear_error(cache):
    with pytest.raises(ValueError, match="needs key="):
        cache.wrap("x", Counter(), {}, key_strategy="custom")


def test_unknown_strategy_is_a_clear_error(cache):
    with pytest.raises(ValueError, match="unknown key_strategy 'md5'.*args, sha256, custom, file_content"):
        cache.wrap("x", Counter(), {}, key_strategy="md5")


# AC-2: file_content strategy
def test_file_content_key_follows_content_not_path(cache, tmp_path):
    a = tmp_path / "a.pdf"
    a.write_bytes(b"%PDF one")
    fn = Counter()
    r1 = cache.wrap("extract", fn, {"file": str(a), "agent": "x"}, key_strategy="file_content", key_source="file")
    moved = tmp_path / "moved.pdf"
    a.rename(moved)
    r2 = cache.wrap("extract", fn, {"file": str(moved), "agent": "x"}, key_strategy="file_content", key_source="file")
    assert r2["_cache_hit"] is True and r2["_cache_key"] == r1["_cache_key"]
    moved.write_bytes(b"%PDF two")
    r3 = cache.wrap("extract", fn, {"file": str(moved), "agent": "x"}, key_strategy="file_content", key_source="file")
    assert r3["_cache_hit"] is False and r3["_cache_key"] != r1["_cache_key"]
    # other arguments still count
    r4 = cache.wrap("extract", fn, {"file": str(moved), "agent": "y"}, key_strategy="file_content", key_source="file")
    assert r4["_cache_hit"] is False
    assert len(fn.calls) == 3


def test_file_content_through_fsspec_url(cache):
    import fsspec

    with fsspec.open("memory://docs/a.txt", "wb") as f:
        f.write(b"in memory")
    fn = Counter()
    cache.wrap("read", fn, {"path": "memory://docs/a.txt"}, key_strategy="file_content", key_source="path")
    assert cache.wrap("read", fn, {"path": "memory://docs/a.txt"}, key_strategy="file_content",
                      key_source="path")["_cache_hit"] is True


# AC-18
def test_hash_failure_runs_uncached_with_the_error_reported(cache, tmp_path):
    fn = Counter()
    missing = str(tmp_path / "nope.pdf")
    r = cache.wrap("extract", fn, {"file": missing}, key_strategy="file_content", key_source="file")
    assert r["success"] is True and r["_cache_hit"] is False and r["_cache_key"] is None
    assert "no such file" in r["_cache_error"]
    cache.wrap("extract", fn, {"file": missing}, key_strategy="file_content", key_source="file")
    assert len(fn.calls) == 2 and cache.store.count() == 0
    assert cache.stats()["errors"] == 2


def test_arguments_that_cannot_be_keyed_run_uncached(cache):
    fn = Counter(result={"ok": 1})
    r = cache.wrap("x", fn, {"obj": object()})
    assert r["success"] and r["_cache_key"] is None and "cannot build a cache key" in r["_cache_error"]


# AC-5, AC-7
def test_expired_entry_is_a_miss(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_probability=0)
    fn = Counter()
    cache.wrap("a", fn, {"x": 1}, ttl_seconds=10)
    clock.now += 9
    assert cache.wrap("a", fn, {"x": 1})["_cache_hit"] is True
    clock.now += 2
    assert cache.wrap("a", fn, {"x": 1}, ttl_seconds=10)["_cache_hit"] is False
    assert len(fn.calls) == 2


def test_ttl_precedence_and_default(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_probability=0)

    def expires(r):
        return cache.get(r["_cache_key"], include_metadata=True)["metadata"]

    def span(meta):
        return (parse_iso(meta["_cache_expires_at"]) - parse_iso(meta["_cache_created_at"])).total_seconds()

    assert span(expires(cache.wrap("a", Counter(), {"i": 1}))) == DEFAULT_TTL_SECONDS == 60 * 86400
    assert span(expires(cache.wrap("a", Counter(), {"i": 2}, ttl_days=2))) == 2 * 86400
    assert span(expires(cache.wrap("a", Counter(), {"i": 3}, ttl_days=2, ttl_hours=3))) == 3 * 3600
    assert span(expires(cache.wrap("a", Counter(), {"i": 4}, ttl_days=2, ttl_hours=3, ttl_seconds=7))) == 7


@pytest.mark.parametrize("bad", [0, -1, "10", True])
def test_bad_ttl_is_a_clear_error(cache, bad):
    with pytest.raises(ValueError, match="ttl_seconds"):
        cache.wrap("a", Counter(), {}, ttl_seconds=bad)


# AC-8
def test_skip_cache_runs_fresh_and_refreshes_the_entry(cache):
    results = iter([{"v": 1}, {"v": 2}])
    fn = lambda: next(results)  # noqa: E731
    cache.wrap("a", fn, {})
    r = cache.wrap("a", fn, {}, skip_cache=True)
    assert r["_cache_hit"] is False and r["result"] == {"v": 2}
    assert cache.wrap("a", lambda: {"v": 3}, {})["result"] == {"v": 2}


# AC-9
def test_cache_enabled_false_neither_reads_nor_writes(cache):
    fn = Counter()
    cache.wrap("a", fn, {"x": 1})
    r = cache.wrap("a", fn, {"x": 1}, cache_enabled=False)
    assert r["_cache_hit"] is False and len(fn.calls) == 2
    cache.wrap("b", fn, {"x": 1}, cache_enabled=False)
    assert cache.store.count() == 1


# AC-10
def test_invalidate_by_key_pattern_and_metadata(cache):
    for i in range(3):
        cache.wrap("extract", Counter(), {"i": i})
    cache.wrap("llm.call", Counter(), {"i": 0})
    one = cache.wrap("extract", Counter(), {"i": 0})["_cache_key"]
    r = cache.invalidate(key=one)
    assert r == {"success": True, "deleted_count": 1, "deleted_keys": [one]}
    r = cache.invalidate(pattern="cache:extract:*")
    assert r["deleted_count"] == 2 and all(k.startswith("cache:extract:") for k in r["deleted_keys"])
    r = cache.invalidate(metadata_filter={"_cache_action": "llm.call"})
    assert r["deleted_count"] == 1
    assert cache.store.count() == 0


def test_invalidate_without_criteria_says_what_to_give(cache):
    r = cache.invalidate()
    assert r["success"] is False and "key=" in r["error"] and "pattern=" in r["error"]


def test_invalidate_pattern_treats_escaped_metacharacters_literally(cache):
    cache.wrap("a*b", Counter(), {})
    cache.wrap("aXb", Counter(), {})
    r = cache.invalidate(pattern=cache.pattern_for_action("a*b"))
    assert r["deleted_count"] == 1 and r["deleted_keys"][0].startswith("cache:a*b:")


# AC-11
def test_get_reports_found_value_expired_and_metadata(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_probability=0)
    key = cache.wrap("a", lambda: {"v": 1}, {}, ttl_seconds=5)["_cache_key"]
    got = cache.get(key)
    assert got == {"success": True, "found": True, "value": {"v": 1}, "expired": False, "key": key}
    clock.now += 6
    got = cache.get(key, include_metadata=True)
    assert got["expired"] is True and got["value"] == {"v": 1} and got["metadata"]["_cache_key"] == key
    assert cache.get("cache:missing") == {"success": True, "found": False, "value": None, "expired": False}


# AC-14, AC-15, AC-16
def _seed_expired(cache: Cache, n: int, now: float) -> None:
    for i in range(n):
        cache.store.put(Entry(f"cache:old:{i}", b"j1", {"_cache_type": "action_result"}, now - 100, now - 10))


def test_cleanup_after_a_miss_deletes_at_most_limit_expired_entries(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_probability=1.0, cleanup_limit=5)
    _seed_expired(cache, 12, clock.now)
    cache.wrap("fresh", Counter(), {"i": 1}, ttl_seconds=3600)
    assert cache.store.count() == 12 - 5 + 1
    cache.wrap("fresh", Counter(), {"i": 1})  # a hit does not clean up
    assert cache.store.count() == 8
    cache.wrap("fresh", Counter(), {"i": 2}, cleanup_limit=100)
    assert sorted(cache.store.find(pattern="*")) == sorted(cache.store.find(pattern="cache:fresh:*"))


def test_cleanup_runs_with_the_configured_probability(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_limit=1, rng=random.Random(7))
    _seed_expired(cache, 2000, clock.now)
    for i in range(1000):
        cache.wrap("m", lambda i: {"ok": i}, {"i": i})
    deleted = 2000 - len(cache.store.find(pattern="cache:old:*"))
    # Binomial(1000, 0.05): mean 50, sd 6.9; the seeded run must sit within ±4 sd.
    assert 22 <= deleted <= 78


def test_cleanup_probability_is_validated(cache):
    with pytest.raises(ValueError, match="between 0.0 and 1.0"):
        cache.wrap("a", Counter(), {}, cleanup_probability=1.5)


def test_explicit_cleanup_deletes_only_expired(sqlite_url):
    clock = Clock()
    cache = Cache(sqlite_url, clock=clock, cleanup_probability=0)
    _seed_expired(cache, 2500, clock.now)
    cache.wrap("live", Counter(), {})
    assert cache.cleanup(limit=10) == {"success": True, "deleted_count": 10}
    assert cache.cleanup() == {"success": True, "deleted_count": 2490}
    assert cache.store.count() == 1


# AC-19
def test_entry_metadata_fields(cache):
    r = cache.wrap("extract", lambda file: {"pages": 3}, {"file": "x"}, metadata={"tenant": "t1"})
    meta = cache.get(r["_cache_key"], include_metadata=True)["metadata"]
    assert meta["_cache_type"] == "action_result"
    assert meta["_cache_key"] == r["_cache_key"]
    assert meta["_cache_action"] == "extract"
    assert parse_iso(meta["_cache_expires_at"]) > parse_iso(meta["_cache_created_at"])
    assert isinstance(meta["_cache_duration_ms"], float) and meta["_cache_duration_ms"] >= 0
    assert meta["tenant"] == "t1"
    assert cache.invalidate(metadata_filter={"tenant": "t1"})["deleted_count"] == 1


# failures are never cached
def test_exception_is_returned_as_failure_and_not_cached(cache):
    def boom():
        raise RuntimeError("upstream 500")

    r = cache.wrap("a", boom, {})
    assert r["success"] is False and "RuntimeError: upstream 500" in r["error"] and r["_cache_hit"] is False
    assert cache.store.count() == 0


def test_success_false_result_is_returned_and_not_cached(cache):
    fn = Counter(result={"success": False, "error": "rate limited"})
    r = cache.wrap("a", fn, {})
    assert r["success"] is False and r["error"] == "rate limited" and r["result"]["success"] is False
    cache.wrap("a", fn, {})
    assert len(fn.calls) == 2 and cache.store.count() == 0


# values
def test_unencodable_value_is_returned_fresh_with_a_warning(cache):
    class Thing:
        pass

    thing = Thing()
    with pytest.warns(CacheWarning, match="not a JSON value"):
        r = cache.wrap("a", lambda: thing, {})
    assert r["result"] is thing and "not cached" in r["_cache_error"]
    assert cache.store.count() == 0


def test_tuples_bytes_datetimes_round_trip(cache):
    value = {"t": (1, "a"), "b": b"\x00\xff", "d": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
             "day": dt.date(2026, 1, 2), "s": {1, 2}, "k": {1: "int key"}}
    cache.wrap("a", lambda: value, {})
    assert cache.wrap("a", lambda: None, {})["result"] == value


# AC-17: the store fails, the action does not
class RaisingStore:
    """A stand-in for a store whose server is down: every call raises (no real peer can fail on cue)."""

    url = "broken://"

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            from actioncache import StoreError

            raise StoreError("connection refused")

        return fail


def test_failing_store_never_fails_the_action():
    cache = Cache(store=RaisingStore(), cleanup_probability=1.0)
    fn = Counter()
    r = cache.wrap("a", fn, {"x": 1})
    assert r["success"] is True and r["result"] == {"echo": {"x": 1}} and "connection refused" in r["_cache_error"]
    assert cache.wrap("a", fn, {"x": 1})["success"] is True
    assert len(fn.calls) == 2
    stats = cache.stats()
    assert stats["errors"] >= 4 and "connection refused" in stats["error"]
    assert cache.get("k")["success"] is False
    assert cache.invalidate(key="k")["success"] is False
    assert cache.cleanup()["success"] is False


def test_garbage_database_file_runs_fresh(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not a database" * 500)
    cache = Cache(f"sqlite:///{path}")
    r = cache.wrap("a", lambda: {"v": 1}, {})
    assert r["success"] is True and r["result"] == {"v": 1}
    assert "not a healthy SQLite database" in r["_cache_error"]
    assert path.read_bytes().startswith(b"this is not a database")  # nothing was overwritten


def test_locked_database_runs_fresh(tmp_path):
    path = tmp_path / "locked.db"
    cache = Cache(f"sqlite:///{path}?timeout=0.1", cleanup_probability=0)
    cache.wrap("warm", lambda: 1, {})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        r = cache.wrap("a", lambda: {"v": 1}, {})
        assert r["success"] is True and r["result"] == {"v": 1}
        assert "locked" in r["_cache_error"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert cache.wrap("a", lambda: {"v": 2}, {})["_cache_hit"] is False
    assert cache.wrap("a", lambda: {"v": 3}, {})["result"] == {"v": 2}


def test_corrupt_entry_is_a_miss_and_is_removed(cache):
    key = cache.wrap("a", lambda: {"v": 1}, {})["_cache_key"]
    old = cache.store.get(key)
    cache.store.put(Entry(key, b"j{not json", dict(old.metadata), old.created_at, old.expires_at))
    r = cache.wrap("a", lambda: {"v": 2}, {})
    assert r["_cache_hit"] is False and r["result"] == {"v": 2} and "corrupt" in r["_cache_error"]
    assert cache.wrap("a", lambda: {"v": 3}, {})["result"] == {"v": 2}
    assert cache.stats()["corrupt"] == 1


# stats
def test_stats_add_up_across_cache_objects_and_count_time_saved(sqlite_url):
    import time

    a = Cache(sqlite_url, cleanup_probability=0)
    b = Cache(sqlite_url, cleanup_probability=0)

    def slow():
        time.sleep(0.05)
        return {"done": True}

    a.wrap("slow", slow, {})
    for _ in range(3):
        b.wrap("slow", slow, {})
    a.flush_stats()
    b.flush_stats()
    stats = Cache(sqlite_url).stats()
    assert stats["hits"] == 3 and stats["misses"] == 1 and stats["stores"] == 1
    assert stats["time_saved_s"] >= 0.15
    assert stats["by_action"]["slow"]["hits"] == 3
    assert stats["entries"] == 1 and stats["hit_rate"] == 0.75


def test_a_hit_writes_nothing(sqlite_url, tmp_path):
    cache = Cache(sqlite_url, cleanup_probability=0, stats_flush_s=3600)
    cache.wrap("a", lambda: 1, {})
    cache.flush_stats()
    statements: list[str] = []
    conn = cache.store._conn()
    conn.set_trace_callback(statements.append)
    for _ in range(5):
        assert cache.wrap("a", lambda: 2, {})["_cache_hit"] is True
    conn.set_trace_callback(None)
    assert statements and all(s.lstrip().upper().startswith("SELECT") for s in statements), statements


def test_invalidate_and_get_by_a_bare_key_reach_the_wrap_entry_first(cache):
    """wrap(key="user:42") stores under cache:user:42; another entry stored under the bare key
    (an LTM value, say) must not be the one invalidate(key="user:42") deletes instead."""
    from actioncache.stores.base import Entry

    cache.store.put(Entry("user:42", cache.codec.encode({"ltm": "profile"}), {}, time.time(), None))
    assert cache.wrap("profile", lambda: "v1", {}, key="user:42")["result"] == "v1"
    assert cache.get("user:42")["value"] == "v1"
    assert cache.invalidate(key="user:42")["deleted_keys"] == ["cache:user:42"]
    assert cache.wrap("profile", lambda: "v2", {}, key="user:42")["result"] == "v2"
    assert cache.store.get("user:42") is not None  # the other entry is untouched
