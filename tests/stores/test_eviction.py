"""Size limits with eviction (max_size_bytes + lru/lfu/ttl) on the stores that enforce them."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from actioncache import Cache, CacheWarning
from actioncache.errors import StoreURLError
from actioncache.stores.base import Entry, open_store

LIMITED = ["memory", "sqlite", "libsql", "postgres", "duckdb"]
VALUE = b"v" * 1000


_POSTGRES_TABLES: list = []


@pytest.fixture(autouse=True)
def _drop_the_tables_a_test_made():
    """Each PostgreSQL table goes with its test, and its connections with it: kept to the end of
    the run, every test's pool stayed open and the server ran out of connections."""
    yield
    while _POSTGRES_TABLES:
        store = _POSTGRES_TABLES.pop()
        try:
            store.drop()
        finally:
            store.close()


def _open(kind: str, tmp_path, limit: int, policy: str):
    if kind == "memory":
        return open_store(f"memory://?max_size_bytes={limit}&eviction={policy}")
    if kind == "postgres":
        import uuid

        import services

        services.require_postgres()
        store = open_store(f"{services.POSTGRES_URL}?connect_timeout_s=2&table=ev_{uuid.uuid4().hex[:12]}&max_size_bytes={limit}"
                           f"&eviction={policy}")
        _POSTGRES_TABLES.append(store)
        return store
    if kind == "duckdb":
        return open_store(f"duckdb:///{tmp_path}/evict.duckdb?max_size_bytes={limit}&eviction={policy}")
    if kind == "libsql":
        import services

        services.require_module("libsql", "turso")
        return open_store(f"libsql+file:///{tmp_path}/evict.db?max_size_bytes={limit}&eviction={policy}")
    return open_store(f"sqlite:///{tmp_path}/evict.db", max_size_bytes=limit, eviction=policy)


def _put(store, key: str, expires_in: float | None = 3600.0) -> None:
    now = time.time()
    store.put(Entry(key, VALUE, {"_cache_action": "t"}, now, None if expires_in is None else now + expires_in))


@pytest.mark.parametrize("kind", LIMITED)
@pytest.mark.parametrize("policy", ["lru", "lfu", "ttl"])
def test_size_stays_under_the_limit(kind, policy, tmp_path):
    store = _open(kind, tmp_path, 20_000, policy)
    for i in range(200):
        _put(store, f"k{i:04d}")
        assert store.size_bytes() <= 20_000
    assert 10 <= store.count() < 20
    assert "k0199" in store.find(pattern="k*")  # the newest write is never the victim
    store.close()


@pytest.mark.parametrize("kind", LIMITED)
def test_lru_keeps_the_recently_read_keys(kind, tmp_path):
    store = _open(kind, tmp_path, 20_000, "lru")
    for i in range(15):
        _put(store, f"old{i:02d}")
    for key in ("old00", "old01", "old02"):  # the oldest writes, read recently
        assert store.get(key) is not None
    for i in range(10):
        _put(store, f"new{i:02d}")
    kept = set(store.find(pattern="*"))
    assert {"old00", "old01", "old02"} <= kept
    assert "old03" not in kept and "old04" not in kept
    store.close()


@pytest.mark.parametrize("kind", LIMITED)
def test_lfu_keeps_the_often_read_keys(kind, tmp_path):
    store = _open(kind, tmp_path, 20_000, "lfu")
    for i in range(15):
        _put(store, f"k{i:02d}")
    for _ in range(3):
        for key in ("k10", "k11"):
            store.get(key)
    store.get("k12")
    for i in range(10):
        _put(store, f"n{i:02d}")
    kept = set(store.find(pattern="*"))
    assert {"k10", "k11", "k12"} <= kept
    assert "k00" not in kept
    store.close()


@pytest.mark.parametrize("kind", LIMITED)
def test_ttl_removes_the_soonest_to_expire_first(kind, tmp_path):
    store = _open(kind, tmp_path, 12_000, "ttl")
    _put(store, "forever", expires_in=None)
    for i in range(14):
        _put(store, f"k{i:02d}", expires_in=1000.0 + i)  # k00 expires first
    _put(store, "late", expires_in=99_999.0)
    kept = set(store.find(pattern="*"))
    assert {"forever", "late"} <= kept and "k00" not in kept and "k13" in kept
    store.close()


def test_the_cache_takes_the_limit_in_its_constructor_and_url(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/c.db", max_size_bytes="30KB", eviction="lru", cleanup_probability=0.0)
    for i in range(100):
        cache.wrap("step", lambda i: "x" * 2000, {"i": i})
    assert cache.store.size_bytes() <= 30_000
    r = cache.wrap("step", lambda i: "fresh", {"i": 99})
    assert r["_cache_hit"] is True
    mem = Cache("memory://?max_size_bytes=10000", cleanup_probability=0.0)
    assert mem.store.eviction.policy == "lru"


@pytest.mark.parametrize("options, problem", [
    ({"eviction": "lru"}, "needs max_size_bytes"),
    ({"max_size_bytes": 1000, "eviction": "fifo"}, "eviction must be one of lru, lfu, ttl"),
    ({"max_size_bytes": -5}, "positive"),
    ({"max_size_bytes": "1.2.3"}, "not a size"),
    ({"max_size_bytes": "5 parsecs"}, "unknown unit"),
])
def test_bad_limits_are_refused_with_the_fix(options, problem, tmp_path):
    with pytest.raises(StoreURLError, match=problem):
        Cache(f"sqlite:///{tmp_path}/c.db", **options)


@pytest.mark.parametrize("url, options, named", [
    ("sqlite:///{d}/c.db?max_size_bytes=1MB", {"max_size_bytes": 2000}, ("max_size_bytes", "'1MB'", "2000")),
    ("sqlite:///{d}/c.db?max_size_bytes=10MB&max_size_bytes=1KB", {}, ("max_size_bytes", "'10MB'", "'1KB'")),
    ("memory://?max_size_bytes=1MB&eviction=lru", {"eviction": "lfu"}, ("eviction", "'lru'", "'lfu'")),
    ("memory://?max_size_bytes=1MB&eviction=ttl&eviction=lfu", {}, ("eviction", "'ttl'", "'lfu'")),
])
def test_a_limit_given_twice_with_two_values_is_refused_naming_both(url, options, named, tmp_path):
    option, first, second = named
    with pytest.raises(StoreURLError, match=f"{option} is given twice") as caught:
        Cache(url.format(d=tmp_path), cleanup_probability=0.0, **options)
    assert first in str(caught.value) and second in str(caught.value) and f"give {option} once" in str(caught.value)


def test_a_limit_given_twice_with_one_value_is_fine(tmp_path):
    same = Cache(f"sqlite:///{tmp_path}/c.db?max_size_bytes=1MB&eviction=LFU", max_size_bytes=1_000_000,
                 eviction="lfu", cleanup_probability=0.0)
    assert (same.store.eviction.max_size_bytes, same.store.eviction.policy) == (1_000_000, "lfu")
    twice = open_store("memory://?max_size_bytes=1000&max_size_bytes=1KB")
    assert twice.eviction.max_size_bytes == 1000


def test_stores_that_cannot_enforce_a_limit_say_so():
    with pytest.raises(StoreURLError, match="maxmemory-policy"):
        Cache("redis://127.0.0.1:6379/0?max_size_bytes=1000000")
    with pytest.raises(StoreURLError, match="does not enforce"):
        open_store("firestore://p/c", max_size_bytes=1000)
    with pytest.raises(ValueError, match="belongs to the store"):
        Cache(store=open_store("memory://"), max_size_bytes=1000)


def test_the_redis_refusal_recommends_a_volatile_policy_and_warns_against_allkeys():
    """Under allkeys-* Redis may evict the store's index keys (no TTL), and invalidation then misses
    entries: the refusal of a limit on Redis must not recommend it."""
    with pytest.raises(StoreURLError) as err:
        Cache("redis://127.0.0.1:6379/9?prefix=fix_volatile&max_size_bytes=1000000")
    text = str(err.value)
    assert "maxmemory-policy volatile-lru" in text and "Not allkeys-*" in text, text


def test_every_doc_that_names_a_redis_eviction_policy_recommends_volatile_not_allkeys():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    docs = [root / "README.md", root / "YAML_REFERENCE.md", root / "CLAUDE.md", *sorted((root / "docs").glob("*.md"))]
    for doc in docs:
        text = doc.read_text(encoding="utf-8") if doc.exists() else ""
        if "maxmemory-policy" not in text:
            continue
        assert "volatile-lru" in text, doc.name
        assert not re.search(r"maxmemory-policy`? `?allkeys|prefer `?allkeys|`allkeys-lru` \(", text), doc.name


def test_a_read_only_lru_file_still_hits(tmp_path):
    """Reads are batched, not written per hit: a read-only file with a size limit still serves."""
    url = f"sqlite:///{tmp_path}/ro.db?max_size_bytes=1000000&eviction=lru"
    cache = Cache(url, cleanup_probability=0.0)
    cache.wrap("a", lambda: {"v": 1})
    cache.close()
    (tmp_path / "ro.db").chmod(0o444)
    reader = Cache(url.replace("sqlite:///", "sqlite:///") , cleanup_probability=0.0)
    for _ in range(3):
        assert reader.wrap("a", lambda: {"v": 2})["result"] == {"v": 1}
    reader.close()


WRITER = """
import sys, time
from actioncache.stores.base import Entry, open_store
store = open_store(sys.argv[1])
for i in range(150):
    now = time.time()
    store.put(Entry(f"{sys.argv[2]}-{i}", b"w" * 1000, {}, now, now + 3600))
store.close()
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_size_stays_under_the_limit_with_four_writer_processes(kind, tmp_path, src_env):
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path}/shared.db?max_size_bytes=50000&eviction=lru"
        open_store(url).close()
    else:
        first = _open("postgres", tmp_path, 50_000, "lru")
        url = f"{first.conninfo.split('?')[0]}?table={first.table}&max_size_bytes=50000&eviction=lru"
        first.close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, f"p{n}"], env=src_env, stderr=subprocess.PIPE)
             for n in range(4)]
    store = open_store(url)
    while any(p.poll() is None for p in procs):
        assert store.size_bytes() <= 50_000
        time.sleep(0.02)
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read().decode()
    assert store.size_bytes() <= 50_000
    exact = sum(len(k) + 1000 + 2 for k in store.find(pattern="*"))  # key + value + "{}" metadata
    assert store.size_bytes() == exact
    store.close()


def test_a_file_made_before_size_limits_opens_and_takes_a_limit(tmp_path):
    """Files written by earlier versions lack the read-tracking columns; they are added on open."""
    import sqlite3

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE entries (key TEXT PRIMARY KEY, value BLOB NOT NULL, metadata TEXT NOT NULL, "
        "created_at REAL NOT NULL, expires_at REAL, action TEXT);"
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value REAL NOT NULL);"
        "CREATE TABLE leases (name TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL);")
    conn.execute("INSERT INTO entries VALUES ('old', x'6a7b7d', '{}', 1, NULL, NULL)")
    conn.commit()
    conn.close()
    store = open_store(f"sqlite:///{path}?max_size_bytes=5000")
    assert store.get("old").value == b"j{}"
    assert store.size_bytes() == len("old") + 3 + 2
    for i in range(20):
        _put(store, f"k{i}")
    assert store.size_bytes() <= 5000 and "k19" in store.find(pattern="*")
    store.close()


@pytest.mark.parametrize("kind", LIMITED)
def test_an_entry_larger_than_the_limit_is_refused_and_evicts_nothing(kind, tmp_path):
    store = _open(kind, tmp_path, 20_000, "lru")
    for i in range(15):
        _put(store, f"k{i:02d}")
    before = sorted(store.find(pattern="*"))
    _put(store, "big")  # fits: replaced below by a value too big for the whole store
    with pytest.raises(Exception, match="larger than the store's max_size_bytes"):
        now = time.time()
        store.put(Entry("big", b"y" * 50_000, {}, now, now + 3600))
    assert store.get("big") is None, "the older value under that key is not left behind"
    assert set(before) <= set(store.find(pattern="*")) or len(store.find(pattern="*")) >= 10
    store.close()


@pytest.mark.parametrize("kind", LIMITED)
@pytest.mark.parametrize("policy", ["lfu", "ttl"])
def test_the_written_entry_is_never_its_own_victim(kind, policy, tmp_path):
    store = _open(kind, tmp_path, 12_000, policy)
    for i in range(11):
        _put(store, f"k{i:02d}", expires_in=99_999.0)
        store.get(f"k{i:02d}")  # read: LFU would otherwise prefer the new, unread entry
    _put(store, "short", expires_in=10.0)  # soonest to expire and never read
    assert store.get("short") is not None
    assert store.size_bytes() <= 12_000
    store.close()


def test_the_cache_says_why_a_too_large_result_was_not_cached(tmp_path):
    cache = Cache(f"sqlite:///{tmp_path}/c.db", max_size_bytes=20_000, compress_threshold_bytes=None,
                  cleanup_probability=0.0)
    for i in range(10):
        cache.wrap("a", lambda i: "x" * 500, {"i": i})
    with pytest.warns(CacheWarning) as said:
        r = cache.wrap("big", lambda: "y" * 50_000)
        again = cache.wrap("big2", lambda: "z" * 50_000)
    assert r["success"] is True and r["result"] == "y" * 50_000 and again["result"] == "z" * 50_000
    assert "larger than the store's max_size_bytes" in r["_cache_error"] and "fails" not in r["_cache_error"]
    messages = [str(w.message) for w in said]
    assert len(messages) == 1, messages  # once per cache
    assert "is over the store's max_size_bytes=20000: returned uncached" in messages[0]
    assert "fails" not in messages[0] and "until it works" not in messages[0]
    stats = cache.stats()
    assert stats["entries"] == 10 and stats["errors"] == 0 and stats["uncacheable"] == 2


# Keys and metadata of several bytes a character: a limit counts their UTF-8 bytes, not characters.
SQL_LIMITED = [kind for kind in LIMITED if kind != "memory"]  # the memory store holds no text encoding
_WIDE_NOTE = "字" * 300  # 900 bytes


def _held_bytes(store) -> int:
    """The bytes the store holds (key + value + metadata, as UTF-8), measured from outside."""
    from actioncache._json import utf8_json

    held = 0
    for key in store.find(pattern="*"):
        entry = store.get(key)
        if entry is not None:
            held += len(key.encode("utf-8")) + len(entry.value) + len(utf8_json(dict(entry.metadata)))
    return held


def _put_wide(store, i: int) -> None:
    now = time.time()
    store.put(Entry(f"€€€€€€€€€€-{i:03d}", b"v" * 500, {"_cache_action": "t", "note": _WIDE_NOTE}, now, now + 3600))


@pytest.mark.parametrize("kind", SQL_LIMITED)
def test_multibyte_keys_and_metadata_are_counted_in_bytes(kind, tmp_path):
    store = _open(kind, tmp_path, 20_000, "lru")
    for i in range(40):
        _put_wide(store, i)
        assert _held_bytes(store) <= 20_000
    assert "€€€€€€€€€€-039" in store.find(pattern="*")
    store.close()


@pytest.mark.parametrize("kind", SQL_LIMITED)
def test_an_entry_larger_than_the_limit_in_bytes_but_not_in_characters_is_refused(kind, tmp_path):
    from actioncache.errors import StoreError

    store = _open(kind, tmp_path, 2_000, "lru")
    now = time.time()
    with pytest.raises(StoreError, match="larger than the store's max_size_bytes"):
        store.put(Entry("k", b"v", {"note": "字" * 700}, now, None))  # 700 characters, 2,100 bytes
    assert store.get("k") is None
    store.close()


def test_a_file_that_counted_characters_is_recounted_in_bytes_on_open(tmp_path):
    """A file whose byte total and triggers came from a version that counted characters (length()
    of TEXT) is corrected on open: its total is summed again in bytes and its triggers replaced."""
    import sqlite3

    path = tmp_path / "old.db"
    store = open_store(f"sqlite:///{path}?max_size_bytes=100000")
    for i in range(12):
        _put_wide(store, i)
    store.close()
    chars = "length({0}.key) + length({0}.value) + length({0}.metadata)"
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TRIGGER entries_bytes_insert; DROP TRIGGER entries_bytes_update; DROP TRIGGER entries_bytes_delete;"
        f"CREATE TRIGGER entries_bytes_insert AFTER INSERT ON entries BEGIN "
        f"UPDATE totals SET value = value + {chars.format('NEW')} WHERE name = 'bytes'; END;"
        f"CREATE TRIGGER entries_bytes_update AFTER UPDATE OF key, value, metadata ON entries BEGIN "
        f"UPDATE totals SET value = value + {chars.format('NEW')} - ({chars.format('OLD')}) WHERE name = 'bytes'; END;"
        f"CREATE TRIGGER entries_bytes_delete AFTER DELETE ON entries BEGIN "
        f"UPDATE totals SET value = value - ({chars.format('OLD')}) WHERE name = 'bytes'; END;"
        f"UPDATE totals SET value = (SELECT sum({chars.format('entries')}) FROM entries) WHERE name = 'bytes';")
    conn.commit()
    conn.close()
    # 12 entries of about 1,460 bytes (but 850 characters) each: counted in characters, eight more
    # entries of 1,000 bytes would seem to fit under the limit.
    store = open_store(f"sqlite:///{path}?max_size_bytes=20000")
    for i in range(12, 20):
        _put(store, f"ascii{i}")
        assert _held_bytes(store) <= 20_000
    store.close()
    conn = sqlite3.connect(path)
    total = conn.execute("SELECT value FROM totals WHERE name = 'bytes'").fetchone()[0]
    held = conn.execute("SELECT sum(length(CAST(key AS BLOB)) + length(value) + length(CAST(metadata AS BLOB))) "
                        "FROM entries").fetchone()[0]
    conn.close()
    assert total == held
