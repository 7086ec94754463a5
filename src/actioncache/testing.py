"""The store conformance suite, importable: ``from actioncache.testing import StoreConformance``.

Every backend actioncache ships passes it (tests/stores/test_conformance.py subclasses it for each),
and a store written outside the project can run the same tests, as fsspec ships its abstract
tests: subclass :class:`StoreConformance` and give it a ``store`` fixture. It needs pytest and
hypothesis (``pip install pytest hypothesis``); nothing in actioncache imports this module.
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from .cache import Cache
from .stores.base import Entry, escape_glob, metadata_matches

__all__ = ["StoreConformance", "entry"]

NOW = 1_900_000_000.0


def entry(key: str, value: bytes = b"jv", *, expires_in: float | None = 3600.0, **meta: Any) -> Entry:
    """An entry written at a fixed time (NOW), expiring ``expires_in`` seconds later (None: never)."""
    return Entry(key, value, dict(meta), NOW, None if expires_in is None else NOW + expires_in)


def fence(token: str) -> int:
    number, _, rest = token.partition(":")
    assert number.isdigit() and rest, f"a lease token is '<fencing number>:<hex>', not {token!r}"
    return int(number)


GLOB_KEYS = ["cache:a*b:1", "cache:a?b:2", "cache:[x]:3", "cache:a\\b:4", "cache:!neg", "cache:]", "cache:%_",
             "cache:a%b", "cache:a_b", "cache:日本:5", "cache:ü", "cache:u", "plain", "\\*"]


def _cache_with_planted(store: Any, kind: str, plant: Any) -> tuple[Cache, str]:
    cache = Cache(store=store, cleanup_probability=0.0)
    cache.wrap("other", lambda: "kept")  # a healthy neighbour that must survive everything below
    key = cache.key_for("act", {})
    if not plant(store, key, kind):
        pytest.skip(f"this backend's schema cannot hold {kind} garbage")
    return cache, key


# Metadata matching is exact for any string a JSON object can hold.
ODD_FIELDS = [('a"b', 1), ("a\\b", "x"), ("*", "v"), ("", "v"), ("f", "a\x00b"), ("big", 2**63 - 1),
              ("small", -(2**63)), ("huge", 2**70), ("dotted.name", "v"), ("$x", 1), ("[0]", 2), ("ü\x00", "\x00")]


class StoreConformance:
    """Every test a :class:`~actioncache.stores.base.CacheStore` must pass. Subclass it in a test
    module and give it a ``store`` fixture (a fresh, empty store per test; close it after):

    .. code-block:: python

        import pytest
        from actioncache.testing import StoreConformance

        class TestMyStore(StoreConformance):
            @pytest.fixture
            def store(self, tmp_path):
                store = MyStore(tmp_path / "db")
                yield store
                store.close()

    Override :meth:`plant` to also run the planted-data tests (what a second writer or a damaged
    file can leave under a key): reads miss and remove it, writes replace it, ``cleanup()`` and
    ``invalidate()`` complete, never an exception for the caller.
    """

    def plant(self, store: Any, key: str, kind: str) -> bool:
        """Write garbage of ``kind`` ("times", "metadata", "bookkeeping") for ``key`` directly into
        the store's own storage; False when the store's schema cannot hold that garbage (skipped)."""
        return False

    def test_get_missing_is_none(self, store: Any) -> None:
        assert store.get("cache:nothing:here") is None

    def test_put_then_get_round_trips_everything(self, store: Any) -> None:
        e = entry("cache:a:1", b"\x00\xffbinary", _cache_action="a", n=3, ok=True, nested={"x": [1, 2]})
        store.put(e)
        got = store.get("cache:a:1")
        assert got is not None
        assert got.key == e.key and got.value == e.value
        assert dict(got.metadata) == dict(e.metadata)
        assert got.created_at == pytest.approx(NOW) and got.expires_at == pytest.approx(NOW + 3600)

    def test_put_is_an_upsert(self, store: Any) -> None:
        store.put(entry("k", b"one", v=1))
        store.put(entry("k", b"two", v=2, expires_in=None))
        got = store.get("k")
        assert got.value == b"two" and got.metadata["v"] == 2 and got.expires_at is None
        assert store.count() == 1

    def test_delete_and_delete_many(self, store: Any) -> None:
        for i in range(5):
            store.put(entry(f"k{i}"))
        assert store.delete("k0") is True
        assert store.delete("k0") is False
        assert store.delete_many(["k1", "k2", "nope"]) == 2
        assert sorted(store.find(pattern="k*")) == ["k3", "k4"]

    def test_find_by_glob(self, store: Any) -> None:
        keys = ["cache:extract:1", "cache:extract:2", "cache:extractor:3", "cache:llm.call:4"]
        for k in keys:
            store.put(entry(k))
        assert sorted(store.find(pattern="cache:extract:*")) == ["cache:extract:1", "cache:extract:2"]
        assert sorted(store.find(pattern="cache:extract*")) == keys[:3]
        assert store.find(pattern="cache:llm?call:4") == ["cache:llm.call:4"]
        assert sorted(store.find(pattern="*")) == sorted(keys)
        assert len(store.find(pattern="cache:*", limit=2)) == 2

    def test_glob_metacharacters_in_keys_are_escapable(self, store: Any) -> None:
        hostile = ["cache:a*b:1", "cache:a?b:2", "cache:a[b]:3", "cache:a%b_:4", "cache:aXb:5"]
        for k in hostile:
            store.put(entry(k))
        assert store.find(pattern=escape_glob("cache:a*b:") + "*") == ["cache:a*b:1"]
        assert store.find(pattern=escape_glob("cache:a?b:") + "*") == ["cache:a?b:2"]
        assert store.find(pattern=escape_glob("cache:a[b]:") + "*") == ["cache:a[b]:3"]
        # SQL wildcards are just characters
        assert store.find(pattern=escape_glob("cache:a%b_:4")) == ["cache:a%b_:4"]

    def test_find_by_metadata_equality(self, store: Any) -> None:
        store.put(entry("k1", _cache_action="extract", _cache_type="action_result", n=1, flag=True))
        store.put(entry("k2", _cache_action="extract", _cache_type="function_result", n=2, flag=False))
        store.put(entry("k3", _cache_action="llm.call", _cache_type="action_result", n=1, flag=True))
        assert sorted(store.find(metadata_filter={"_cache_action": "extract"})) == ["k1", "k2"]
        assert sorted(store.find(metadata_filter={"_cache_type": "action_result", "n": 1})) == ["k1", "k3"]
        assert store.find(metadata_filter={"flag": False}) == ["k2"]
        assert store.find(metadata_filter={"n": 3}) == []
        assert store.find(metadata_filter={"missing": "x"}) == []
        # both given: both must hold
        assert store.find(pattern="k1*", metadata_filter={"_cache_action": "extract"}) == ["k1"]

    def test_metadata_filter_distinguishes_bool_from_int(self, store: Any) -> None:
        store.put(entry("k1", v=1))
        store.put(entry("k2", v=True))
        assert store.find(metadata_filter={"v": 1}) == ["k1"]
        assert store.find(metadata_filter={"v": True}) == ["k2"]

    @pytest.mark.parametrize("stored, wanted", [(2**60, float(2**60)), (float(2**60), 2**60), (2**60 + 1, float(2**60)),
                                                (10**20, 1e20), (2**53 + 1, float(2**53)), (3, 3.0), (1.5, 1.5)])
    def test_metadata_filter_compares_numbers_as_metadata_matches_does(self, store: Any, stored: Any, wanted: Any) -> None:
        """An int and a float match when they are equal numbers, exactly: float(2**60) finds 2**60,
        never 2**60 + 1 (the reference is stores.base.metadata_matches)."""
        store.put(entry("k", n=stored))
        store.put(entry("other", n="x"))
        assert store.find(metadata_filter={"n": wanted}) == (["k"] if metadata_matches({"n": stored}, {"n": wanted}) else [])

    def test_delete_expired_respects_limit_and_time(self, store: Any) -> None:
        for i in range(7):
            store.put(Entry(f"old{i}", b"jx", {}, NOW - 100, NOW - 50 + i))
        store.put(entry("live"))
        store.put(entry("forever", expires_in=None))
        assert store.delete_expired(NOW, limit=3) == 3
        assert store.delete_expired(NOW, limit=None) == 4
        assert store.delete_expired(NOW, limit=None) == 0
        assert sorted(store.find(pattern="*")) == ["forever", "live"]

    def test_delete_expired_takes_oldest_first(self, store: Any) -> None:
        store.put(Entry("older", b"j1", {}, NOW, NOW - 20))
        store.put(Entry("newer", b"j1", {}, NOW, NOW - 10))
        assert store.delete_expired(NOW, limit=1) == 1
        assert store.get("newer") is not None and store.get("older") is None

    def test_upsert_moves_expiry(self, store: Any) -> None:
        store.put(Entry("k", b"j1", {}, NOW, NOW - 10))
        store.put(Entry("k", b"j2", {}, NOW, NOW + 1000))
        assert store.delete_expired(NOW, None) == 0
        assert store.get("k").value == b"j2"

    def test_count_and_size(self, store: Any) -> None:
        store.put(entry("a", b"x" * 100))
        store.put(entry("b", b"y" * 50))
        assert store.count() == 2
        assert store.size_bytes() >= 150

    def test_counters_accumulate(self, store: Any) -> None:
        store.add_counters({"stats:hits": 2, "stats:misses": 1, "other": 5})
        store.add_counters({"stats:hits": 3, "stats:time_saved_ms": 1.5})
        got = store.counters("stats:")
        assert got == {"stats:hits": 5, "stats:misses": 1, "stats:time_saved_ms": 1.5}

    def test_lease_is_exclusive_until_released_or_expired(self, store: Any) -> None:
        token = store.acquire_lease("lease:x", 30)
        assert token
        assert store.acquire_lease("lease:x", 30) is None
        store.release_lease("lease:x", "not-the-token")
        assert store.acquire_lease("lease:x", 30) is None
        store.release_lease("lease:x", token)
        short = store.acquire_lease("lease:x", 0.2)
        assert short
        time.sleep(0.4)
        assert store.acquire_lease("lease:x", 30) is not None

    def test_lease_tokens_carry_a_fencing_number_that_grows_with_every_grant(self, store: Any) -> None:
        first = store.acquire_lease("lease:cache:f", 30)
        store.release_lease("lease:cache:f", first)
        second = store.acquire_lease("lease:cache:f", 0.2)
        time.sleep(0.4)  # expired, not released
        third = store.acquire_lease("lease:cache:f", 30)
        assert fence(first) < fence(second) < fence(third)

    def test_put_fenced_writes_only_under_the_current_unexpired_grant(self, store: Any) -> None:
        token = store.acquire_lease("lease:cache:g", 30)
        assert store.put_fenced(entry("cache:g", b"held"), "lease:cache:g", token) is True
        assert store.get("cache:g").value == b"held"
        assert store.put_fenced(entry("cache:g", b"forged"), "lease:cache:g", "1:" + "0" * 32) is False
        store.release_lease("lease:cache:g", token)
        assert store.put_fenced(entry("cache:g", b"released"), "lease:cache:g", token) is False
        short = store.acquire_lease("lease:cache:g", 0.2)
        time.sleep(0.4)  # lapsed, nobody took it yet: the grant is no longer current
        assert store.put_fenced(entry("cache:g", b"lapsed"), "lease:cache:g", short) is False
        newer = store.acquire_lease("lease:cache:g", 30)
        assert store.put_fenced(entry("cache:g", b"stale holder"), "lease:cache:g", short) is False
        assert store.put_fenced(entry("cache:g", b"newer"), "lease:cache:g", newer) is True
        assert store.get("cache:g").value == b"newer"
        assert store.put_fenced(entry("cache:never", b"x"), "lease:cache:never", newer) is False
        assert store.get("cache:never") is None

    def test_large_value_10mb(self, store: Any) -> None:
        blob = os.urandom(10 * 1024 * 1024)
        store.put(entry("big", blob))
        assert store.get("big").value == blob

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(key=st.text(min_size=1, max_size=200).filter(lambda s: "\x00" not in s), value=st.binary(max_size=256))
    def test_any_key_round_trips(self, store: Any, key: Any, value: Any) -> None:
        store.put(entry(key, value, note=key))
        got = store.get(key)
        assert got is not None and got.value == value and got.metadata["note"] == key
        assert key in store.find(pattern=escape_glob(key))
        assert store.delete(key)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(pattern=st.text(alphabet="*?[]!\\%_ab:ü日-^", max_size=8))
    @example(pattern="cache:?")  # one character that is two UTF-8 bytes
    @example(pattern="cache:[!u]")
    @example(pattern="cache:日?:[0-9]")
    @example(pattern="cache:a\\b:*")  # a backslash is literal in a glob
    @example(pattern="cache:a%b")  # so are SQL wildcards
    @example(pattern="cache:a_b")
    @example(pattern="cache:[%]*")
    @example(pattern="[]]*")
    def test_find_agrees_with_fnmatch_over_hostile_keys(self, store: Any, pattern: Any) -> None:
        """Whatever a backend's native matching (LIKE, GLOB, Redis MATCH), find means fnmatchcase."""
        if store.count() == 0:
            for key in GLOB_KEYS:
                store.put(entry(key))
        assert sorted(store.find(pattern=pattern)) == sorted(k for k in GLOB_KEYS if fnmatch.fnmatchcase(k, pattern))
        for key in GLOB_KEYS:
            assert store.find(pattern=escape_glob(key)) == [key]

    def test_unicode_and_hostile_keys(self, store: Any) -> None:
        keys = ["cache:ünïcødé:日本語", "cache:'; DROP TABLE entries; --", 'cache:"quoted"', "cache:a/b/c", "cache:..",
                "cache:emoji:🙂", "cache:" + "x" * 1000, "__name__", "cache:back\\slash"]
        for k in keys:
            store.put(entry(k, k.encode()))
        for k in keys:
            assert store.get(k).value == k.encode()
        assert sorted(store.find(pattern="*")) == sorted(keys)

    def test_concurrent_writers_threads(self, store: Any) -> None:
        errors: list[BaseException] = []

        def writer(n: int) -> None:
            try:
                for i in range(40):
                    store.put(entry(f"shared:{i % 10}", f"w{n}-{i}".encode(), writer=n, _cache_action=f"act{n}"))
                    store.put(entry(f"own:{n}:{i}", b"j1"))
            except BaseException as exc:  # noqa: BLE001 - any failure in a writer thread fails the test
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert len(store.find(pattern="own:*")) == 160
        for i in range(10):
            got = store.get(f"shared:{i}")
            assert got.value.decode().startswith(f"w{got.metadata['writer']}-")
        # A backend that keeps an index beside its entries must have updated both together.
        owner = {f"shared:{i}": store.get(f"shared:{i}").metadata["writer"] for i in range(10)}
        for n in range(4):
            expected = sorted(k for k, w in owner.items() if w == n)
            assert sorted(store.find(metadata_filter={"_cache_action": f"act{n}"})) == expected
            assert sorted(store.find(metadata_filter={"writer": n})) == expected

    def test_reader_never_sees_a_torn_entry(self, store: Any) -> None:
        """Values and metadata written together are always read together."""
        stop = threading.Event()
        bad: list[str] = []
        size = 64 * 1024

        def writer() -> None:
            i = 0
            while not stop.is_set():
                fill = bytes([i % 251]) * size
                store.put(entry("torn", fill, fill=i % 251))
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            deadline = time.monotonic() + 1.5
            reads = 0
            while time.monotonic() < deadline:
                got = store.get("torn")
                if got is None:
                    continue
                reads += 1
                expected = bytes([got.metadata["fill"]]) * size
                if got.value != expected:
                    bad.append("value and metadata disagree")
                    break
        finally:
            stop.set()
            t.join()
        assert reads > 0 and not bad

    def test_cache_over_store_end_to_end(self, store: Any) -> None:
        cache = Cache(store=store, cleanup_probability=0.0)
        calls: list[int] = []

        def work(x: int) -> dict[str, Any]:
            calls.append(x)
            return {"x": x, "s": "ü"}

        first = cache.wrap("work", work, {"x": 1})
        second = cache.wrap("work", work, {"x": 1})
        assert first["_cache_hit"] is False and second["_cache_hit"] is True
        assert second["result"] == {"x": 1, "s": "ü"} and calls == [1]
        assert cache.invalidate(metadata_filter={"_cache_action": "work"})["deleted_count"] == 1
        stats = cache.stats()
        assert stats["hits"] == 1 and stats["misses"] == 1 and stats["stores"] == 1

    def test_planted_garbage_value_misses_is_removed_and_replaced(self, store: Any) -> None:
        cache = Cache(store=store, cleanup_probability=0.0)
        key = cache.key_for("act", {})
        store.put(Entry(key, b"\x00not a codec format", {"_cache_action": "act"}, NOW, NOW + 3600))
        got = cache.get(key)
        assert got["success"] is True and got["found"] is False and "corrupt" in got["removed"]
        store.put(Entry(key, b"j[[[", {"_cache_action": "act"}, NOW, NOW + 3600))
        first = cache.wrap("act", lambda: {"fresh": 1})
        assert first["result"] == {"fresh": 1} and "corrupt cache entry removed" in first["_cache_error"]
        assert cache.wrap("act", lambda: {"fresh": 2})["result"] == {"fresh": 1}  # the write replaced it

    @pytest.mark.parametrize("kind", ["times", "metadata", "bookkeeping"])
    def test_planted_records_never_fail_a_call(self, store: Any, kind: Any) -> None:
        cache, key = _cache_with_planted(store, kind, self.plant)
        first = cache.wrap("act", lambda: {"fresh": 1})
        # garbage times or metadata: a miss; garbage bookkeeping beside a healthy entry: that entry
        assert first["success"] is True and first["result"] == (1 if kind == "bookkeeping" else {"fresh": 1})
        replaced = cache.wrap("act", lambda: {"fresh": 2}, skip_cache=True)  # a write over the planted record
        assert replaced["result"] == {"fresh": 2} and "_cache_error" not in replaced
        assert cache.wrap("act", lambda: {"fresh": 3})["result"] == {"fresh": 2}
        assert cache.wrap("other", lambda: "new")["result"] == "kept"
        assert cache.cleanup()["success"] is True
        assert cache.stats()["success"] is True

    @pytest.mark.parametrize("kind", ["times", "metadata", "bookkeeping"])
    def test_planted_records_are_removed_by_get_and_invalidate(self, store: Any, kind: Any) -> None:
        cache, key = _cache_with_planted(store, kind, self.plant)
        got = cache.get(key)
        assert got["success"] is True and (got["found"] is False or kind == "bookkeeping")
        cache2, key = _cache_with_planted(store, kind, self.plant)
        assert cache2.invalidate(metadata_filter={"team": "nobody"})["success"] is True  # a non-action field
        assert cache2.invalidate(pattern="cache:act:*")["success"] is True
        gone = cache2.invalidate(key=key)
        assert gone["success"] is True
        assert cache2.wrap("act", lambda: 3)["result"] == 3
        assert cache2.wrap("other", lambda: "new")["result"] == "kept"
        assert cache2.cleanup()["success"] is True

    @pytest.mark.parametrize("name, value", ODD_FIELDS, ids=repr)
    def test_metadata_filter_is_exact_for_odd_names_and_values(self, store: Any, name: Any, value: Any) -> None:
        from actioncache.errors import StoreError

        try:
            store.put(entry("k1", **{name: value}))
        except StoreError as exc:  # PostgreSQL text cannot hold NUL: refused with a clear error, never mangled
            assert "NUL" in str(exc)
            assert store.find(metadata_filter={name: value}) == []
            return
        other: dict[str, Any] = {name: "other"}
        store.put(entry("k2", **other))
        store.put(entry("k3", other=value))
        assert store.find(metadata_filter={name: value}) == ["k1"]
        result = Cache(store=store, cleanup_probability=0.0).invalidate(metadata_filter={name: value})
        assert result == {"success": True, "deleted_count": 1, "deleted_keys": ["k1"]}
        assert store.get("k1") is None and store.get("k2") is not None

    def test_a_key_holding_nul_is_never_served_for_another_key(self, store: Any) -> None:
        """A store that cannot hold NUL in a key must refuse it, never cut the key short."""
        cache = Cache(store=store, cleanup_probability=0.0)
        a = cache.wrap("x", lambda: "for a", key="a")
        nul = cache.wrap("x", lambda: "for a-nul-b", key="a\x00b")
        assert a["result"] == "for a" and nul["result"] == "for a-nul-b"
        assert cache.wrap("x", lambda: "again", key="a")["result"] == "for a"
        assert cache.wrap("x", lambda: "again", key="a\x00b")["result"] in ("for a-nul-b", "again")
        found = store.find(pattern="cache:a*")
        assert "cache:a" in found and set(found) <= {"cache:a", "cache:a\x00b"}
        assert store.get("cache:a").value == b'j"for a"'
        held = store.get("cache:a\x00b")
        assert held is None or held.value == b'j"for a-nul-b"'
        deleted = cache.invalidate(pattern="cache:a*")
        assert sorted(deleted["deleted_keys"]) == sorted(found)
        assert store.get("cache:a") is None and store.get("cache:a\x00b") is None
